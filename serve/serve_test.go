package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	// The tests mostly wait on loopback servers and timers.
	testbin.Waiting(8)
	goleak.VerifyTestMain(m)
}

func cfg(id, url string) mcpgate.ServerConfig {
	return mcpgate.ServerConfig{ID: id, URL: url, Auth: mcpgate.AuthNone, Enabled: true}
}

func callMCP(t *testing.T, cs *mcp.ClientSession, args string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestGatewayFront(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := start(t, false, nil, cfg("demo", srv.URL))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "mcp" {
		t.Fatalf("tools/list: %d tools", len(tools.Tools))
	}
	if srv.Connects() != 0 {
		t.Error("the front connected to a remote server before it was needed")
	}
	out, isErr := callMCP(t, cs, `{"action":"call","server":"demo","tool":"echo","arguments":{"text":"hi"}}`)
	if isErr || !strings.Contains(out, "\nhi\n") {
		t.Fatalf("call: %s", out)
	}
}

func TestElicitationForwarded(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	var asked atomic.Value
	cs := start(t, false, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Store(req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "lucky": 3}}, nil
		},
	}, cfg("demo", srv.URL))
	out, _ := callMCP(t, cs, `{"action":"call","server":"demo","tool":"ask"}`)
	if !strings.Contains(out, "accepted: name=Grace lucky=3") {
		t.Fatalf("elicitation through a capable client: %s", out)
	}
	if msg, _ := asked.Load().(string); !strings.Contains(msg, "[demo asks]") {
		t.Errorf("message shown to the person: %q", msg)
	}
}

func TestElicitationDeclinedWithoutCapability(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	each(t, func(t *testing.T, version string) {
		r := startHost(t, host{version: version}, cfg("demo", srv.URL))
		out, _ := callMCP(t, r.cs, `{"action":"call","server":"demo","tool":"ask"}`)
		if !strings.Contains(out, "declined") {
			t.Fatalf("elicitation without the capability: %s", out)
		}
	})
}

func TestCancellationReachesRemote(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := start(t, false, nil, cfg("demo", srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"slow","arguments":{"seconds":30}}`)})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for srv.InFlight("slow") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	for len(srv.Cancellations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(srv.Cancellations()) != 1 {
		t.Fatal("the remote server never saw the cancellation")
	}
}

func TestDirectModeAndListChanged(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	changed := make(chan struct{}, 10)
	others := make(chan string, 10) // kinds this host never lists
	cs := start(t, true, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { others <- "prompts" },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { others <- "resources" },
	}, cfg("demo", srv.URL))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["mcp__demo__echo"] || names["mcp"] {
		t.Fatalf("direct tools: %v", names)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__demo__echo", Arguments: map[string]any{"text": "direct"}})
	if err != nil || res.IsError {
		t.Fatalf("direct call: %v %v", err, res)
	}
	time.Sleep(200 * time.Millisecond) // the first mirror's registrations are told 10 ms after, if at all
	if len(changed) > 0 {
		t.Fatal("the host was told its tool list changed right after listing it whole")
	}
	// The mirror registered the server's prompts and resources too; a
	// host that never listed them holds no list of them to be stale.
	if len(others) > 0 {
		t.Fatalf("the host was told its %s list changed, never having listed it", <-others)
	}
	start := time.Now()
	srv.AddTool("fresh", "a tool added at run time")
	// Pushed: nothing polls the server's list, so nothing else would
	// tell the host within the wait. The bound is wide for a loaded
	// machine; a quiet one takes tens of ms.
	select {
	case <-changed:
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("list_changed after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed reached the front's client")
	}
	tools, _ = cs.ListTools(context.Background(), nil)
	found := false
	for _, tl := range tools.Tools {
		found = found || tl.Name == "mcp__demo__fresh"
	}
	if !found {
		t.Error("the new tool is not listed")
	}
}

func TestAuthenticateFromTheModel(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	key := make([]byte, 32)
	sealer, _ := seal.New(key)
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	oc := oauth.New(&oauth.Options{Store: st})
	browser := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	logins := &serve.Logins{OAuth: oc, Open: func(u string) error {
		wg.Add(1)
		go func() { // the person's browser follows the redirect to the callback
			defer wg.Done()
			if resp, err := browser.Get(u); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}}
	t.Cleanup(logins.Close)
	m, err := manager.New([]mcpgate.ServerConfig{{ID: "secure", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true}}, &manager.Options{Authorizer: oc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	g := gateway.New(&gateway.Options{Manager: m, Auth: logins})
	res := g.Handle(context.Background(), &gateway.Input{Action: "authenticate", Server: "secure"})
	msg := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(msg, "status") {
		t.Fatalf("authenticate: %s", msg)
	}
	for _, s := range []string{"state=", "code=", "http://", "https://"} {
		if strings.Contains(msg, s) {
			t.Errorf("pending message carries %q: %s", s, msg)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res = g.Handle(context.Background(), &gateway.Input{Action: "call", Server: "secure", Tool: "echo", Arguments: json.RawMessage(`{"text":"in"}`)})
		if !res.IsError || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.IsError {
		t.Fatalf("call after authenticate: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	noSecrets := as.Secrets()
	for _, s := range noSecrets {
		if len(s) > 8 && strings.Contains(msg, s) {
			t.Error("a secret reached the model")
		}
	}
}
