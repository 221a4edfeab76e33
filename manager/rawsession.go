package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a session-era call (rawcall.go) does that a 2026-07-28 call does
// not, as the go-sdk v1.8.0 client does it: a response stream that breaks
// before the answer, having given its events IDs, is resumed: a GET with
// Last-Event-ID, after the delay the server asked for (retry) or a
// backoff of its own, as many times as the stream makes progress and at
// most resumeTries times more without; a resumption that fails ends the
// connection. The transport paces resumptions as it paces the go-sdk's
// (resumeGate) and bounds their bodies as it bounds a POST's.
//
// At both generations, a request the server sends on a call's stream is
// answered as the go-sdk's client answers it: a ping, roots/list (no
// roots: mcpgate shares none), sampling refused (mcpgate runs no model for
// servers), elicitation/create checked as the go-sdk checks it and asked
// where every elicitation goes (server.elicit).

// resumeTries is the go-sdk's MaxRetries as dial sets it: resumptions in a
// row that bring no new event, and attempts at each.
const resumeTries = 3

// Delays between resumptions when the server names none, as the go-sdk's:
// the first resumeDelay, growing by half each attempt, with full jitter.
const resumeDelay = time.Second

// streamCursor is where a response stream got to: its last event ID and
// the reconnection delay it asked for.
type streamCursor struct {
	lastID string
	retry  time.Duration
}

// saw notes an event's id and retry fields.
func (c *streamCursor) saw(id, retry string) {
	if id != "" {
		c.lastID = id
	}
	if retry != "" {
		if n, err := strconv.ParseInt(retry, 10, 64); err == nil {
			c.retry = time.Duration(n) * time.Millisecond
		}
	}
}

// readCallStreams reads a call's response stream, resuming it while it
// breaks before the answer with events to resume from (session era).
func (s *server) readCallStreams(ctx context.Context, sess *session, body io.ReadCloser, id string) (*mcp.CallToolResult, error) {
	progress, idle := "", 0
	var resumed io.ReadCloser // the last resumption's body; exchangeCall closes the first
	defer func() {
		if resumed != nil {
			resumed.Close()
		}
	}()
	for {
		// Each stream has its own last ID and delay, as in the go-sdk: one
		// resumed without IDs cannot be resumed again.
		var at streamCursor
		res, err := s.readCallStream(ctx, sess, body, id, &at)
		if !errors.Is(err, errNoAnswer) || sess.raw.stateless || at.lastID == "" || ctx.Err() != nil {
			return res, err
		}
		if at.lastID != progress {
			progress, idle = at.lastID, 0
		} else if idle++; idle > resumeTries {
			return nil, fmt.Errorf("tools/call: %w: the stream broke %d times without progress", errConnectionFailed, resumeTries)
		}
		if resumed != nil {
			resumed.Close()
		}
		if resumed, err = s.resumeCallStream(ctx, sess, at); err != nil {
			return nil, err
		}
		body = resumed
	}
}

// resumeCallStream asks for the rest of a broken response stream.
func (s *server) resumeCallStream(ctx context.Context, sess *session, at streamCursor) (io.ReadCloser, error) {
	delay := resumeBackoff(1)
	if at.retry > 0 {
		delay = at.retry
	}
	var last error
	for attempt := 1; attempt <= resumeTries; attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-sess.ctx.Done():
			t.Stop()
			return nil, mcp.ErrConnectionClosed
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, sess.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", sess.protocol)
		if sess.raw.sessionID != "" {
			req.Header.Set("Mcp-Session-Id", sess.raw.sessionID)
		}
		req.Header.Set("Last-Event-ID", at.lastID)
		if err := callAuthorization(sess, req); err != nil {
			return nil, err
		}
		resp, err := sess.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last, delay = err, resumeBackoff(attempt+1)
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			// The go-sdk ends the connection whatever the status.
			err := sess.raw.refused(resp)
			resp.Body.Close()
			if !errors.Is(err, errConnectionFailed) {
				err = fmt.Errorf("%w: %w", errConnectionFailed, err)
			}
			return nil, fmt.Errorf("tools/call: resuming the stream: %w", err)
		}
		return resp.Body, nil
	}
	return nil, fmt.Errorf("tools/call: %w: resuming the stream failed %d times: %w", errConnectionFailed, resumeTries, last)
}

// resumeBackoff is the delay before the given attempt, as the go-sdk's.
func resumeBackoff(attempt int) time.Duration {
	d := min(time.Duration(float64(resumeDelay)*math.Pow(1.5, float64(attempt-1))), 30*time.Second)
	return d + rand.N(d)
}

// answerServerRequest answers a request the server sent on a call's
// stream, as the go-sdk's client answers it. An elicitation waits
// for a person: it is asked on its own goroutine, until the call or the
// session ends, and the stream is read on meanwhile.
func (s *server) answerServerRequest(ctx context.Context, sess *session, msg *rpcMessage) {
	switch msg.Method {
	case "ping":
		answerRequest(sess, msg.ID, struct{}{}, nil)
	case "roots/list":
		//lint:ignore SA1019 session-era servers ask for roots; we answer as the go-sdk does
		answerRequest(sess, msg.ID, &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil)
	case "sampling/createMessage":
		answerRequest(sess, msg.ID, nil, &jsonrpc.Error{Code: codeUnsupportedMethod, Message: "client does not support CreateMessage"})
	case "elicitation/create":
		if !sess.exchanges.add() {
			return // closing: the stream ends with the session
		}
		go func() {
			defer sess.exchanges.done()
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(sess.ctx, cancel)()
			res, e := s.elicitChecked(ctx, msg.Params)
			answerRequest(sess, msg.ID, res, e)
		}()
	default:
		answerRequest(sess, msg.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method not found: %q", msg.Method)})
	}
}

// codeUnsupportedMethod is the go-sdk's code for a method the client
// does not offer.
const codeUnsupportedMethod = -31001

// elicitChecked asks a session-era elicitation, checked before and after
// as the go-sdk's client checks it: the mode and its fields, a form's
// schema (an object of primitive properties), and the answer against the
// schema, with the schema's defaults filled in.
func (s *server) elicitChecked(ctx context.Context, params json.RawMessage) (*mcp.ElicitResult, *jsonrpc.Error) {
	invalid := func(format string, args ...any) (*mcp.ElicitResult, *jsonrpc.Error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
	}
	var p mcp.ElicitParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return invalid("invalid params: %v", err)
		}
	}
	switch p.Mode {
	case "url":
		switch {
		case p.RequestedSchema != nil:
			return invalid("requestedSchema must not be set for URL elicitation")
		case p.URL == "":
			return invalid("URL must be set for URL elicitation")
		}
		res, err := s.elicit(ctx, &p)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return res, nil
	case "", "form":
	default:
		return invalid("unsupported elicitation mode: %q", p.Mode)
	}
	if p.URL != "" {
		return invalid("URL must not be set for form elicitation")
	}
	schema, err := formSchema(p.RequestedSchema)
	if err != nil {
		return invalid("%v", err)
	}
	res, err := s.elicit(ctx, &p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if res.Action != "accept" || schema == nil || res.Content == nil {
		return res, nil
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return invalid("failed to resolve requested schema: %v", err)
	}
	if err := resolved.Validate(res.Content); err != nil {
		return invalid("elicitation result content does not match requested schema: %v", err)
	}
	if err := resolved.ApplyDefaults(&res.Content); err != nil {
		return invalid("failed to apply schema defaults to elicitation result: %v", err)
	}
	return res, nil
}

// formSchema reads a form's requested schema and holds it to what an
// elicitation may ask: an object whose properties are strings, numbers,
// integers, booleans or arrays, none with properties of its own.
func formSchema(requested any) (*jsonschema.Schema, error) {
	if requested == nil {
		return nil, nil
	}
	b, err := json.Marshal(requested)
	if err != nil {
		return nil, err
	}
	var schema *jsonschema.Schema
	if err := json.Unmarshal(b, &schema); err != nil || schema == nil {
		return nil, err
	}
	if schema.Type != "" && schema.Type != "object" {
		return nil, fmt.Errorf("elicit schema must be of type 'object', got %q", schema.Type)
	}
	for name, prop := range schema.Properties {
		switch {
		case prop == nil:
		case len(prop.Properties) > 0:
			return nil, fmt.Errorf("elicit schema property %q contains nested properties, only primitive properties are allowed", name)
		case prop.Type != "string" && prop.Type != "number" && prop.Type != "integer" && prop.Type != "boolean" && prop.Type != "array":
			return nil, fmt.Errorf("elicit schema property %q has unsupported type %q, only string, number, integer, boolean, and array are allowed", name, prop.Type)
		}
	}
	return schema, nil
}
