package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestRequestLogAndExport: a tool call is in the drawer's log and in the
// export of the last 50, with its metadata and without its arguments.
func TestRequestLogAndExport(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true})
	if _, err := e.m.CallTool(context.Background(), "docs", "echo", json.RawMessage(`{"text":"very-private-argument"}`), nil); err != nil {
		t.Fatal(err)
	}
	// An exchange is logged once its stream is done with, which may be a
	// moment after the call returned.
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body = e.do("GET", "/api/log", nil)
		if code == 200 && strings.Contains(body, `"method":"tools/call","tool":"echo"`) || time.Now().After(deadline) {
			break
		}
	}
	if code != 200 || !strings.Contains(body, `"method":"tools/call","tool":"echo"`) || !strings.Contains(body, `"outcome":"ok"`) {
		t.Fatalf("log: %d %s", code, body)
	}
	if strings.Contains(body, "very-private-argument") {
		t.Error("the log shows a call's arguments")
	}

	for range 60 {
		if _, err := e.m.Tools(context.Background(), "docs"); err != nil {
			t.Fatal(err)
		}
		_ = e.m.Reconnect(context.Background(), "docs") // many requests
	}
	resp, err := e.client.Get(e.base + "/api/log/export")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
		t.Errorf("Content-Disposition %q", cd)
	}
	var out struct{ Entries []map[string]any }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 50 {
		t.Errorf("export has %d entries, want the last 50", len(out.Entries))
	}
	if code, _ := e.do("GET", "/api/log?last=abc", nil); code != http.StatusOK {
		t.Errorf("a bad last: %d", code)
	}
}
