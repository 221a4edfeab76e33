package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
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
	// The second kept its index for the third, which ranks with it.
	kept := filepath.Join(p.dataDir, searchIndexFileName)
	fi, err := os.Stat(kept)
	if err != nil {
		t.Fatalf("no index kept: %v", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept index has mode %v, want 0600", fi.Mode().Perm())
	}
	if third := p.mustRun(0, "search", "add two numbers together", "--json", "--limit", "3"); third.stdout != first.stdout {
		t.Errorf("the search from the kept index answered otherwise:\nfirst %s\nthird %s", first.stdout, third.stdout)
	}
	if fi2, err := os.Stat(kept); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("the search from the kept index wrote it again (%v)", err)
	}
	// Another program's (here, a header no build has) is not read.
	if err := os.WriteFile(kept, []byte("mcpgate search index another-build 00\ngarbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again := p.mustRun(0, "search", "add two numbers together", "--json", "--limit", "3"); again.stdout != first.stdout {
		t.Errorf("the search beside another program's kept index answered otherwise:\nfirst %s\nagain %s", first.stdout, again.stdout)
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
