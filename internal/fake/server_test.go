package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var modes = []struct {
	name string
	opts *fake.Options
}{
	{"sse", nil},
	{"json", &fake.Options{JSONResponse: true}},
	{"stateless", &fake.Options{Stateless: true}},
}

func TestServerCatalog(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := fake.Start(t, mode.opts)
			if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || !strings.HasSuffix(srv.URL, "/mcp") {
				t.Errorf("URL = %q, want http://127.0.0.1:<port>/mcp", srv.URL)
			}
			cs := connect(t, srv.URL, nil, nil)
			ctx := testContext(t)

			init := cs.InitializeResult()
			if init.ServerInfo.Name != "fake" || init.ServerInfo.Version != "1.0.0" || init.Instructions == "" {
				t.Errorf("server info %+v, instructions %q", init.ServerInfo, init.Instructions)
			}
			if c := init.Capabilities; c.Tools == nil || !c.Tools.ListChanged || c.Prompts == nil || c.Resources == nil {
				t.Errorf("capabilities = %+v, want tools (listChanged), prompts, resources", c)
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			for _, tool := range tools.Tools {
				byName[tool.Name] = tool
			}
			for _, name := range []string{"echo", "add", "slow", "fail", "ask", "big"} {
				if byName[name] == nil {
					t.Errorf("tool %q missing from %v", name, tools.Tools)
				}
			}
			if a := byName["echo"].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("echo annotations = %+v, want readOnlyHint", a)
			}
			if a := byName["fail"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("fail annotations = %+v, want destructiveHint", a)
			}
			schema, _ := json.Marshal(byName["echo"].InputSchema)
			if !strings.Contains(string(schema), `"required":["text"]`) {
				t.Errorf("echo input schema %s does not require text", schema)
			}

			for _, tc := range []struct {
				tool      string
				args      map[string]any
				want      string
				wantError bool
			}{
				{"echo", map[string]any{"text": "hi there"}, "hi there", false},
				{"add", map[string]any{"a": 2, "b": 3.5}, "5.5", false},
				{"fail", nil, "the widget is broken", true},
				{"slow", map[string]any{"seconds": 0.01}, "done", false},
			} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err != nil {
					t.Fatalf("calling %s: %v", tc.tool, err)
				}
				if got := text(res); got != tc.want || res.IsError != tc.wantError {
					t.Errorf("%s = %q (isError %v), want %q (isError %v)", tc.tool, got, res.IsError, tc.want, tc.wantError)
				}
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
			if err != nil {
				t.Fatal(err)
			}
			if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":3}` {
				t.Errorf("add structuredContent = %s, want {\"sum\":3}", sc)
			}

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 1000}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); len(got) != 1000 || strings.Count(got, "\n") != 9 || !strings.HasPrefix(got, strings.Repeat("x", 100)+"\n") {
				t.Errorf("big returned %d bytes with %d line breaks", len(got), strings.Count(got, "\n"))
			}

			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var promptNames []string
			for _, p := range prompts.Prompts {
				promptNames = append(promptNames, p.Name)
			}
			slices.Sort(promptNames)
			if !slices.Equal(promptNames, []string{"greet", "summarize"}) {
				t.Errorf("prompts = %v", promptNames)
			}
			greet, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(greet.Messages) != 1 || greet.Messages[0].Role != "user" || greet.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada!" {
				t.Errorf("greet = %+v", greet.Messages)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil {
				t.Error("greet without name succeeded")
			}
			summary, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize", Arguments: map[string]string{"style": "terse"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(got, "Style: terse.") {
				t.Errorf("summarize = %q", got)
			}

			resources, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(resources.Resources) != 2 {
				t.Errorf("resources = %v", resources.Resources)
			}
			for uri, want := range map[string]string{"fake://readme": fake.ReadmeText, "fake://data.json": fake.DataJSON} {
				read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("reading %s: %v", uri, err)
				}
				if len(read.Contents) != 1 || read.Contents[0].Text != want {
					t.Errorf("%s = %+v", uri, read.Contents)
				}
			}

			if n := srv.Requests("tools/call"); n != 6 {
				t.Errorf("Requests(tools/call) = %d, want 6", n)
			}
			if n := srv.Initializes(); n != 1 {
				t.Errorf("Initializes() = %d, want 1", n)
			}
		})
	}
}

func TestServerElicitation(t *testing.T) {
	t.Parallel()
	for _, mode := range modes[:2] { // stateless servers cannot send requests
		t.Run(mode.name, func(t *testing.T) {
			srv := fake.Start(t, mode.opts)
			for _, tc := range []struct {
				answer *mcp.ElicitResult
				want   string
			}{
				{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, "accepted: name=Grace lucky=7"},
				{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "lucky": 3}}, "accepted: name=Ada lucky=3"},
				{&mcp.ElicitResult{Action: "decline"}, "declined"},
				{&mcp.ElicitResult{Action: "cancel"}, "cancelled"},
			} {
				var asked *mcp.ElicitParams
				cs := connect(t, srv.URL, &mcp.ClientOptions{
					ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = req.Params
						return tc.answer, nil
					},
				}, nil)
				res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
				if err != nil {
					t.Fatal(err)
				}
				if got := text(res); got != tc.want || res.IsError {
					t.Errorf("ask answered %+v: got %q (isError %v), want %q", tc.answer, got, res.IsError, tc.want)
				}
				if asked == nil || asked.Message != fake.AskMessage {
					t.Fatalf("elicitation request = %+v", asked)
				}
				schema, _ := json.Marshal(asked.RequestedSchema)
				if !strings.Contains(string(schema), `"required":["name"]`) || !strings.Contains(string(schema), `"default":"Ada"`) {
					t.Errorf("requested schema = %s", schema)
				}
				cs.Close()
			}
		})
	}

	t.Run("client without elicitation", func(t *testing.T) {
		srv := fake.Start(t, nil)
		cs := connect(t, srv.URL, nil, nil)
		res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			t.Errorf("ask without the capability = %q, want a tool error", text(res))
		}
	})

	t.Run("stateless", func(t *testing.T) {
		srv := fake.Start(t, &fake.Options{Stateless: true})
		cs := connect(t, srv.URL, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("a stateless server elicited")
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}, nil)
		res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			t.Errorf("ask on a stateless server = %q, want a tool error", text(res))
		}
	})
}

func TestServerCancellation(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := connect(t, srv.URL, nil, nil)

	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60}})
		errc <- err
	}()
	// Cancel only once the handler runs, or the cancellation could overtake
	// the call and be ignored.
	waitFor(t, "slow to start", func() bool { return srv.InFlight("slow") == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v, want context.Canceled", err)
	}
	waitFor(t, "the cancellation to be recorded", func() bool { return len(srv.Cancellations()) == 1 })
	if got := srv.Cancellations(); got[0] != "slow" {
		t.Errorf("Cancellations() = %v, want [slow]", got)
	}
	if n := srv.Requests("notifications/cancelled"); n != 1 {
		t.Errorf("Requests(notifications/cancelled) = %d, want 1", n)
	}
	waitFor(t, "slow to stop", func() bool { return srv.InFlight("slow") == 0 })
}

func TestServerExpireSessions(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := connect(t, srv.URL, nil, nil)
	ctx := testContext(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}}); err != nil {
		t.Fatal(err)
	}
	old := cs.ID()

	srv.ExpireSessions()

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}})
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("call in an expired session: %v, want mcp.ErrSessionMissing", err)
	}
	resp := post(t, srv.URL, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, http.Header{
		"Mcp-Session-Id":       {old},
		"Mcp-Protocol-Version": {protocolVersion},
	})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("raw request in an expired session: %s, want 404", resp.Status)
	}

	// A new session works, and is not expired by the earlier call.
	cs2 := connect(t, srv.URL, nil, nil)
	if cs2.ID() == old {
		t.Fatal("new session reused the old ID")
	}
	if _, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "c"}}); err != nil {
		t.Errorf("call in a new session: %v", err)
	}
	if n := srv.Initializes(); n != 2 {
		t.Errorf("Initializes() = %d, want 2", n)
	}
	if n := srv.Requests("tools/call"); n != 3 {
		t.Errorf("Requests(tools/call) = %d, want 3 (the refused one counts)", n)
	}
}

func TestServerExpireAbandonsRunningCalls(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := connect(t, srv.URL, nil, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60}})
		errc <- err
	}()
	waitFor(t, "slow to start", func() bool { return srv.InFlight("slow") == 1 })
	srv.ExpireSessions() // must not wait 60 seconds for the handler
	<-errc
	if got := srv.Cancellations(); len(got) != 0 {
		t.Errorf("Cancellations() = %v, want none: the client did not cancel", got)
	}
}

func TestServerListChanged(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	changed := make(chan struct{}, 10)
	cs := connect(t, srv.URL, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, nil)
	ctx := testContext(t)

	srv.AddTool("shout", "Echoes, but louder.")
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after AddTool")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "shout" }) {
		t.Errorf("shout missing from %v", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"text": "hey"}})
	if err != nil || text(res) != "hey" {
		t.Errorf("shout = %v, %v", res, err)
	}

	srv.RemoveTool("shout")
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after RemoveTool")
	}
	tools, err = cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "shout" }) {
		t.Error("shout still listed after RemoveTool")
	}
}

func TestServerAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	for _, tc := range []struct {
		name  string
		opts  *fake.Options
		good  http.Header
		wrong http.Header
	}{
		{"bearer", &fake.Options{BearerToken: token},
			http.Header{"Authorization": {"Bearer " + token}},
			http.Header{"Authorization": {"Bearer not-" + token}}},
		{"header", &fake.Options{RequireHeader: map[string]string{"X-Api-Key": "k1"}},
			http.Header{"X-Api-Key": {"k1"}},
			http.Header{"X-Api-Key": {"k2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake.Start(t, tc.opts)
			for _, h := range []http.Header{nil, tc.wrong} {
				if _, err := dial(srv.URL, nil, &mcp.StreamableClientTransport{
					Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headerTransport(h)},
				}); err == nil {
					t.Errorf("connecting with %v succeeded", h)
				}
			}
			resp := post(t, srv.URL, initializeBody, tc.wrong)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("wrong credentials: %s, want 401", resp.Status)
			}
			if strings.Contains(string(body), token) || strings.Contains(string(body), "k1") {
				t.Errorf("401 body %q reveals the credential", body)
			}
			if tc.opts.BearerToken != "" {
				if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}
			if n := srv.Initializes(); n != 0 {
				t.Errorf("Initializes() = %d after refusals, want 0", n)
			}
			if srv.Unauthorized() < 3 {
				t.Errorf("Unauthorized() = %d, want at least 3", srv.Unauthorized())
			}

			cs := connect(t, srv.URL, nil, &http.Client{Transport: headerTransport(tc.good)})
			if _, err := cs.ListTools(testContext(t), nil); err != nil {
				t.Errorf("listing with good credentials: %v", err)
			}
		})
	}
}

func TestServerDeletes(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	cs := connect(t, srv.URL, nil, nil)
	cs.Close()
	if n := srv.Deletes(); n != 1 {
		t.Errorf("Deletes() = %d after closing a session, want 1", n)
	}

	stateless := fake.Start(t, &fake.Options{Stateless: true})
	cs = connect(t, stateless.URL, nil, nil)
	if cs.ID() != "" {
		t.Errorf("stateless server issued session ID %q", cs.ID())
	}
	cs.Close()
	if n := stateless.Deletes(); n != 0 {
		t.Errorf("Deletes() = %d on a stateless server, want 0 (nothing to delete)", n)
	}
}

func TestServerStopRestart(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	url := srv.URL
	cs, err := dial(url, nil, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := testContext(t)

	srv.Stop()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}}); err == nil {
		t.Error("call after Stop succeeded")
	}
	if _, err := dial(url, nil, &mcp.StreamableClientTransport{Endpoint: url}); err == nil {
		t.Error("connecting after Stop succeeded")
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err == nil {
		t.Error("restarting a running server succeeded")
	}
	if srv.URL != url {
		t.Errorf("URL changed from %s to %s", url, srv.URL)
	}
	resp := post(t, url, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, http.Header{
		"Mcp-Session-Id":       {cs.ID()},
		"Mcp-Protocol-Version": {protocolVersion},
	})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("old session after restart: %s, want 404", resp.Status)
	}
	cs2 := connect(t, url, nil, nil)
	if _, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}}); err != nil {
		t.Errorf("call after Restart: %v", err)
	}
	if n := srv.Initializes(); n != 2 {
		t.Errorf("Initializes() = %d, want 2 (counters survive a restart)", n)
	}
}

func TestNewServerClose(t *testing.T) {
	t.Parallel()
	srv := fake.NewServer(nil)
	cs, err := dial(srv.URL, nil, &mcp.StreamableClientTransport{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	srv.Close() // idempotent
	cs.Close()
	if err := srv.Restart(); err == nil {
		t.Error("Restart after Close succeeded")
	}
}
