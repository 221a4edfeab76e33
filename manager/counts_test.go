package manager

import (
	"net"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// A catalog never listed counts -1 (unknown), never 0: a server that
// failed to connect does not read as a server with no tools. Once listed,
// the counts are the lists' lengths.
func TestStatusCountsUnknownUntilListed(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	m := newManager(t, nil, cfg("live", srv.URL), cfg("dead", deadURL))

	unknown := func(st Status) bool {
		return st.Tools == -1 && st.Prompts == -1 && st.Resources == -1 && st.Templates == -1
	}
	for _, id := range []string{"live", "dead"} {
		if st := mustStatus(t, m, id); !unknown(st) {
			t.Errorf("%s before connecting: counts %d %d %d %d, want -1", id, st.Tools, st.Prompts, st.Resources, st.Templates)
		}
	}
	if err := m.Connect(ctxT(t, 10*time.Second), "dead"); err == nil {
		t.Fatal("connected to nothing")
	}
	if st := mustStatus(t, m, "dead"); st.State != mcpgate.StateError || !unknown(st) {
		t.Errorf("dead after a failed connect: %s with counts %d %d %d %d, want -1", st.State, st.Tools, st.Prompts, st.Resources, st.Templates)
	}
	if err := m.Connect(ctxT(t, 10*time.Second), "live"); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "live"); st.Tools != 8 || st.Prompts != 2 || st.Resources != 2 || st.Templates != 1 {
		t.Errorf("live: counts %d %d %d %d, want 8 2 2 1", st.Tools, st.Prompts, st.Resources, st.Templates)
	}
}

func TestCountedSaysUnknownNotZero(t *testing.T) {
	for n, want := range map[int]string{-1: "unknown tools", 0: "0 tools", 1: "1 tool", 3: "3 tools"} {
		if got := Counted(n, "tool"); got != want {
			t.Errorf("Counted(%d) = %q, want %q", n, got, want)
		}
	}
}
