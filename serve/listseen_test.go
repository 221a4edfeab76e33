package serve

import (
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListSeenTellsOnlyWhatAHostHasNotListed walks the orders in which a
// host's list, a change of the registrations and the go-sdk's delayed
// list_changed can meet: the notification is held back only when, for
// each kind, the host's latest list was (or its waiting one will be)
// answered after the change and nothing has begun to change since, or
// the host never listed the kind.
func TestListSeenTellsOnlyWhatAHostHasNotListed(t *testing.T) {
	t.Parallel()
	tools := []listKind{kindTools}
	resources := []listKind{kindResources, kindTemplates}
	host := new(mcp.ServerSession)
	for _, tc := range []struct {
		name  string
		steps func(s *listSeen)
		kinds []listKind
		tell  bool
	}{
		{"nothing changed, nothing listed", func(s *listSeen) {}, tools, false},
		{"changed, never listed", func(s *listSeen) {
			s.changing(kindTools)()
		}, tools, false},
		{"changed, never listed that kind", func(s *listSeen) {
			s.listing(host, kindTools)()
			s.changing(kindPrompts)()
		}, []listKind{kindPrompts}, false},
		{"changed, another kind listed before", func(s *listSeen) {
			s.listing(host, kindPrompts)()
			s.changing(kindTools)()
			s.changing(kindPrompts)()
		}, []listKind{kindPrompts}, true},
		{"listed after the change", func(s *listSeen) {
			s.changing(kindTools)()
			s.listing(host, kindTools)()
		}, tools, false},
		{"listed before the change", func(s *listSeen) {
			s.listing(host, kindTools)()
			s.changing(kindTools)()
		}, tools, true},
		{"the first mirror made inside the list", func(s *listSeen) {
			s.listing(host, kindTools) // answered once the mirror is made
			s.changing(kindTools)()    // and told before that
		}, tools, false},
		{"still changing", func(s *listSeen) {
			s.changing(kindTools)()
			s.listing(host, kindTools)()
			s.changing(kindTools) // not settled
		}, tools, true},
		{"listed while changing", func(s *listSeen) {
			settled := s.changing(kindTools)
			s.listing(host, kindTools)()
			settled()
		}, tools, true},
		{"a change begun while the list waited", func(s *listSeen) {
			answering := s.listing(host, kindTools)
			s.changing(kindTools)()
			s.changing(kindTools) // begun, not settled, when the answer is taken
			answering()
		}, tools, true},
		{"another kind changed", func(s *listSeen) {
			s.listing(host, kindTools)()
			s.changing(kindPrompts)()
		}, tools, false},
		{"resources listed, templates changed since listed", func(s *listSeen) {
			s.listing(host, kindTemplates)()
			s.changing(kindTemplates)()
			s.listing(host, kindResources)()
		}, resources, true},
		{"resources listed, templates never listed", func(s *listSeen) {
			s.changing(kindTemplates)()
			s.listing(host, kindResources)()
		}, resources, false},
		{"resources and templates listed after", func(s *listSeen) {
			s.changing(kindTemplates)()
			s.changing(kindResources)()
			s.listing(host, kindResources)()
			s.listing(host, kindTemplates)()
		}, resources, false},
		{"another host listed after the change", func(s *listSeen) {
			s.listing(host, kindTools)()
			s.changing(kindTools)()
			s.listing(new(mcp.ServerSession), kindTools)()
		}, tools, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &listSeen{}
			tc.steps(s)
			// A change left under way is not waited for here: the
			// context has already ended.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if got := s.tell(ctx, host, tc.kinds); got != tc.tell {
				t.Errorf("tell = %v, want %v", got, tc.tell)
			}
		})
	}
}

// TestListSeenWaitsForTheChangeToSettle: the go-sdk's notification can
// come before the change that caused it is marked settled (a loaded
// machine); it waits for that, then is held back if the host's waiting
// list will be answered after the change, and told otherwise.
func TestListSeenWaitsForTheChangeToSettle(t *testing.T) {
	t.Parallel()
	for _, pending := range []bool{true, false} {
		s := &listSeen{}
		host := new(mcp.ServerSession)
		s.listing(host, kindTools)() // answered before the change
		if pending {
			s.listing(host, kindTools) // answered once the change settles
		}
		settled := s.changing(kindTools)
		told := make(chan bool)
		go func() { told <- s.tell(context.Background(), host, []listKind{kindTools}) }()
		select {
		case <-told:
			t.Fatal("told before the change settled")
		case <-time.After(50 * time.Millisecond):
		}
		settled()
		if got := <-told; got == pending {
			t.Errorf("with a list waiting %v: told %v", pending, got)
		}
	}
}

// TestListSeenHoldsBackAtOnceWhatAHostNeverListed: a host with no list of
// the kinds is not told, and its notification does not wait for a change
// under way (a wait that ends with its context tells, so a cancelled
// context shows whether it waited).
func TestListSeenHoldsBackAtOnceWhatAHostNeverListed(t *testing.T) {
	t.Parallel()
	s := &listSeen{}
	host := new(mcp.ServerSession)
	s.listing(host, kindTools)()
	s.changing(kindPrompts) // under way, never settled
	s.changing(kindTools)   // likewise
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s.tell(ctx, host, []listKind{kindPrompts}) {
		t.Error("told of prompts, never listed")
	}
	if s.tell(ctx, new(mcp.ServerSession), []listKind{kindTools}) {
		t.Error("a host that listed nothing was told")
	}
	if !s.tell(ctx, host, []listKind{kindTools}) {
		t.Error("a host that listed tools before a change under way was not told once the wait ended")
	}
}

// TestListSeenForgetsEndedSessions: the record of sessions that ended is
// dropped as new ones come, so a long-running HTTP front does not keep
// one per host it ever served.
func TestListSeenForgetsEndedSessions(t *testing.T) {
	t.Parallel()
	live := []*mcp.ServerSession{new(mcp.ServerSession), new(mcp.ServerSession)}
	s := &listSeen{live: func() iter.Seq[*mcp.ServerSession] { return slices.Values(live) }}
	s.changing(kindTools)()
	for _, ss := range live {
		s.listing(ss, kindTools)()
	}
	for range 1000 {
		s.listing(new(mcp.ServerSession), kindTools)()
	}
	if n := len(s.hosts); n > 130 {
		t.Errorf("%d sessions kept, of which 2 are live", n)
	}
	for _, ss := range live {
		if s.tell(context.Background(), ss, []listKind{kindTools}) {
			t.Error("a live session's list was forgotten")
		}
	}
}
