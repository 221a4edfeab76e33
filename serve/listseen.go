package serve

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk tells every session that a list changed 10 ms after the last
// registration of its kind, whatever the session has listed since. In
// Direct mode the first mirror is made inside the host's first list
// request, so the host was told its tool list had changed right after (or
// even before) the answer that already held every tool, and listed the
// whole catalog again. listSeen lets through only the notifications a
// host has not already had the news of: one is held back when, for each
// kind it speaks for, the host's latest list was answered from the
// registrations as they are now, with no change begun since, or the host
// has never listed that kind (it holds no list to be stale; its first
// list will be answered from the registrations as they are then).

// listKind is one kind of registration a list request returns.
type listKind int

const (
	kindTools listKind = iota
	kindPrompts
	kindResources
	kindTemplates
	numKinds
)

// listKindOf is the kind method lists, if it is a list request.
func listKindOf(method string) (listKind, bool) {
	switch method {
	case "tools/list":
		return kindTools, true
	case "prompts/list":
		return kindPrompts, true
	case "resources/list":
		return kindResources, true
	case "resources/templates/list":
		return kindTemplates, true
	}
	return 0, false
}

// changedKinds are the kinds a list_changed notification speaks for: the
// go-sdk sends the resources one for resources and templates alike.
func changedKinds(method string) []listKind {
	switch method {
	case "notifications/tools/list_changed":
		return []listKind{kindTools}
	case "notifications/prompts/list_changed":
		return []listKind{kindPrompts}
	case "notifications/resources/list_changed":
		return []listKind{kindResources, kindTemplates}
	}
	return nil
}

// listSeen is what each host session has listed of the registrations.
type listSeen struct {
	live func() iter.Seq[*mcp.ServerSession] // the server's sessions, to forget ended ones

	mu  sync.Mutex
	gen [numKinds]uint64 // per kind: the changes begun
	// calm is the kind's change under way, if any: closed when it settles.
	calm [numKinds]chan struct{}
	// hosts holds a session's lists from its first list request on.
	hosts   map[*mcp.ServerSession]*hostLists
	pruneAt int // len(hosts) at which ended sessions are looked for
}

type hostLists struct {
	// listed is the kind's gen when the session's latest list of it was
	// taken for answering, with no change under way.
	listed [numKinds]uint64
	// had says the session has had an answer to a list of the kind.
	had [numKinds]bool
	// pending counts the session's list requests of the kind that will be
	// answered from the registrations as they are once they settle (one
	// waiting for the first mirror, which is made before it is answered).
	pending [numKinds]int
}

// changing marks the registrations of kind k as changing until the
// returned func is called, which must be once they are all made.
func (s *listSeen) changing(k listKind) (settled func()) {
	s.mu.Lock()
	s.gen[k]++
	s.calm[k] = make(chan struct{})
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		close(s.calm[k])
		s.calm[k] = nil
		s.mu.Unlock()
	}
}

// listing is a list request of kind k from ss, taken before the mirror it
// may wait for. The returned func is called when the request goes on to
// be answered from the registrations.
func (s *listSeen) listing(ss *mcp.ServerSession, k listKind) (answering func()) {
	s.mu.Lock()
	h := s.host(ss)
	h.pending[k]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		h.pending[k]--
		h.had[k] = true
		if s.calm[k] == nil {
			h.listed[k] = s.gen[k]
		}
		// A list answered while a change is under way may miss part of
		// it: what was listed before stays, so the change is told.
	}
}

// settleWait bounds how long a notification waits for a change under
// way to settle before it is told whatever the host has listed.
const settleWait = 2 * time.Second

// tell reports whether ss must hear a list_changed for kinds: unless,
// for each of them, no change is under way and the session's latest list
// was (or its waiting one will be) answered after the last change, or it
// has listed none of the kind, nor waits for one. The
// go-sdk tells 10 ms after the last registration, which on a loaded
// machine can come before the change is marked settled: a change under
// way is waited for (at most settleWait, or as long as ctx lasts).
func (s *listSeen) tell(ctx context.Context, ss *mcp.ServerSession, kinds []listKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hosts[ss]
	if !h.hadAny(kinds) {
		return false // nothing of these kinds listed: no wait either
	}
	wait := time.NewTimer(settleWait)
	defer wait.Stop()
	for {
		var calm chan struct{}
		for _, k := range kinds {
			if calm = s.calm[k]; calm != nil {
				break
			}
		}
		if calm == nil {
			break
		}
		s.mu.Unlock()
		select {
		case <-calm:
			s.mu.Lock()
			continue
		case <-wait.C:
		case <-ctx.Done():
		}
		s.mu.Lock()
		return true
	}
	for _, k := range kinds {
		if h.had[k] && h.pending[k] == 0 && h.listed[k] != s.gen[k] {
			return true
		}
	}
	return false
}

// hadAny says the session has had a list of any of kinds answered.
func (h *hostLists) hadAny(kinds []listKind) bool {
	if h == nil {
		return false
	}
	for _, k := range kinds {
		if h.had[k] {
			return true
		}
	}
	return false
}

// host is ss's record, made on its first list request; s.mu is held.
// Sessions that ended are forgotten as sessions come and go.
func (s *listSeen) host(ss *mcp.ServerSession) *hostLists {
	if h := s.hosts[ss]; h != nil {
		return h
	}
	if s.hosts == nil {
		s.hosts = make(map[*mcp.ServerSession]*hostLists)
	}
	if len(s.hosts) >= max(s.pruneAt, 64) && s.live != nil {
		keep := make(map[*mcp.ServerSession]*hostLists, len(s.hosts))
		for ls := range s.live() {
			if h := s.hosts[ls]; h != nil {
				keep[ls] = h
			}
		}
		s.hosts = keep
		s.pruneAt = 2 * len(keep) // the next look waits for as many sessions again
	}
	h := &hostLists{}
	s.hosts[ss] = h
	return h
}
