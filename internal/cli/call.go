package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// maxArgsBytes bounds tool arguments read from stdin.
const maxArgsBytes = 16 << 20

type callOptions struct {
	ID, Tool string
	// ArgsSource is the JSON argument as given: a JSON object, "-" for
	// stdin, or empty for none.
	ArgsSource string
	JSON       bool
	Timeout    time.Duration
	Elicit     *enumFlag // empty: ask on a terminal, else decline
}

func newCallCmd(app *App) *cobra.Command {
	opts := &callOptions{Elicit: newEnumFlag("", elicitAsk, elicitAcceptDefaults, elicitDecline)}
	cmd := &cobra.Command{
		Use:   "call NAME TOOL [JSON|-]",
		Short: "Call a tool with a JSON object of arguments",
		Long: strings.TrimSpace(`
Call TOOL of server NAME. The arguments are a JSON object, given as one
argument, or - to read it from standard input; without them the tool gets {}.

Text the tool returns is printed as it is; images, audio and embedded
binary resources are described in one line. A result marked as an error is
printed on stderr and the exit code is 1. With --json, the MCP
CallToolResult is printed instead.

A server may ask for input while the tool runs (elicitation). On a terminal
mcpgate asks you (--elicit ask); otherwise it declines, unless
--elicit accept-defaults says to answer with the form's defaults. An explicit
--elicit ask reads the answers from stdin even when it is not a terminal.`),
		Example: examples(`
  mcpgate call docs search '{"query":"streamable http"}'
  echo '{"query":"oauth"}' | mcpgate call docs search -
  mcpgate call docs signup --elicit accept-defaults`),
		Args: argsBetween(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.Tool = args[0], args[1]
			if len(args) == 3 {
				opts.ArgsSource = args[2]
			}
			return runCall(cmd.Context(), app, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print the MCP CallToolResult JSON")
	f.DurationVar(&opts.Timeout, "timeout", 0, "give up after this long (default: the server's timeout, 60s unless configured)")
	f.Var(opts.Elicit, "elicit", "answer the server's questions: ask (default on a terminal), accept-defaults, or decline (default otherwise)")
	return cmd
}

func runCall(ctx context.Context, app *App, opts *callOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	if opts.Timeout < 0 {
		return usageErrorf("--timeout must not be negative")
	}
	mode := opts.Elicit.value
	if mode == "" {
		mode = elicitNoTerminal
		if app.IO.InTTY && opts.ArgsSource != "-" {
			mode = elicitAsk
		}
	}
	if mode == elicitAsk && opts.ArgsSource == "-" {
		return usageErrorf("--elicit ask reads answers from stdin, which carries the arguments; use --elicit accept-defaults or decline")
	}
	args, err := callArgs(opts.ArgsSource, app.IO.In)
	if err != nil {
		return err
	}

	var in *lineReader
	if mode == elicitAsk {
		in = newLineReader(app.IO.In)
		app.onClose(in.close)
	}
	el := newElicitor(mode, in, app.IO.ErrOut)
	app.elicit = el.elicit
	m, err := app.Manager()
	if err != nil {
		return err
	}

	// The server's own progress reports, if it sends any, show in the
	// spinner's line (remote text, so sanitized and cut to one line).
	var progress atomic.Pointer[string]
	stop := startProgress(app.IO.ErrOut, app.IO.ErrTTY, func() string {
		msg := fmt.Sprintf("Calling %s/%s…", opts.ID, firstLine(opts.Tool, 60))
		if p := progress.Load(); p != nil {
			msg += " " + *p
		}
		return msg
	})
	el.setBeforeAsk(stop)
	callOpts := &manager.CallOptions{Timeout: opts.Timeout}
	if app.IO.ErrTTY {
		callOpts.Progress = func(p *mcp.ProgressNotificationParams) {
			s := progressText(p)
			progress.Store(&s)
		}
	}
	res, err := m.CallTool(ctx, opts.ID, opts.Tool, args, callOpts)
	stop()
	if err != nil {
		return namedError(opts.ID, err)
	}

	if opts.JSON {
		if err := writeResultJSON(app.IO.Out, res); err != nil {
			return err
		}
	} else {
		w := app.IO.Out
		if res.IsError {
			w = app.IO.ErrOut
			fmt.Fprintf(w, "mcpgate: %s/%s reported an error:\n", opts.ID, firstLine(opts.Tool, 60))
		}
		writeCallResult(w, res)
	}
	if res.IsError {
		return &reportedError{Err: errToolFailed}
	}
	return nil
}

// progressText is a progress notification as the spinner shows it: "3/10
// message", the counts without a total as they come.
func progressText(p *mcp.ProgressNotificationParams) string {
	s := strconv.FormatFloat(p.Progress, 'f', -1, 64)
	if p.Total > 0 {
		s += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
	}
	if m := firstLine(p.Message, 60); m != "" {
		s += " " + m
	}
	return s
}

// callArgs reads and checks the JSON argument. It must be one JSON object;
// anything else is a usage error naming the problem.
func callArgs(source string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	what := "the JSON argument"
	switch source {
	case "":
		return json.RawMessage("{}"), nil
	case "-":
		what = "the JSON on stdin"
		var err error
		data, err = io.ReadAll(io.LimitReader(stdin, maxArgsBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
		if len(data) > maxArgsBytes {
			return nil, usageErrorf("%s is larger than %d MiB", what, maxArgsBytes>>20)
		}
	default:
		data = []byte(source)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, usageErrorf("%s is empty; want a JSON object such as {\"key\":\"value\"}", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, usageErrorf("%s is not valid JSON: %s", what, jsonProblem(err, data))
	}
	if dec.More() || dec.InputOffset() != int64(len(data)) {
		return nil, usageErrorf("%s is not valid JSON: unexpected data after the object at byte %d", what, dec.InputOffset()+1)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, usageErrorf("%s must be a JSON object such as {\"key\":\"value\"}, not %s", what, jsonKind(v))
	}
	return json.RawMessage(data), nil
}

func jsonProblem(err error, data []byte) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%s at byte %d", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Sprintf("it ends early (after %d bytes); is a quote or brace missing?", len(data))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "that"
}

// writeCallResult prints the result's content for a person; a result with
// only structured content shows that as JSON.
func writeCallResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if c != nil {
			writeContent(w, c)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		_ = writeJSON(w, res.StructuredContent)
	}
}
