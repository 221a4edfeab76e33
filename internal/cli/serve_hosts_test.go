package cli

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/nodetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Real hosts against mcpgate serve, with the reference everything server
// as the remote server: the official TypeScript SDK's client (the one
// Claude Code, Cursor and VS Code build on) and the go-sdk client at
// 2025-11-25 and at 2026-07-28. Every session is fresh: it calls, renders
// a prompt, reads a resource and a template before listing anything.

// everything configures the reference server for p as "everything".
func everything(t *testing.T, p *procs) *nodetest.Tools {
	t.Helper()
	x := nodetest.Find(t)
	p.mustRun(0, "add", "everything", x.StartEverything(t), "--auth", "none")
	return x
}

func TestServeToTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	p := newProcs(t)
	x := everything(t, p)
	script, err := filepath.Abs(filepath.Join("testdata", "tshost.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	serve := p.binary([]string{"serve"})
	for _, mode := range []string{"gateway", "direct"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, x.Bin("node"), script, x.Module("@modelcontextprotocol/sdk"), mode,
				serve, "--config", p.cfg, "--data-dir", p.dataDir)
			cmd.Env = x.Env(p.env)
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			if strings.Contains(string(out), "DATA RACE") {
				t.Errorf("mcpgate serve had a data race:\n%s", out)
			}
			if err != nil {
				t.Fatalf("the TypeScript SDK host (%s): %v\n%s", mode, err, out)
			}
		})
	}
}

func TestServeToTheGoSDKAtEachGeneration(t *testing.T) {
	t.Parallel()
	p := newProcs(t)
	everything(t, p)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			t.Run("direct", func(t *testing.T) { goSDKDirect(t, p, version) })
			t.Run("gateway", func(t *testing.T) { goSDKGateway(t, p, version) })
		})
	}
}

// progress counts the progress notifications a host receives.
type progress struct {
	mu   sync.Mutex
	seen []*mcp.ProgressNotificationParams
}

func (pr *progress) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.seen = append(pr.seen, req.Params)
}

// count is how many notifications carried token.
func (pr *progress) count(token string) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	n := 0
	for _, p := range pr.seen {
		if p.ProgressToken == token {
			n++
		}
	}
	return n
}

// await waits a little for want notifications carrying token and
// returns how many arrived.
func (pr *progress) await(token string, want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for pr.count(token) < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return pr.count(token)
}

func goSDKDirect(t *testing.T, p *procs, version string) {
	pr := &progress{}
	cs := serveSessionAt(t, p, version, &mcp.ClientOptions{ProgressNotificationHandler: pr.handler}, "--direct")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Prompts == nil || caps.Resources == nil {
		t.Errorf("capabilities: %+v", caps)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__get-structured-content", Arguments: map[string]any{"location": "Chicago"}})
	if err != nil || res.IsError {
		t.Fatalf("a call in a fresh session: %v %+v", err, res)
	}
	if got, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(got), `"temperature":36`) {
		t.Errorf("structured content: %s", got)
	}
	pres, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything:simple-prompt"})
	if err != nil || len(pres.Messages) == 0 || !strings.Contains(pres.Messages[0].Content.(*mcp.TextContent).Text, "simple prompt without arguments") {
		t.Errorf("a prompt: %v %+v", err, pres)
	}
	rres, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/instructions.md"})
	if err != nil || len(rres.Contents) != 1 || rres.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("a resource: %v %+v", err, rres)
	}
	rres, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/5"})
	if err != nil || len(rres.Contents) != 1 || !strings.Contains(rres.Contents[0].Text, "Resource 5") {
		t.Errorf("a resource through a template: %v %+v", err, rres)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) == 0 {
		t.Errorf("templates: %v %+v", err, tmpl)
	}
	params := &mcp.CallToolParams{Name: "mcp__everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 0.6, "steps": 3}}
	params.SetProgressToken("direct-" + version)
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("a long call: %v %+v", err, res)
	}
	// The go-sdk host hands notifications to its handler on another
	// goroutine than the result, so the last may land just after it.
	if n := pr.await("direct-"+version, 3); n != 3 {
		t.Errorf("%d progress notifications, want 3", n)
	}
}

func goSDKGateway(t *testing.T, p *procs, version string) {
	pr := &progress{}
	cs := serveSessionAt(t, p, version, &mcp.ClientOptions{ProgressNotificationHandler: pr.handler})
	out, isErr := gatewayCall(t, cs, `{"action":"call","server":"everything","tool":"get-structured-content","arguments":{"location":"New York"}}`)
	if isErr || !strings.Contains(blockContent(t, out), `"temperature":33`) {
		t.Fatalf("call: %s", out)
	}
	out, _ = gatewayCall(t, cs, `{"action":"list","server":"everything","limit":200}`)
	for _, want := range []string{"everything/get-structured-content — ", "everything prompt simple-prompt", "everything template demo://resource/dynamic/text/{resourceId}"} {
		if !strings.Contains(blockContent(t, out), want) {
			t.Errorf("list lacks %q", want)
		}
	}
	out, _ = gatewayCall(t, cs, `{"action":"read","server":"everything","uri":"demo://resource/dynamic/text/2"}`)
	if !strings.Contains(blockContent(t, out), "Resource 2") {
		t.Errorf("read: %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"everything","tool":"trigger-long-running-operation","arguments":{"duration":0.6,"steps":3}}`)}
	params.SetProgressToken("gateway-" + version)
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("a long call: %v %+v", err, res)
	}
	if n := pr.await("gateway-"+version, 3); n != 3 {
		t.Errorf("%d progress notifications, want 3", n)
	}
}
