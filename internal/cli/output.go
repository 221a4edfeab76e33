package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// table writes aligned columns to w. A tabwriter hands its output on a
// cell and a run of padding at a time, so straight to a terminal or pipe
// a list of a few hundred tools was thousands of write system calls
// (most of `mcpgate list`'s time after reading the catalogs); the table
// gathers them and writes them at its Flush.
type table struct {
	*tabwriter.Writer
	out *bufio.Writer
}

func newTable(w io.Writer) *table {
	out := bufio.NewWriter(w)
	return &table{Writer: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0), out: out}
}

// Flush aligns what was written and writes it out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.out.Flush()
}

// sanitize makes text from a remote server safe to print on a terminal:
// every control character except newline and tab is removed (ESC and CSI
// would let a server move the cursor, rewrite earlier lines or set the
// window title), as are the bidirectional overrides that make text display
// in another order than it reads. Invalid UTF-8 becomes U+FFFD.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unsafeRune(r) {
			return r
		}
		return -1
	}, s)
}

// unsafeRune reports C0 and C1 control characters, DEL, and the format
// characters (bidi controls, zero-width ones); see [mcpgate.Unprintable].
func unsafeRune(r rune) bool { return mcpgate.Unprintable(r) }

// firstLine is the first non-empty line of remote text, sanitized, cut to
// max runes, for one-line listings.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(sanitize(s))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	s = strings.ReplaceAll(s, "\t", " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

// writeJSON prints v as indented JSON. Strings keep their exact value, but
// the characters sanitize removes are written as \u escapes, so JSON
// printed on a terminal cannot drive it either.
// writeResultJSON prints a result of a remote server (CallToolResult,
// GetPromptResult, ReadResourceResult) as the server sent it, without the
// protocol's envelope: resultType (a printed result is always complete)
// and the server's identity in _meta, which 2026-07-28 servers put in
// every result. So the output is the same whatever version was spoken.
func writeResultJSON(w io.Writer, res any) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding JSON output: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return writeJSON(w, res)
	}
	delete(fields, "resultType")
	if raw, ok := fields["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(raw, &meta) == nil {
			delete(meta, "io.modelcontextprotocol/serverInfo")
			if len(meta) == 0 {
				delete(fields, "_meta")
			} else if b, err := json.Marshal(meta); err == nil {
				fields["_meta"] = b
			}
		}
	}
	return writeJSON(w, fields)
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON output: %w", err)
	}
	var out strings.Builder
	for _, r := range buf.String() {
		// encoding/json already escapes C0; the rest can only occur inside
		// strings, where an escape means the same character.
		if r != '\n' && unsafeRune(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// writeText prints remote text sanitized, ending in a newline.
func writeText(w io.Writer, s string) {
	s = sanitize(s)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(w, s)
}

// writeContent prints one piece of MCP content for a person: text as it
// is, anything else described in one line.
func writeContent(w io.Writer, c mcp.Content) {
	switch c := c.(type) {
	case *mcp.TextContent:
		writeText(w, c.Text)
	case *mcp.ImageContent:
		fmt.Fprintf(w, "[image %s, %d bytes]\n", sanitize(orUnknown(c.MIMEType)), len(c.Data))
	case *mcp.AudioContent:
		fmt.Fprintf(w, "[audio %s, %d bytes]\n", sanitize(orUnknown(c.MIMEType)), len(c.Data))
	case *mcp.ResourceLink:
		var details []string
		if c.MIMEType != "" {
			details = append(details, c.MIMEType)
		}
		if c.Size != nil {
			details = append(details, fmt.Sprintf("%d bytes", *c.Size))
		}
		name := c.Title
		if name == "" {
			name = c.Name
		}
		line := fmt.Sprintf("[resource link: %s <%s>", name, c.URI)
		if len(details) > 0 {
			line += " (" + strings.Join(details, ", ") + ")"
		}
		fmt.Fprintln(w, firstLine(line, 400)+"]")
		if c.Description != "" {
			fmt.Fprintf(w, "  %s\n", firstLine(c.Description, 200))
		}
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			fmt.Fprintln(w, "[embedded resource without contents]")
			return
		}
		writeResourceContents(w, c.Resource, true)
	default:
		fmt.Fprintf(w, "[%s content]\n", contentType(c))
	}
}

// writeResourceContents prints a resource's text, or describes its blob.
// With header, a line naming the URI comes first.
func writeResourceContents(w io.Writer, rc *mcp.ResourceContents, header bool) {
	mime := orUnknown(rc.MIMEType)
	if rc.Text == "" && rc.Blob != nil {
		fmt.Fprintf(w, "[resource %s: %s, %d bytes]\n", firstLine(rc.URI, 300), sanitize(mime), len(rc.Blob))
		return
	}
	if header {
		fmt.Fprintf(w, "[resource %s (%s)]\n", firstLine(rc.URI, 300), sanitize(mime))
	}
	writeText(w, rc.Text)
}

func contentType(c mcp.Content) string {
	b, err := c.MarshalJSON()
	if err != nil {
		return "unknown"
	}
	var t struct{ Type string }
	if json.Unmarshal(b, &t) != nil || t.Type == "" {
		return "unknown"
	}
	return firstLine(t.Type, 40)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// errorInfo is the attributed, sanitized form of err for JSON output, the
// same shape status uses.
func errorInfo(err error) *manager.ErrorInfo {
	if err == nil {
		return nil
	}
	info := &manager.ErrorInfo{Category: mcpgate.CategoryOf(err), Message: sanitize(err.Error())}
	if e, ok := errors.AsType[*mcpgate.Error](err); ok {
		info.HTTPStatus = e.HTTPStatus
		info.Code = sanitize(e.Code)
	}
	return info
}

// describeError is one line for a person: the message, then the HTTP status
// and provider code when the message does not already say them.
func describeError(e *manager.ErrorInfo) string {
	s := firstLine(e.Message, 300)
	var extra []string
	if e.HTTPStatus != 0 && !strings.Contains(s, fmt.Sprint(e.HTTPStatus)) {
		extra = append(extra, fmt.Sprintf("HTTP %d", e.HTTPStatus))
	}
	if e.Code != "" && !strings.Contains(s, e.Code) {
		extra = append(extra, "code "+firstLine(e.Code, 60))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// namedError makes sure the error of a command about one server names
// it: the manager's messages say what failed ("connecting: connection
// refused"), not for which server, when a person ran one command for one.
// The error's category, and so the exit code, are kept.
func namedError(id string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.HasPrefix(msg, id+":") || strings.HasPrefix(msg, id+" ") || strings.Contains(msg, `"`+id+`"`) {
		return err
	}
	return &serverError{id: id, err: err}
}

type serverError struct {
	id  string
	err error
}

func (e *serverError) Error() string { return e.id + ": " + e.err.Error() }
func (e *serverError) Unwrap() error { return e.err }
