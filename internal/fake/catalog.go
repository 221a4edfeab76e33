package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBigBytes caps the size the big tool will produce, so a typo in a test
// cannot eat the machine's memory.
const MaxBigBytes = 64 << 20

// ReadmeText is the text of the fake://readme resource.
const ReadmeText = "This is the fake server's readme."

// DataJSON is the content of the fake://data.json resource.
const DataJSON = `{"name":"fake","items":[1,2,3],"nested":{"ok":true}}`

// AskMessage is the message of the ask tool's elicitation.
const AskMessage = "What is your name?"

// askSchema is the ask tool's requested schema, exactly as sent.
var askSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"lucky":{"type":"number","default":7}},"required":["name"]}`)

type (
	echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo back"`
	}
	addIn struct {
		A float64 `json:"a" jsonschema:"the first addend"`
		B float64 `json:"b" jsonschema:"the second addend"`
	}
	addOut struct {
		Sum float64 `json:"sum"`
	}
	slowIn struct {
		Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds"`
	}
	progressIn struct {
		Steps float64 `json:"steps" jsonschema:"how many progress notifications to send"`
	}
	logIn struct {
		Text string `json:"text" jsonschema:"the message to log"`
	}
	tallyIn struct {
		Key string `json:"key" jsonschema:"what to count this execution under"`
	}
	bigIn struct {
		Bytes float64 `json:"bytes" jsonschema:"how many bytes of text to return"`
	}
	noIn struct{}
)

// addCatalog registers the fake server's tools, prompts and resources.
func addCatalog(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Echoes the given text back.",
		Annotations: readOnly(),
	}, echo)
	addTool(s, &mcp.Tool{
		Name:        "add",
		Description: "Adds two numbers.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		sum := in.A + in.B
		return textResult(strconv.FormatFloat(sum, 'g', -1, 64)), addOut{Sum: sum}, nil
	})
	addTool(s, &mcp.Tool{
		Name:        "slow",
		Description: "Works for the given number of seconds, then answers done. Honours cancellation.",
		Annotations: readOnly(),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
		t := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
			return textResult("done"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	addTool(s, &mcp.Tool{
		Name:        "fail",
		Description: "Always fails, the way tools report failure: a result with isError set.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
		res := textResult("the widget is broken")
		res.IsError = true
		return res, nil, nil
	})
	addTool(s, &mcp.Tool{
		Name:        "ask",
		Description: "Asks the user for their name (form elicitation) and reports the answer.",
		// Not idempotent: the person may answer differently each time.
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, ask)
	addTool(s, &mcp.Tool{
		Name:        "big",
		Description: "Returns one text content of the given size: lines of 100 'x' and a line break.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		n := int(in.Bytes)
		if n < 0 || n > MaxBigBytes {
			return nil, nil, fmt.Errorf("bytes must be between 0 and %d", MaxBigBytes)
		}
		return textResult(pattern(n)), nil, nil
	})

	addTool(s, &mcp.Tool{
		Name:        "progress",
		Description: "Works in steps of 20 ms, reporting progress after each (when the caller asked for progress), then answers done.",
		Annotations: readOnly(),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		n := min(max(int(in.Steps), 0), 100)
		if token := req.Params.GetProgressToken(); token != nil {
			for i := 1; i <= n; i++ {
				select {
				case <-time.After(20 * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(n), Message: fmt.Sprintf("step %d of %d", i, n)})
				if err != nil {
					return nil, nil, err
				}
			}
		}
		return textResult("done"), nil, nil
	})
	addTool(s, &mcp.Tool{
		Name:        "log",
		Description: "Logs the given text at level info (to a client that asked for logs), then answers logged.",
		Annotations: readOnly(),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "fake", Data: in.Text}); err != nil {
			return nil, nil, err
		}
		return textResult("logged"), nil, nil
	})

	if s.opts.Tally {
		addTool(s, &mcp.Tool{
			Name:        "tally",
			Description: "Counts one execution under the given key and answers the key.",
			// Not idempotent: each execution counts.
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
		}, func(_ context.Context, _ *mcp.CallToolRequest, in tallyIn) (*mcp.CallToolResult, any, error) {
			s.tallyStarted(in.Key)
			defer s.tallyFinished(in.Key)
			return textResult(in.Key), nil, nil
		})
	}

	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Greets someone by name.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := req.Params.Arguments["name"]
		if name == "" {
			// The go-sdk does not check required prompt arguments; servers do.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `missing required argument "name"`}
		}
		return promptResult("A greeting", "Hello, "+name+"!"), nil
	})
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "summarize",
		Description: "Asks for a summary of the conversation, optionally in a style.",
		Arguments:   []*mcp.PromptArgument{{Name: "style", Description: "for example: terse, bullet points"}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		text := "Summarize the conversation so far."
		if style := req.Params.Arguments["style"]; style != "" {
			text += " Style: " + style + "."
		}
		return promptResult("A summary request", text), nil
	})

	addResource(s, &mcp.Resource{
		URI:         "fake://readme",
		Name:        "readme",
		Description: "What this server is.",
		MIMEType:    "text/plain",
	}, ReadmeText)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "fake://items/{id}",
		Name:        "item",
		Description: "One item by its ID.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		id := strings.TrimPrefix(req.Params.URI, "fake://items/")
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id}}}, nil
	})
	addResource(s, &mcp.Resource{
		URI:         "fake://data.json",
		Name:        "data.json",
		Description: "A little JSON document.",
		MIMEType:    "application/json",
	}, DataJSON)
}

// addTool registers a typed tool whose handler runs under Server.begin, so
// every tool is counted in InFlight, records client cancellations and ends
// when its session is forgotten or the server stops.
func addTool[In, Out any](s *Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		ctx, done := s.begin(ctx, t.Name, req.Session)
		defer done()
		return h(ctx, req, in)
	})
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return textResult(in.Text), nil, nil
}

// ask elicits a name from the user, the 2026-07-28 way: the first call
// answers with an InputRequiredResult asking for the name, the retry
// carries the answer. For a session-era client the go-sdk's server turns
// the question into a server-initiated elicitation request on the call's
// stream (or the standalone GET stream in JSONResponse mode) and calls the
// tool again with the answer; a stateless session-era server cannot ask.
func ask(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
	if caps := req.Session.InitializeParams().Capabilities; caps == nil || caps.Elicitation == nil {
		res := textResult("this tool asks a question, and the client cannot show one (no elicitation capability)")
		res.IsError = true
		return res, nil, nil
	}
	answer, ok := req.Params.InputResponses["name"]
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
			Mode:            "form",
			Message:         AskMessage,
			RequestedSchema: askSchema,
		}}, RequestState: AskState}, nil, nil
	}
	if state := req.Params.RequestState; state != AskState && req.Session.InitializeParams().ProtocolVersion >= "2026-07-28" {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState was not echoed unchanged"}
	}
	res, ok := answer.(*mcp.ElicitResult)
	if !ok {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the answer to name is not an elicitation result"}
	}
	switch res.Action {
	case "accept":
		return textResult(fmt.Sprintf("accepted: name=%v lucky=%v", res.Content["name"], res.Content["lucky"])), nil, nil
	case "decline":
		return textResult("declined"), nil, nil
	case "cancel":
		return textResult("cancelled"), nil, nil
	}
	return nil, nil, errors.New("elicitation answered with unknown action " + strconv.Quote(res.Action))
}

// AskState is the requestState of the ask tool's question: it must come
// back byte for byte. It holds characters a careless client would change
// when re-encoding (escapes, non-ASCII, HTML).
const AskState = `opaque:"é"\u00e9<&>\n`

func addResource(s *Server, r *mcp.Resource, text string) {
	s.mcp.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: text}}}, nil
	})
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func promptResult(description, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{
		Description: description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}
}

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
}

func ptr[T any](v T) *T { return &v }
