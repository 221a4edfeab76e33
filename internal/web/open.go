package web

import (
	"context"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/serve"
)

// The page must tell the truth as soon as it opens. A server nobody has
// connected yet would read "not connected", with its catalog unknown,
// until someone clicked; so when the page starts, and each time it is
// opened, every enabled server without a live session is connected in the
// background, a few at a time, and each state it passes through reaches
// open pages as an event (connecting, then ready, needs sign-in or the
// error with its reason). A sign-in is never started this way: a server
// that needs one only says so.
//
// And the config file is followed (serve.WatchConfig, as serve follows
// it), so a server another process adds, removes or changes (mcpgate add
// in another terminal, an editor) is on the page within a second; one it
// added, enabled or pointed elsewhere is connected like the others.

// maxOpenConnects bounds the background connects the page runs at once, so
// a config of fifty servers does not dial fifty at the same moment.
const maxOpenConnects = 4

// connectEnabled connects, in the background, every enabled server that
// has no live session and no attempt under way.
func (s *Server) connectEnabled() {
	for _, st := range s.opts.Manager.Statuses() {
		if !st.Enabled || st.State == mcpgate.StateReady || st.State == mcpgate.StateConnecting {
			continue
		}
		s.connectQueued(st.ID)
	}
}

// connectQueued connects one server in the background once a slot is
// free; a server already queued is not queued twice.
func (s *Server) connectQueued(id string) {
	s.mu.Lock()
	if s.queued[id] {
		s.mu.Unlock()
		return
	}
	s.queued[id] = true
	s.mu.Unlock()
	s.goBackground(func(ctx context.Context) {
		defer func() {
			s.mu.Lock()
			delete(s.queued, id)
			s.mu.Unlock()
		}()
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-s.slots }()
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		if err := s.opts.Manager.Connect(cctx, id); err != nil {
			s.opts.Logger.Debug("connecting on open", "server", id, "error", clean(err.Error(), maxText))
		}
		s.events.publish()
	})
}

// watchConfig follows Options.ConfigPath until ctx ends: a change another
// process made is applied to the manager, open pages are told, and the
// servers it added, enabled or rebound are connected.
func (s *Server) watchConfig(ctx context.Context) {
	err := serve.WatchConfig(ctx, s.opts.ConfigPath, s.opts.Logger, func([]mcpgate.ServerConfig) {
		// The file is read again under the page's own edit lock: what the
		// watcher read may be older than a change the page has applied
		// since, and applying it would undo that change for a moment.
		s.edit.Lock()
		before := map[string]mcpgate.ServerConfig{}
		for _, c := range s.opts.Manager.Servers() {
			before[c.ID] = c
		}
		f, err := s.opts.Config()
		var servers []mcpgate.ServerConfig
		if err == nil {
			servers = f.Servers()
			err = s.opts.Manager.Update(ctx, servers)
		}
		s.edit.Unlock()
		if err != nil {
			s.opts.Logger.Warn("the changed config was not applied", "error", clean(err.Error(), maxText))
			return
		}
		s.events.publish()
		// Only what the change itself left without a session: a server
		// new or newly enabled, or one whose URL or auth changed. One the
		// person disconnected stays so when a tool is switched off.
		for _, c := range servers {
			old, had := before[c.ID]
			if c.Enabled && (!had || !old.Enabled || old.Binding() != c.Binding()) {
				s.connectQueued(c.ID)
			}
		}
	})
	if err != nil {
		s.opts.Logger.Warn("config changes made by other processes will not be seen until the page restarts", "error", clean(err.Error(), maxText))
	}
}
