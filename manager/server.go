package manager

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server supervises the sessions of one configured server.
//
// Locks: lifecycle serializes connect attempts, disconnects and
// reconnects; mu guards everything else and is never held while talking to
// the network. Take lifecycle before mu, never the other way round.
type server struct {
	m  *Manager
	id string

	lifecycle sync.Mutex

	mu      sync.Mutex
	cfg     mcpgate.ServerConfig
	state   mcpgate.State
	err     *mcpgate.Error
	sess    *session // the live session; nil when there is none
	attempt *attempt // the in-flight connect that callers share
	// installing is the session whose catalogs are being loaded before it
	// becomes current.
	installing *session
	// epoch is bumped by every disconnect, reconnect and barrier; an
	// attempt started in an older epoch can never install its session.
	epoch   uint64
	catalog catalogs
	// held is the catalog reads answer from while there is no live
	// session, and persist writes it to the store (stored.go).
	held       *heldCatalog
	persist    persistState
	refreshing bool // a background connect for a held catalog is queued or running
	// known is the protocol version the last connection negotiated, so
	// the next one goes straight to it ("" until one succeeded).
	known string

	notifyMu sync.Mutex // keeps OnStateChange calls for this server in order
}

type attempt struct {
	epoch  uint64
	done   chan struct{}
	cancel context.CancelCauseFunc
	sess   *session
	err    error
}

func newServer(m *Manager, cfg mcpgate.ServerConfig) *server {
	return &server{m: m, id: cfg.ID, cfg: cfg, state: mcpgate.StateDisconnected}
}

func (s *server) config() mcpgate.ServerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// ensure returns the live session, connecting if there is none. Concurrent
// callers share one in-flight attempt. ctx bounds only this caller's wait:
// the attempt itself runs to its own deadline so the others still get it.
func (s *server) ensure(ctx context.Context) (*session, error) {
	s.mu.Lock()
	if !s.cfg.Enabled {
		s.mu.Unlock()
		return nil, mcpgate.Errorf(mcpgate.CategoryDisabled, "server %q is disabled; enable it with: mcpgate enable %s", s.id, s.id)
	}
	if s.sess != nil {
		sess := s.sess
		s.mu.Unlock()
		return sess, nil
	}
	a := s.attempt
	started := false
	if a == nil {
		a = s.startAttemptLocked()
		started = true
	}
	s.mu.Unlock()
	if started {
		s.notify()
	}
	select {
	case <-a.done:
		return a.sess, a.err
	case <-ctx.Done():
		return nil, classify(ctx, "connecting", ctx.Err(), nil)
	}
}

func (s *server) startAttemptLocked() *attempt {
	ctx, cancel := context.WithCancelCause(s.m.ctx)
	a := &attempt{epoch: s.epoch, done: make(chan struct{}), cancel: cancel}
	s.attempt = a
	s.state = mcpgate.StateConnecting
	s.err = nil
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		defer cancel(nil)
		s.runAttempt(ctx, a)
	}()
	return a
}

func (s *server) runAttempt(ctx context.Context, a *attempt) {
	s.connectHoldingSlot(ctx, a)
	close(a.done)
	s.notify()
}

// connectHoldingSlot waits for one of the manager's connect slots, then
// connects. An attempt cancelled while it waits goes on at once, to fail
// with its context's error.
func (s *server) connectHoldingSlot(ctx context.Context, a *attempt) {
	select {
	case s.m.connectSlots <- struct{}{}:
		defer func() { <-s.m.connectSlots }()
	case <-ctx.Done():
	}
	s.connectSerialized(ctx, a)
}

// connectSerialized dials under the lifecycle lock and installs the session
// only if no barrier happened meanwhile.
func (s *server) connectSerialized(ctx context.Context, a *attempt) {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()

	s.mu.Lock()
	cfg := s.cfg
	current := a.epoch == s.epoch
	s.mu.Unlock()

	// ConnectTimeout bounds the whole attempt: a server that connects and
	// then never lists its tools must not hold every caller after it.
	ctx, cancel := context.WithTimeoutCause(ctx, s.m.opts.ConnectTimeout, errConnectTimeout)
	defer cancel()
	var sess *session
	var err error
	if current {
		sess, err = s.dial(ctx, cfg)
	} else {
		err = errSuperseded
	}
	if err == nil {
		err = s.loadCatalogs(ctx, sess)
	}

	s.mu.Lock()
	switch {
	case a.epoch != s.epoch:
		// A disconnect, reconnect or barrier happened meanwhile: this attempt
		// must not install its session or touch the state.
		err = classify(ctx, "connecting", errSuperseded, nil)
	case err != nil:
		s.setErrorLocked(err)
	default:
		s.sess = sess
		s.state = mcpgate.StateReady
		s.err = nil
		s.catalogCommittedLocked()
	}
	if s.attempt == a {
		s.attempt = nil
	}
	if err != nil && sess != nil {
		// Neither this attempt's callers nor the next attempt, which
		// needs the lifecycle lock, wait for its session to end.
		s.closeLaterLocked(sess)
		sess = nil
	}
	s.mu.Unlock()
	a.sess, a.err = sess, err
}

// setErrorLocked records a failure: auth failures mean needs-auth, every
// other failure means error.
func (s *server) setErrorLocked(err error) {
	var me *mcpgate.Error
	if !errors.As(err, &me) {
		me = &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: "connecting failed", Err: err}
	}
	s.err = me
	if me.Category == mcpgate.CategoryAuth {
		s.state = mcpgate.StateNeedsAuth
	} else {
		s.state = mcpgate.StateError
	}
}

// authHandler picks who authorizes requests: the Authorizer for OAuth and
// stored bearer tokens, else the static handler (none, or a bearer token
// from the environment).
func (s *server) authHandler(cfg mcpgate.ServerConfig, envToken string) auth.OAuthHandler {
	stored := cfg.Auth == mcpgate.AuthOAuth || (cfg.Auth == mcpgate.AuthBearer && cfg.BearerTokenEnv == "")
	if stored && s.m.opts.Authorizer != nil {
		return s.m.opts.Authorizer.Handler(cfg)
	}
	return &staticAuth{cfg: cfg, token: envToken}
}

// sessionEnded is called when the SDK reports the session over.
func (s *server) sessionEnded(sess *session, err error) {
	if sess.gen.forgotten(err) {
		// The server forgot the session: nothing is wrong with the server, a
		// new session is made on next use.
		s.drop(sess, mcpgate.StateDisconnected, nil)
		return
	}
	s.drop(sess, mcpgate.StateError, classify(sess.ctx, "session", orClosed(err), sess.answers))
}

func orClosed(err error) error {
	if err == nil {
		return mcp.ErrConnectionClosed
	}
	return err
}

// drop retires sess if it is still the current session, setting state and
// error. A stale session (an older connectionId) changes nothing.
func (s *server) drop(sess *session, state mcpgate.State, e *mcpgate.Error) bool {
	s.mu.Lock()
	if s.sess == nil || s.sess.id != sess.id {
		s.mu.Unlock()
		return false
	}
	s.sess = nil
	s.state = state
	s.err = e
	if e != nil && e.Category == mcpgate.CategoryAuth {
		s.state = mcpgate.StateNeedsAuth
	}
	// Closing waits for the session's goroutines, one of which may be the
	// caller.
	s.closeLaterLocked(sess)
	s.mu.Unlock()
	s.notify()
	return true
}

// closeLaterLocked closes sess in the background, tracked by the manager:
// closing waits for the session's goroutines, and in the session era for
// a DELETE a server may hold for seconds, which no caller should wait
// for. Called with mu held, so the count is taken under it: Manager.Close
// takes every server's mu (disconnect) before it waits, so the count
// cannot grow while it waits.
func (s *server) closeLaterLocked(sess *session) {
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		sess.close()
	}()
}

// probe checks whether sess still works after something suspicious (a
// lost stream, a dropped call) and retires it if not. Checks of one
// session do not overlap: one that finds another running waits for it
// and trusts its verdict.
func (s *server) probe(sess *session) {
	if !sess.probing.TryLock() {
		// Taking the lock waits for the running check; its verdict is ours.
		sess.probing.Lock()
		sess.probing.Unlock() //lint:ignore SA2001 waiting for the running check is the point
		return
	}
	defer sess.probing.Unlock()
	ctx, cancel := context.WithTimeout(sess.ctx, connectionCheckTimeout)
	defer cancel()
	ctx, obs := withObservation(ctx)
	err := sess.gen.check(ctx, sess)
	if err == nil || sess.ctx.Err() != nil {
		return
	}
	if sess.gen.forgotten(err) {
		s.drop(sess, mcpgate.StateDisconnected, nil)
		return
	}
	s.drop(sess, mcpgate.StateError, classify(ctx, "checking the connection", err, obs))
}

// probeWithin checks sess as probe does, waiting for the verdict only as
// long as ctx lasts: a caller's deadline holds even when the check hangs,
// which then goes on in the background to its own bound.
func (s *server) probeWithin(ctx context.Context, sess *session) {
	if sess.ctx.Err() != nil {
		return // closing: nothing to check, and its goroutines are being waited for
	}
	done := make(chan struct{})
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		defer close(done)
		s.probe(sess)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// streamLost checks the session in the background when an event stream
// failed. Checks do not pile up: one in flight covers every loss until it
// ends.
func (s *server) streamLost(sess *session, err error) {
	if sess.ctx.Err() != nil || !sess.live.Load() {
		return
	}
	if !sess.probing.TryLock() {
		return
	}
	sess.probing.Unlock()
	s.m.logf(s.id, "%v; checking the connection", err)
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		s.probe(sess)
	}()
}

// disconnect closes the live session and cancels any in-flight attempt.
func (s *server) disconnect(state mcpgate.State) { s.barrier(state, nil) }

// barrier is the disconnect barrier. It bumps the epoch (so no attempt
// started before it can install a session), cancels the in-flight attempt,
// waits for the lifecycle lock, closes the live session, and applies change
// (under mu) before anyone can connect again. When it returns, no session
// from before it is open.
func (s *server) barrier(state mcpgate.State, change func()) {
	s.mu.Lock()
	s.epoch++
	if s.attempt != nil {
		s.attempt.cancel(errSuperseded)
		s.attempt = nil // callers from now on start a fresh attempt, queued behind us
	}
	s.mu.Unlock()

	s.lifecycle.Lock()
	s.mu.Lock()
	sess := s.sess
	s.sess = nil
	s.state = state
	s.err = nil
	if change != nil {
		change()
	}
	s.mu.Unlock()
	if sess != nil {
		sess.close()
	}
	s.lifecycle.Unlock()
	s.notify()
}

// knownProtocol is the version the last connection negotiated.
func (s *server) knownProtocol() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known
}

func (s *server) rememberProtocol(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known = v
}

// elicit routes a form elicitation, asked by the server during a request
// (session era) or in an InputRequiredResult (2026-07-28), to whoever can
// ask the person.
func (s *server) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p == nil || p.Mode == "url" || s.m.opts.Elicit == nil {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	schema, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err := s.m.opts.Elicit(ctx, &ElicitRequest{Server: s.id, Message: p.Message, Schema: schema})
	if err != nil || res == nil {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return res, nil
}

// status returns a snapshot.
func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		ID:      s.id,
		Name:    s.cfg.DisplayName(),
		URL:     s.cfg.URL,
		Auth:    s.cfg.Auth,
		Enabled: s.cfg.Enabled,
		State:   s.state,
		Error:   info(s.err),
	}
	if s.sess != nil {
		st.ConnectionID = s.sess.id
		st.ProtocolVersion = s.sess.protocol
		st.ServerTitle = s.sess.title
		st.ServerInstructions = s.sess.instructions
	}
	if s.sess == nil && s.heldCountsLocked(&st) {
		st.Cached, st.CachedAt = true, s.held.fetchedAt
		st.ServerTitle, st.ServerInstructions = s.held.title, s.held.instructions
	} else {
		s.catalog.fill(&st, &s.cfg)
		// A kind never listed is unknown, not empty: 0 is only said of
		// a list that came back empty or a server that offers none.
		counts := [numKinds]*int{&st.Tools, &st.Prompts, &st.Resources, &st.Templates}
		for k := range numKinds {
			if !s.catalog.m[k].loaded && (s.sess == nil || s.sess.supports(k)) {
				*counts[k] = -1
			}
		}
	}
	return st
}

func (s *server) notify() {
	cb := s.m.opts.OnStateChange
	if cb == nil {
		return
	}
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	cb(s.status())
}
