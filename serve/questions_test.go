package serve_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// twoHandles opens one store twice, as two processes would.
func twoHandles(t *testing.T) (store.Store, store.Store) {
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := seal.New(key)
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	var out []store.Store
	for range 2 {
		st, err := sqlite.Open(path, sealer)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out[0], out[1]
}

// askThroughHostWithoutElicitation calls the fake's ask tool through a
// front whose host cannot show forms, with stored questions as the
// fallback.
func askThroughHostWithoutElicitation(t *testing.T, st store.Store) string {
	srv := fake.Start(t, nil)
	q := &serve.StoredQuestions{Store: st, Poll: 20 * time.Millisecond, Timeout: 10 * time.Second}
	var front *serve.Front
	m, err := manager.New([]mcpgate.ServerConfig{{ID: "demo", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}},
		&manager.Options{Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
			return front.Elicit(ctx, r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	front = serve.New(&serve.Options{Gateway: gateway.New(&gateway.Options{Manager: m}), Questions: q.Ask})
	ct, stp := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); front.Run(ctx, stp) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "plain-host", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); cancel(); <-done }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"ask"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestQuestionGoesToTheSettingsPageOfAnotherProcess(t *testing.T) {
	t.Parallel()
	serveSide, uiSide := twoHandles(t)
	unlock, err := uiSide.Lock(context.Background(), store.UILockName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// The settings page: finds the question and answers it.
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for range 500 {
			list, _ := uiSide.Interactions(context.Background(), "")
			for _, in := range list {
				var q store.Question
				if in.Kind != store.KindQuestion || json.Unmarshal(in.Payload, &q) != nil || q.Server != "demo" {
					continue
				}
				q.Answer = &store.Answer{Action: "accept", Content: map[string]any{"name": "Zoe", "lucky": 5}}
				in.Payload, _ = json.Marshal(&q)
				uiSide.PutInteraction(context.Background(), in)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	out := askThroughHostWithoutElicitation(t, serveSide)
	<-answered
	if !strings.Contains(out, "accepted: name=Zoe lucky=5") {
		t.Fatalf("answer from the other process's page: %s", out)
	}
	if list, _ := serveSide.Interactions(context.Background(), ""); len(list) != 0 {
		t.Errorf("the question outlived its call: %d left", len(list))
	}
}

func TestQuestionDeclinedWhenNoPageIsOpen(t *testing.T) {
	t.Parallel()
	serveSide, _ := twoHandles(t)
	start := time.Now()
	out := askThroughHostWithoutElicitation(t, serveSide)
	if !strings.Contains(out, "declined") || time.Since(start) > 5*time.Second {
		t.Fatalf("no page open: %s after %v", out, time.Since(start))
	}
}

// TestStatelessFrontTellsTheHostWhereToAnswer: a front serving hosts over
// stateless HTTP sends every question to the store, even for a host that
// could show forms, and Notice tells the host's call where the person
// answers it, in a progress message; the answer given there ends the call.
func TestStatelessFrontTellsTheHostWhereToAnswer(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, version string) {
		st, _ := twoHandles(t)
		srv := fake.Start(t, nil)
		var front *serve.Front
		q := &serve.StoredQuestions{Store: st, Poll: 20 * time.Millisecond, Timeout: 10 * time.Second,
			Answerable: func(context.Context) bool { return true },
			Announced: func(_ context.Context, in *store.Interaction) {
				front.Notice(in.Server, "demo asks a question: answer it at https://gw.example/questions/"+in.ID)
			}}
		m, err := manager.New([]mcpgate.ServerConfig{{ID: "demo", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}},
			&manager.Options{Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
				return front.Elicit(ctx, r)
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		front = serve.New(&serve.Options{Gateway: gateway.New(&gateway.Options{Manager: m}), Questions: q.Ask, Stateless: true})
		ct, stp := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		done := make(chan struct{})
		go func() { defer close(done); front.Run(ctx, stp) }()
		notices := make(chan string, 10)
		var asked atomic.Bool
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "form-host", Version: "1"}, &mcp.ClientOptions{
			// A host that could show the form itself: over stateless HTTP
			// it is never asked.
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Store(true)
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				notices <- req.Params.Message
			},
		}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { cs.Close(); cancel(); <-done }()
		go func() {
			for msg := range notices {
				id, ok := strings.CutPrefix(msg, "demo asks a question: answer it at https://gw.example/questions/")
				if !ok {
					continue
				}
				in, err := st.Interaction(ctx, id)
				if err != nil {
					t.Errorf("the notice names %q, which is not a stored question: %v", id, err)
					return
				}
				var qq store.Question
				json.Unmarshal(in.Payload, &qq)
				qq.Answer = &store.Answer{Action: "accept", Content: map[string]any{"name": "Ada", "lucky": 7}}
				in.Payload, _ = json.Marshal(&qq)
				st.PutInteraction(ctx, in)
				return
			}
		}()
		params := &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"ask"}`)}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if out := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(out, "accepted: name=Ada lucky=7") {
			t.Fatalf("the answer given where the notice said: %s", out)
		}
		if asked.Load() {
			t.Error("a stateless front asked the host directly")
		}
	})
}
