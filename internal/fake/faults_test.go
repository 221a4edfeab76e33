package fake_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// faultClient sends raw requests through a fault proxy, on connections of
// its own that are closed when the test ends.
func faultClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// tallyCall is a tools/call of tally with key, and the headers that make it
// a request of version (a session era one needs sessionID).
func tallyCall(t *testing.T, endpoint, version, sessionID, key string) *http.Request {
	t.Helper()
	meta := ""
	if version >= "2026-07-28" {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tally","arguments":{"key":%q}%s}}`, key, meta)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "tally")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	return req
}

// openSession initializes a session-era session at endpoint (directly, not
// through a proxy) and returns its ID.
func openSession(t *testing.T, endpoint string) string {
	t.Helper()
	resp := post(t, endpoint, initializeBody, nil)
	io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize issued no session")
	}
	resp = post(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.Header{
		"Mcp-Session-Id": {id}, "Mcp-Protocol-Version": {"2025-11-25"}})
	io.Copy(io.Discard, resp.Body)
	return id
}

// TestFaultProxyInjects: each fault does to a tools/call what it says,
// in both generations, and the proxy's record says whether the server
// saw the call, which the server's own count confirms.
func TestFaultProxyInjects(t *testing.T) {
	t.Parallel()
	const result = `"content":[{"type":"text","text":"`
	type outcome struct {
		resp *http.Response
		err  error // from sending
		body []byte
		rerr error // from reading the body
	}
	cases := []struct {
		fault     fake.Fault
		forwarded bool
		check     func(t *testing.T, o outcome)
	}{
		{fake.FaultNone, true, func(t *testing.T, o outcome) { wholeAnswer(t, o.err, o.rerr, o.body, 1) }},
		{fake.FaultLatency, true, func(t *testing.T, o outcome) { wholeAnswer(t, o.err, o.rerr, o.body, 1) }},
		{fake.FaultSlowloris, true, func(t *testing.T, o outcome) { wholeAnswer(t, o.err, o.rerr, o.body, 1) }},
		{fake.FaultDuplicate, true, func(t *testing.T, o outcome) { wholeAnswer(t, o.err, o.rerr, o.body, 2) }},
		{fake.FaultStall, false, func(t *testing.T, o outcome) {
			if o.err == nil {
				t.Errorf("a stalled request was answered %d", o.resp.StatusCode)
			}
		}},
		{fake.FaultResetBefore, false, func(t *testing.T, o outcome) {
			if o.err == nil {
				t.Errorf("the request was answered %d", o.resp.StatusCode)
			}
		}},
		{fake.FaultResetAfter, true, func(t *testing.T, o outcome) {
			if o.err == nil {
				t.Errorf("the request was answered %d", o.resp.StatusCode)
			}
		}},
		{fake.Fault503, false, func(t *testing.T, o outcome) {
			if o.err != nil || o.resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("answer = %v, %v; want 503", o.resp, o.err)
			}
		}},
		{fake.Fault429, false, func(t *testing.T, o outcome) {
			if o.err != nil || o.resp.StatusCode != http.StatusTooManyRequests || o.resp.Header.Get("Retry-After") == "" {
				t.Errorf("answer = %v, %v; want 429 with Retry-After", o.resp, o.err)
			}
		}},
		{fake.FaultTruncate, true, func(t *testing.T, o outcome) {
			if o.err != nil || o.rerr == nil {
				t.Fatalf("send: %v, read: %v; want the body to break", o.err, o.rerr)
			}
			if bytes.Contains(o.body, []byte("\n\n")) || bytes.Contains(o.body, []byte(result)) {
				t.Errorf("a truncated answer holds a whole event: %q", o.body)
			}
		}},
		{fake.FaultOversized, true, func(t *testing.T, o outcome) {
			wholeAnswer(t, o.err, o.rerr, o.body, 1)
			if len(o.body) < 100<<10 {
				t.Errorf("oversized answer is %d bytes", len(o.body))
			}
		}},
	}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, c := range cases {
			t.Run(version+"/"+string(c.fault), func(t *testing.T) {
				srv := fake.Start(t, &fake.Options{Tally: true})
				p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{
					Plan: func(r *fake.FaultRequest) fake.Fault {
						if r.Tool == "tally" {
							return c.fault
						}
						return fake.FaultNone
					},
					OversizedBytes: 100 << 10,
				})
				session := ""
				if version < "2026-07-28" {
					session = openSession(t, srv.URL)
				}
				var o outcome
				req := tallyCall(t, p.URL, version, session, "k")
				if c.fault == fake.FaultStall {
					// The client gives up once the proxy holds the request.
					ctx, cancel := context.WithCancel(req.Context())
					defer cancel()
					req = req.WithContext(ctx)
					go func() {
						defer cancel()
						for len(p.Records()) == 0 && ctx.Err() == nil {
							time.Sleep(time.Millisecond)
						}
					}()
				}
				o.resp, o.err = faultClient(t).Do(req)
				if o.err == nil {
					o.body, o.rerr = io.ReadAll(o.resp.Body)
					o.resp.Body.Close()
				}
				c.check(t, o)

				recs := p.Records()
				if len(recs) != 1 || recs[0].Fault != c.fault || recs[0].Tool != "tally" || string(recs[0].Arguments) != `{"key":"k"}` {
					t.Fatalf("records = %+v, want one tally call with %s", recs, c.fault)
				}
				if recs[0].Forwarded != c.forwarded {
					t.Errorf("forwarded = %v, want %v", recs[0].Forwarded, c.forwarded)
				}
				if recs[0].Sent != c.forwarded {
					t.Errorf("sent = %v, want %v", recs[0].Sent, c.forwarded)
				}
				if n := p.Injected()[c.fault]; n != 1 {
					t.Errorf("injected %s %d times, want 1", c.fault, n)
				}
				// What the server saw agrees with the record. A truncated
				// answer may cancel the call on the server (2026-07-28
				// ends a call with its request), so it may not finish.
				tally := srv.Tally("k")
				if c.forwarded && c.fault != fake.FaultTruncate {
					waitFor(t, "the call to finish", func() bool { return srv.Tally("k").Finished == 1 })
				}
				if !c.forwarded && tally.Started != 0 {
					t.Errorf("the server ran a call the proxy did not forward: %+v", tally)
				}
				if tally.Started > 1 {
					t.Errorf("the server ran the call %d times", tally.Started)
				}
			})
		}
	}
}

// wholeAnswer checks a tally answer arrived intact, its response event
// copies times.
func wholeAnswer(t *testing.T, err, rerr error, body []byte, copies int) {
	t.Helper()
	if err != nil || rerr != nil {
		t.Fatalf("send: %v, read: %v", err, rerr)
	}
	if n := bytes.Count(body, []byte(`"id":7,"result":{`)); n != copies {
		t.Errorf("the answer holds %d responses, want %d: %.300q", n, copies, body)
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Errorf("the answer does not end an event: %.300q", body)
	}
}

// TestFaultProxyJSONAnswers: an application/json answer is truncated in
// the middle of the body and padded with whitespace, and is not
// duplicated (which has no meaning without events).
func TestFaultProxyJSONAnswers(t *testing.T) {
	t.Parallel()
	for _, fault := range []fake.Fault{fake.FaultTruncate, fake.FaultOversized, fake.FaultDuplicate} {
		t.Run(string(fault), func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{JSONResponse: true, Tally: true})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{
				Plan:           func(*fake.FaultRequest) fake.Fault { return fault },
				OversizedBytes: 10 << 10,
			})
			resp, err := faultClient(t).Do(tallyCall(t, p.URL, "2026-07-28", "", "j"))
			if err != nil {
				t.Fatal(err)
			}
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			trimmed := bytes.TrimLeft(body, " ")
			switch fault {
			case fake.FaultTruncate:
				if rerr == nil || bytes.HasSuffix(bytes.TrimSpace(body), []byte("}")) {
					t.Errorf("read %q, %v; want half an answer and an error", body, rerr)
				}
			case fake.FaultOversized:
				if rerr != nil || len(body)-len(trimmed) < 10<<10 || !bytes.HasPrefix(trimmed, []byte(`{"jsonrpc"`)) {
					t.Errorf("read %d bytes (%d padding), %v", len(body), len(body)-len(trimmed), rerr)
				}
			case fake.FaultDuplicate:
				if rerr != nil || bytes.Count(body, []byte(`"result"`)) != 1 {
					t.Errorf("read %q, %v; want the answer once", body, rerr)
				}
				if got := p.Injected(); got[fake.FaultNone] != 1 || got[fake.FaultDuplicate] != 0 {
					t.Errorf("injected %v, want the duplicate counted as none", got)
				}
			}
		})
	}
}

// TestFaultProxyRandomPlanIsSeeded: the random plan draws the same faults
// for the same seed, mixes kinds, and counts each request once.
func TestFaultProxyRandomPlanIsSeeded(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{JSONResponse: true, Tally: true})
	opts := &fake.FaultOptions{Seed: 42, Rate: 0.5, Kinds: []fake.Fault{fake.Fault503, fake.Fault429, fake.FaultLatency}, Latency: 1}
	var runs [2][]fake.Fault
	for i := range runs {
		p := fake.StartFaultProxy(t, srv.URL, opts)
		hc := faultClient(t)
		for n := range 40 {
			resp, err := hc.Do(tallyCall(t, p.URL, "2026-07-28", "", fmt.Sprint(i, "-", n)))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		for _, r := range p.Records() {
			runs[i] = append(runs[i], r.Fault)
		}
		total := 0
		for _, n := range p.Injected() {
			total += n
		}
		if total != 40 || len(p.Injected()) < 3 {
			t.Errorf("injected %v, want 40 requests of several kinds", p.Injected())
		}
	}
	if fmt.Sprint(runs[0]) != fmt.Sprint(runs[1]) {
		t.Errorf("the same seed planned\n%v\nand\n%v", runs[0], runs[1])
	}
}
