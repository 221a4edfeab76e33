package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestSearchAnswersFromStoredCatalogsAcrossProcesses: the first process
// lists the servers and stores their catalogs; the next search, list and
// status --cached, each a process of its own, answer from them without a
// single request to the servers, and status says cached, not ready.
func TestSearchAnswersFromStoredCatalogsAcrossProcesses(t *testing.T) {
	t.Parallel()
	a := fake.Start(t, nil)
	b := fake.Start(t, nil)
	p := newProcs(t)
	p.mustRun(0, "add", "one", a.URL, "--auth", "none")
	p.mustRun(0, "add", "two", b.URL, "--auth", "none")
	first := p.mustRun(0, "search", "add two numbers together", "--json", "--limit", "3")

	connects := a.Connects() + b.Connects()
	lists := a.Requests("tools/list") + b.Requests("tools/list")
	second := p.mustRun(0, "search", "add two numbers together", "--json", "--limit", "3")
	if second.stdout != first.stdout {
		t.Errorf("the second search answered otherwise:\nfirst  %s\nsecond %s", first.stdout, second.stdout)
	}
	if r := p.mustRun(0, "list"); !strings.Contains(r.stdout, "echo") {
		t.Errorf("list from stored catalogs:\n%s", r)
	}
	r := p.mustRun(0, "status", "--cached", "--json")
	var got struct {
		Servers []struct {
			ID, State string
			Cached    bool
			Tools     int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	for _, s := range got.Servers {
		if !s.Cached || s.State == "ready" || s.Tools == 0 {
			t.Errorf("status of %s from a stored catalog: %+v, want cached and not ready", s.ID, s)
		}
	}
	if r := p.mustRun(0, "status", "--cached"); !strings.Contains(r.stdout, "cached") || strings.Contains(r.stdout, "ready") {
		t.Errorf("status from stored catalogs:\n%s", r)
	}
	if n, c := a.Requests("tools/list")+b.Requests("tools/list")-lists, a.Connects()+b.Connects()-connects; n != 0 || c != 0 {
		t.Fatalf("processes answering from stored catalogs sent %d tools/list and made %d connects, want none", n, c)
	}

	// status without --cached shows the live state, connecting.
	if r := p.mustRun(0, "status"); !strings.Contains(r.stdout, "ready") || strings.Contains(r.stdout, "cached") {
		t.Errorf("status:\n%s", r)
	}
	if a.Connects()+b.Connects() == connects {
		t.Error("status connected nothing")
	}
}
