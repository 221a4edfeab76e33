package serve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StoredQuestions routes a form elicitation that the front's host cannot
// show to the settings page of another process through the store, when
// one is open; otherwise it declines at once. The question lives as long as
// the call that asked, at most Timeout.
type StoredQuestions struct {
	Store  store.Store
	Tenant string
	// Timeout bounds the wait for an answer; default the call timeout.
	Timeout time.Duration
	// Poll is how often the store is checked for the answer; default 250 ms.
	Poll time.Duration
	// Answerable reports whether a person can see stored questions now;
	// nil means a settings page (mcpgate ui) is open on this store.
	Answerable func(context.Context) bool
	// Announced, when set, is told of each question once it is stored, so
	// the person can be shown where to answer it.
	Announced func(ctx context.Context, in *store.Interaction)
}

// Ask stores the question, cleaned (see [Front.Elicit]), waits for the
// answer, and removes it.
func (q *StoredQuestions) Ask(ctx context.Context, req *manager.ElicitRequest) (*mcp.ElicitResult, error) {
	req, _, ok := cleanQuestion(req)
	if !ok || !q.someoneCanAnswer(ctx) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	timeout := cmpOr(q.Timeout, mcpgate.DefaultCallTimeout)
	poll := cmpOr(q.Poll, 250*time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	payload, err := json.Marshal(&store.Question{Server: req.Server, Message: req.Message, Schema: req.Schema})
	if err != nil {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	b := make([]byte, 12)
	rand.Read(b)
	in := &store.Interaction{
		ID: base64.RawURLEncoding.EncodeToString(b), Tenant: q.Tenant, Server: req.Server, Kind: store.KindQuestion,
		Message: "a question from " + req.Server, Payload: payload, CreatedAt: time.Now(), Expiry: time.Now().Add(timeout),
	}
	if err := q.Store.PutInteraction(ctx, in); err != nil {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	defer q.Store.DeleteInteraction(context.WithoutCancel(ctx), q.Tenant, in.ID)
	if q.Announced != nil {
		q.Announced(ctx, in)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		list, err := q.Store.Interactions(ctx, q.Tenant)
		if err != nil {
			continue
		}
		found := false
		for _, i := range list {
			if i.ID != in.ID {
				continue
			}
			found = true
			var got store.Question
			if json.Unmarshal(i.Payload, &got) == nil && got.Answer != nil {
				return &mcp.ElicitResult{Action: got.Answer.Action, Content: got.Answer.Content}, nil
			}
		}
		if !found {
			return nil, errors.New("the question was withdrawn")
		}
	}
}

// someoneCanAnswer reports whether a person can see the question: by
// default whether `mcpgate ui` is running on this store (it holds the UI
// lock).
func (q *StoredQuestions) someoneCanAnswer(ctx context.Context) bool {
	if q.Answerable != nil {
		return q.Answerable(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	unlock, err := q.Store.Lock(ctx, store.UILockName(q.Tenant))
	if err != nil {
		return true // held: a settings page is open
	}
	unlock()
	return false
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Bounds on a remote server's question as a front passes it on.
const (
	maxQuestion     = 2000     // the message
	maxFieldTitle   = 200      // a title in the form
	maxFieldText    = 2000     // a description in the form
	maxSchemaBytes  = 64 << 10 // the whole requested schema
	maxPropertyName = 64
)

// cleanQuestion returns req with its message, and the titles and
// descriptions anywhere in its schema, cleaned of terminal controls and
// bidi characters and bounded; the schema is also returned decoded. ok is
// false for a schema that is too big, not an object, or has a property
// name that would not show as itself: such a form is declined.
func cleanQuestion(req *manager.ElicitRequest) (out *manager.ElicitRequest, schema map[string]any, ok bool) {
	if len(req.Schema) > maxSchemaBytes || json.Unmarshal(req.Schema, &schema) != nil || schema == nil {
		return nil, nil, false
	}
	if props, isMap := schema["properties"].(map[string]any); isMap {
		for name := range props {
			if name == "" || len(name) > maxPropertyName || mcpgate.CleanText(name, maxPropertyName) != name || strings.Contains(name, "\n") {
				return nil, nil, false
			}
		}
	}
	cleanSchema(schema)
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, false
	}
	return &manager.ElicitRequest{Server: req.Server, Message: mcpgate.CleanText(req.Message, maxQuestion), Schema: raw}, schema, true
}

// cleanSchema cleans every "title" and "description" string in v, at any
// depth (a multi-select's items, a choice's oneOf), in place.
func cleanSchema(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			s, isString := e.(string)
			switch {
			case isString && k == "title":
				x[k] = strings.ReplaceAll(mcpgate.CleanText(s, maxFieldTitle), "\n", " ")
			case isString && k == "description":
				x[k] = mcpgate.CleanText(s, maxFieldText)
			default:
				cleanSchema(e)
			}
		}
	case []any:
		for _, e := range x {
			cleanSchema(e)
		}
	}
}
