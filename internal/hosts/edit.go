package hosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/token"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// maxFileBytes bounds a host config read; ~/.claude.json keeps histories
// and can grow to many megabytes, nothing legitimate is near this.
const maxFileBytes = 64 << 20

// Action says what a [Change] does to the file.
type Action string

const (
	Added     Action = "added"     // the entry was not there
	Updated   Action = "updated"   // the entry ran another command; [Change.Previous] says which
	Unchanged Action = "unchanged" // the entry is already what it should be
	Removed   Action = "removed"   // uninstall took the entry out
	Absent    Action = "absent"    // uninstall found no entry
)

// Change is a planned edit of one host's config file. Nothing is written
// until [Change.Apply].
type Change struct {
	Host   Host
	Path   string
	Action Action
	// Before is the file as read, nil when it does not exist; After is
	// what it becomes (equal to Before when nothing changes).
	Before, After []byte
	// Previous is the command line of the entry this change replaces or
	// removes.
	Previous []string
	// Backup is where Apply saved the previous file, if it saved one.
	Backup string
}

// Changed reports whether applying c writes anything.
func (c *Change) Changed() bool {
	return c.Action == Added || c.Action == Updated || c.Action == Removed
}

// Diff is a unified diff from the file as it is to the file as c leaves
// it, empty when c changes nothing. Values that look like credentials
// (keys named token, secret, apiKey, authorization...; bearer tokens;
// passwords in URLs) are masked on every line it shows.
func (c *Change) Diff() string {
	if !c.Changed() {
		return ""
	}
	from := c.Path
	if c.Before == nil {
		from = "/dev/null"
	}
	return unifiedDiff(from, c.Path, c.Before, c.After)
}

// Install plans adding the entry that runs `bin serve` to h's config at
// path (a missing file is planned with a minimal document), or updating an
// entry named mcpgate that runs something else.
func Install(h Host, path, bin string) (*Change, error) {
	before, err := readFile(path)
	if err != nil {
		return nil, err
	}
	data := before
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte(h.empty) // a missing file, or one someone created empty
	}
	doc, err := decode(h, path, data)
	if err != nil {
		return nil, err
	}
	entry, found, err := lookupEntry(h, path, doc)
	if err != nil {
		return nil, err
	}
	want := []string{bin, "serve"}
	c := &Change{Host: h, Path: path, Before: before, After: before, Action: Unchanged}
	if found {
		c.Previous = h.argv(entry)
		if slices.Equal(c.Previous, want) {
			return c, nil
		}
		c.Action = Updated
	} else {
		c.Action = Added
	}
	after, err := editorFor(h).set(data, h, h.entry(bin))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	after = sameLineEnds(data, after)
	if err := verify(h, path, data, after, want); err != nil {
		return nil, err
	}
	c.After = after
	return c, nil
}

// Uninstall plans removing the mcpgate entry from h's config at path.
// When the entry was the only one under the host's key, the key goes too,
// so the file is again what it was before [Install] added them.
func Uninstall(h Host, path string) (*Change, error) {
	before, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c := &Change{Host: h, Path: path, Before: before, After: before, Action: Absent}
	if len(bytes.TrimSpace(before)) == 0 {
		return c, nil
	}
	doc, err := decode(h, path, before)
	if err != nil {
		return nil, err
	}
	entry, found, err := lookupEntry(h, path, doc)
	if err != nil || !found {
		return c, err
	}
	c.Previous = h.argv(entry)
	after, err := editorFor(h).remove(before, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := verify(h, path, before, after, nil); err != nil {
		return nil, err
	}
	c.Action, c.After = Removed, after
	return c, nil
}

// Entry reads the command line of the mcpgate entry in h's config at
// path; found is false when the file or the entry does not exist.
func Entry(h Host, path string) (argv []string, found bool, err error) {
	data, err := readFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil, false, err
	}
	doc, err := decode(h, path, data)
	if err != nil {
		return nil, false, err
	}
	entry, found, err := lookupEntry(h, path, doc)
	if err != nil || !found {
		return nil, false, err
	}
	return h.argv(entry), true, nil
}

// sameLineEnds gives the lines an edit added the file's line ends: CRLF
// when every line of the file ends so (a file edited on Windows).
func sameLineEnds(file, edited []byte) []byte {
	crlf := bytes.Count(file, []byte("\r\n"))
	if crlf == 0 || crlf != bytes.Count(file, []byte("\n")) {
		return edited
	}
	var out bytes.Buffer
	for i, c := range edited {
		if c == '\n' && (i == 0 || edited[i-1] != '\r') {
			out.WriteByte('\r')
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

// readFile returns the file's content, nil when it does not exist.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err // *PathError names the file and the reason
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if buf.Len() > maxFileBytes {
		return nil, fmt.Errorf("reading %s: larger than %d MiB", path, maxFileBytes>>20)
	}
	return append([]byte{}, buf.Bytes()...), nil
}

// editor changes the mcpgate entry of one format's text, touching nothing
// else.
type editor interface {
	set(data []byte, h Host, entry []field) ([]byte, error)
	remove(data []byte, h Host) ([]byte, error)
}

func editorFor(h Host) editor {
	switch h.Format {
	case TOML:
		return tomlEditor{}
	case YAML:
		return yamlEditor{}
	}
	return jsonEditor{}
}

// ParseError is a host config that does not parse: the file, the line
// and column, and what is wrong there.
type ParseError struct {
	Path         string
	Format       Format
	Line, Column int
	Reason       string
}

func (e *ParseError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where += fmt.Sprintf(" line %d", e.Line)
		if e.Column > 0 {
			where += fmt.Sprintf(", column %d", e.Column)
		}
	}
	return fmt.Sprintf("%s: not valid %s (%s); fix the file and try again, nothing was written", where, e.Format, e.Reason)
}

var hujsonPos = lazyregexp.New(`^hujson: line (\d+), column (\d+): `)

// decode parses data in h's format into plain values, for reading the
// entry and for checking an edit.
func decode(h Host, path string, data []byte) (map[string]any, error) {
	doc := map[string]any{}
	perr := &ParseError{Path: path, Format: h.Format}
	switch h.Format {
	case TOML:
		if err := toml.Unmarshal(data, &doc); err != nil {
			if de, ok := errors.AsType[*toml.DecodeError](err); ok {
				perr.Line, perr.Column = de.Position()
				perr.Reason = strings.TrimPrefix(de.Error(), "toml: ")
			} else {
				perr.Reason = "it does not parse"
			}
			return nil, perr
		}
	case YAML:
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			perr.Reason = "it does not parse"
			if te, ok := errors.AsType[interface {
				error
				GetToken() *token.Token
				GetMessage() string
			}](err); ok {
				if tok := te.GetToken(); tok != nil && tok.Position != nil {
					perr.Line, perr.Column = tok.Position.Line, tok.Position.Column
				}
				perr.Reason = te.GetMessage()
			}
			return nil, perr
		}
		switch v := v.(type) {
		case nil:
		case map[string]any:
			doc = v
		default:
			perr.Reason = "the top level is not a mapping"
			return nil, perr
		}
	default:
		v, err := hujson.Parse(bytes.Clone(data)) // Standardize writes over what Parse read
		if err != nil {
			msg := err.Error()
			if m := hujsonPos().FindStringSubmatch(msg); m != nil {
				perr.Line, _ = strconv.Atoi(m[1])
				perr.Column, _ = strconv.Atoi(m[2])
				msg = msg[len(m[0]):]
			}
			perr.Reason = msg
			return nil, perr
		}
		v.Standardize()
		var top any
		if err := json.Unmarshal(v.Pack(), &top); err != nil {
			perr.Reason = "it does not parse"
			return nil, perr
		}
		m, ok := top.(map[string]any)
		if !ok {
			perr.Reason = "the top level is not an object"
			return nil, perr
		}
		doc = m
	}
	return doc, nil
}

// lookupEntry finds the mcpgate entry in a decoded document.
func lookupEntry(h Host, path string, doc map[string]any) (map[string]any, bool, error) {
	container, ok := doc[h.Key]
	if !ok || container == nil {
		return nil, false, nil
	}
	if h.List {
		list, ok := container.([]any)
		if !ok {
			return nil, false, fmt.Errorf("%s: %s is not a list; fix the file and try again", path, h.Key)
		}
		for _, item := range list {
			if m, ok := item.(map[string]any); ok && m["name"] == EntryName {
				return m, true, nil
			}
		}
		return nil, false, nil
	}
	servers, ok := container.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("%s: %s is not an object; fix the file and try again", path, h.Key)
	}
	entry, ok := servers[EntryName]
	if !ok {
		return nil, false, nil
	}
	m, _ := entry.(map[string]any)
	return m, true, nil
}

// withoutEntry removes the mcpgate entry from doc, and the host's key when
// nothing else is under it.
func withoutEntry(h Host, doc map[string]any) {
	switch c := doc[h.Key].(type) {
	case nil:
		delete(doc, h.Key) // `KEY:` with nothing under it is no servers
	case map[string]any:
		delete(c, EntryName)
		if len(c) == 0 {
			delete(doc, h.Key)
		}
	case []any:
		c = slices.DeleteFunc(c, func(item any) bool {
			m, ok := item.(map[string]any)
			return ok && m["name"] == EntryName
		})
		if len(c) == 0 {
			delete(doc, h.Key)
		} else {
			doc[h.Key] = c
		}
	}
}

// verify parses an edit in its format and checks that it changed nothing
// but the mcpgate entry, and that the entry runs want (or, want nil, is
// gone). A textual edit that the format reads otherwise than meant never
// reaches the disk.
func verify(h Host, path string, before, after []byte, want []string) error {
	docBefore, err := decode(h, path, before)
	if err != nil {
		return err
	}
	docAfter, err := decode(h, path, after)
	if err != nil {
		return fmt.Errorf("%s: mcpgate cannot edit this file safely (%w); add the entry by hand", path, err)
	}
	entry, found, err := lookupEntry(h, path, docAfter)
	if err != nil {
		return err
	}
	switch {
	case want == nil && found, want != nil && (!found || !slices.Equal(h.argv(entry), want)):
		return fmt.Errorf("%s: mcpgate cannot edit this file safely (the mcpgate entry did not come out as meant); edit it by hand", path)
	}
	withoutEntry(h, docBefore)
	withoutEntry(h, docAfter)
	if !reflect.DeepEqual(docBefore, docAfter) {
		return fmt.Errorf("%s: mcpgate cannot edit this file safely (the edit would change more than the mcpgate entry); edit it by hand", path)
	}
	return nil
}
