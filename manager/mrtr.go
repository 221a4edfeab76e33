package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (2026-07-28). A server that needs something
// from the client before it can answer a tool call, a prompt or a read
// answers with an InputRequiredResult: questions (inputRequests) and an
// opaque requestState. The manager answers the questions and sends the
// request again, as a new request, with the answers and the requestState
// exactly as the server sent it, until the answer is complete:
//   - a form elicitation goes where a session-era elicitation goes
//     (Options.Elicit: the host, the settings page, the terminal, or
//     declined);
//   - roots: mcpgate shares none, so the answer is an empty list;
//   - sampling: mcpgate runs no model for servers (it never offered to), so
//     the request fails with that reason;
// within bounds: a server that keeps asking, or keeps answering "busy"
// (input required, nothing asked), is given up on.

const (
	maxInputRounds = 8 // requests sent for one multi round-trip request
	maxBusyRounds  = 3 // "input required" with no question: the server sheds load
)

// inputRequest is what an InputRequiredResult asked for.
type inputRequest struct {
	requests mcp.InputRequestMap
	state    string
}

// roundTrips sends a request through send until its answer is complete.
// send gets the answers and the requestState to carry (none the first
// time) and returns the next questions, or nil when the answer is
// complete or failed.
func (s *server) roundTrips(ctx context.Context, what string, send func(ctx context.Context, in mcp.InputResponseMap, state string) (*inputRequest, error)) error {
	var in mcp.InputResponseMap
	state := ""
	busy := 0
	for round := 1; ; round++ {
		next, err := send(ctx, in, state)
		if err != nil || next == nil {
			return err
		}
		if round == maxInputRounds {
			return &mcpgate.Error{Category: mcpgate.CategoryProtocol,
				Message: fmt.Sprintf("%s: the server still asked for input after %d rounds; gave up", what, maxInputRounds)}
		}
		if len(next.requests) == 0 {
			busy++
			if busy == maxBusyRounds {
				return &mcpgate.Error{Category: mcpgate.CategoryRemote,
					Message: what + ": the server kept answering that it is busy; try again later"}
			}
			select {
			case <-ctx.Done():
				return classify(ctx, what, ctx.Err(), nil)
			case <-time.After(time.Duration(busy) * 500 * time.Millisecond):
			}
		}
		in, err = s.answer(ctx, what, next.requests)
		if err != nil {
			return err
		}
		state = next.state
	}
}

// answer answers a round's questions, one at a time: a person answers one
// form at a time, and they come in the order the server named them.
func (s *server) answer(ctx context.Context, what string, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(mcp.InputResponseMap, len(reqs))
	for _, k := range keys {
		switch p := reqs[k].(type) {
		case *mcp.ElicitParams:
			res, err := s.elicit(ctx, p)
			if err != nil {
				return nil, classify(ctx, what, err, nil)
			}
			if res.Action == "accept" {
				res.Content = withDefaults(p.RequestedSchema, res.Content)
			}
			out[k] = res
		//lint:ignore SA1019 2026-07-28 servers may still ask for roots and sampling during its deprecation window (SEP-2577); we answer them
		case *mcp.ListRootsParams:
			//lint:ignore SA1019 2026-07-28 servers may still ask for roots and sampling during its deprecation window (SEP-2577); we answer them
			out[k] = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
		//lint:ignore SA1019 2026-07-28 servers may still ask for roots and sampling during its deprecation window (SEP-2577); we answer them
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol,
				Message: what + ": the server asked mcpgate to run a language model for it (sampling), which mcpgate does not offer; declined"}
		default:
			return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol,
				Message: fmt.Sprintf("%s: the server asked for input of a kind mcpgate does not know (%T)", what, p)}
		}
	}
	return out, nil
}

// withDefaults fills the properties a person left out with the defaults
// the form's schema names, as the go-sdk does for a session-era
// elicitation, so a server gets the same answer in both generations.
func withDefaults(schema any, content map[string]any) map[string]any {
	b, err := json.Marshal(schema)
	if err != nil {
		return content
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil {
		return content
	}
	for name, p := range s.Properties {
		if _, set := content[name]; set || len(p.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			if content == nil {
				content = map[string]any{}
			}
			content[name] = v
		}
	}
	return content
}

// progressRouter sends the progress notifications of calls to whoever
// asked for them, by the progress token the manager gave the call.
type progressRouter struct {
	mu   sync.Mutex
	next uint64
	by   map[string]func(*mcp.ProgressNotificationParams)
}

func (r *progressRouter) register(f func(*mcp.ProgressNotificationParams)) (token string, done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	token = "mcpgate-" + strconv.FormatUint(r.next, 10)
	if r.by == nil {
		r.by = make(map[string]func(*mcp.ProgressNotificationParams))
	}
	r.by[token] = f
	return token, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.by, token)
	}
}

func (r *progressRouter) deliver(p *mcp.ProgressNotificationParams) {
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	r.mu.Lock()
	f := r.by[token]
	r.mu.Unlock()
	if f != nil {
		f(p)
	}
}
