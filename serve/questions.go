package serve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
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
}

// Ask stores the question, waits for the answer, and removes it.
func (q *StoredQuestions) Ask(ctx context.Context, req *manager.ElicitRequest) (*mcp.ElicitResult, error) {
	if !q.someoneCanAnswer(ctx) {
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

// someoneCanAnswer reports whether `mcpgate ui` is running on this store:
// it holds the UI lock.
func (q *StoredQuestions) someoneCanAnswer(ctx context.Context) bool {
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
