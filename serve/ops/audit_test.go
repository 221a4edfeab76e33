package ops_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
)

// TestAuditNeverWritesACanary passes a secret through every way one could
// reach an audit entry — an error's text and code, a presented key, URLs,
// credential-shaped identifiers, made-up events, reasons and outcomes —
// and reads the file back.
func TestAuditNeverWritesACanary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := ops.OpenJSONLines(path)
	if err != nil {
		t.Fatal(err)
	}
	a := ops.NewAudit(sink, nil)
	leak := &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: canary, Message: "refresh_token=" + canary + " was refused", Err: errors.New(canary)}
	a.Record(ops.AuditEntry{Event: ops.EventSignInStarted, Tenant: "acme", User: "alice@example.com", Server: "docs"})
	a.Record(ops.AuditEntry{Event: ops.EventSignInFailed, Tenant: "acme", User: "alice@example.com", Server: "docs", Reason: ops.ReasonOf(leak)})
	a.Record(ops.AuditEntry{Event: ops.EventSignInFailed, Tenant: "acme", Server: "docs",
		Reason: ops.ReasonOf(&mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_grant", Message: canary})})
	a.Record(ops.AuditEntry{Event: ops.EventKeyRefused, Tenant: "acme", KeyID: "mgk_" + canary + "_" + canary, Reason: string(inbound.ReasonWrongSecret)})
	a.Record(ops.AuditEntry{Event: ops.EventKeyRevoked, Tenant: "acme", User: "Bearer " + canary, KeyID: "sk-" + canary})
	a.Record(ops.AuditEntry{Event: ops.EventLogout, Tenant: "acme", User: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ." + canary})
	a.Record(ops.AuditEntry{Event: ops.EventPolicyRefused, Tenant: "acme", Server: "docs", Reason: ops.ReasonNetwork,
		Target: "https://user:" + canary + "@169.254.169.254/latest?token=" + canary, Remote: "203.0.113.7:5123"})
	a.Record(ops.AuditEntry{Event: ops.AuditEvent(canary), Outcome: canary, Reason: canary, TraceID: canary, Tenant: "acme"})
	a.Record(ops.AuditEntry{Event: ops.EventKeyCreated, Tenant: "acme\n" + "api_key=" + canary, KeyID: "key_01"})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), canary) || strings.Contains(string(data), "8f41c2d9") {
		t.Fatalf("the audit log holds the canary:\n%s", data)
	}
	info, _ := os.Stat(path)
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("audit file mode %v, want 0600", perm)
	}
	var entries []ops.AuditEntry
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var e ops.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	if len(entries) != 9 {
		t.Fatalf("%d entries, want 9:\n%s", len(entries), data)
	}
	// What is kept is what an auditor needs.
	checks := []struct {
		i    int
		want ops.AuditEntry
	}{
		{0, ops.AuditEntry{Event: ops.EventSignInStarted, Outcome: ops.AuditOK, Tenant: "acme", User: "alice@example.com", Server: "docs"}},
		{1, ops.AuditEntry{Event: ops.EventSignInFailed, Outcome: ops.AuditFailed, Tenant: "acme", User: "alice@example.com", Server: "docs", Reason: "auth"}},
		{2, ops.AuditEntry{Event: ops.EventSignInFailed, Outcome: ops.AuditFailed, Tenant: "acme", Server: "docs", Reason: "invalid_grant"}},
		{3, ops.AuditEntry{Event: ops.EventKeyRefused, Outcome: ops.AuditRefused, Tenant: "acme", KeyID: "[redacted]", Reason: "wrong-secret"}},
		{4, ops.AuditEntry{Event: ops.EventKeyRevoked, Outcome: ops.AuditOK, Tenant: "acme", User: "[redacted]", KeyID: "[redacted]"}},
		{5, ops.AuditEntry{Event: ops.EventLogout, Outcome: ops.AuditOK, Tenant: "acme", User: "[redacted]"}},
		{6, ops.AuditEntry{Event: ops.EventPolicyRefused, Outcome: ops.AuditRefused, Tenant: "acme", Server: "docs", Reason: "network", Target: "169.254.169.254", Remote: "203.0.113.7"}},
		{7, ops.AuditEntry{Event: "other", Outcome: "other", Reason: "other", Tenant: "acme"}},
		{8, ops.AuditEntry{Event: ops.EventKeyCreated, Outcome: ops.AuditOK, Tenant: "[redacted]", KeyID: "key_01"}},
	}
	for _, c := range checks {
		got := entries[c.i]
		if got.Time.IsZero() || got.Time.Location() != time.UTC {
			t.Errorf("entry %d time %v: want set, in UTC", c.i, got.Time)
		}
		got.Time = time.Time{}
		if got != c.want {
			t.Errorf("entry %d = %+v\nwant       %+v", c.i, got, c.want)
		}
	}
}

// TestSlowSinkNeverSlowsRecord: while the sink is stuck, Record returns at
// once; what does not fit the queue is dropped, counted and reported.
func TestSlowSinkNeverSlowsRecord(t *testing.T) {
	metrics := newTestMetrics()
	sink := &memSink{block: make(chan struct{})}
	a := ops.NewAudit(sink, &ops.AuditOptions{QueueSize: 8, Metrics: metrics})
	const n = 1000
	start := time.Now()
	for range n {
		a.Record(ops.AuditEntry{Event: ops.EventKeyUsed, Tenant: "acme", KeyID: "key_01"})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("%d Records with a stuck sink took %v", n, d)
	}
	close(sink.block)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !sink.closed {
		t.Error("Close did not close the sink")
	}
	written, dropped := 0, 0
	for _, e := range sink.all() {
		switch e.Event {
		case ops.EventKeyUsed:
			written++
		case ops.EventAuditDropped:
			dropped += e.Count
		}
	}
	// The writer holds one batch while the queue fills again. The batch is
	// what it took without waiting, and Records racing with its taking
	// can refill the queue as it drains (a CI run wrote 18, one more than
	// twice the queue and one), so the bound is a batch's (256) and the
	// queue: the rest must be dropped and reported.
	if written+dropped != n || dropped == 0 || written > 256+8 {
		t.Errorf("written %d, reported dropped %d; want them to add up to %d, with at most %d written", written, dropped, n, 256+8)
	}
	if got := value(t, scrape(t, metrics.Handler()), "mcpgate_audit_dropped_total", nil); int(got) != dropped {
		t.Errorf("audit_dropped_total = %v, want %d", got, dropped)
	}
	a.Record(ops.AuditEntry{Event: ops.EventLogout}) // after Close: dropped, no panic
}

func TestKeyUseIsWrittenOncePerInterval(t *testing.T) {
	clk := newClock()
	sink := &memSink{}
	a := ops.NewAudit(sink, &ops.AuditOptions{KeyUseInterval: time.Hour})
	a.SetNow(clk.Now)
	for range 3 {
		a.KeyUsed(ops.AuditEntry{Tenant: "acme", User: "alice", KeyID: "key_01"})
	}
	a.KeyUsed(ops.AuditEntry{Tenant: "acme", KeyID: "key_02"})
	clk.Advance(time.Hour)
	a.KeyUsed(ops.AuditEntry{Tenant: "acme", User: "alice", KeyID: "key_01"})
	a.Close(context.Background())
	var got []string
	for _, e := range sink.all() {
		got = append(got, e.KeyID+"×"+itoa(e.Count))
	}
	if strings.Join(got, " ") != "key_01×1 key_02×1 key_01×3" {
		t.Errorf("key use entries = %v, want the first use of each key, then key_01 an hour later for the 3 uses since", got)
	}
}

// TestInboundDecisions: inbound authentication's audit hook becomes key
// use and refusals, coalesced, with its reasons kept.
func TestInboundDecisions(t *testing.T) {
	clk := newClock()
	sink := &memSink{}
	a := ops.NewAudit(sink, nil)
	a.SetNow(clk.Now)
	at := clk.Now()
	for range 3 {
		a.Inbound(inbound.Event{Time: at, Accepted: true, Via: inbound.ViaKey, KeyID: "abcdefghijklmnop", Tenant: "acme", User: "alice", RemoteAddr: "192.0.2.1:4000"})
	}
	a.Inbound(inbound.Event{Time: at, Accepted: true, Via: inbound.ViaJWT, Tenant: "acme", User: "bob"})
	for range 50 { // a scanner
		a.Inbound(inbound.Event{Time: at, Reason: inbound.ReasonUnknownKey, Via: inbound.ViaKey, KeyID: "zzzzzzzzzzzzzzzz", RemoteAddr: "198.51.100.9:1"})
	}
	a.Inbound(inbound.Event{Time: at, Reason: inbound.ReasonMissing, RemoteAddr: "198.51.100.9:2"})
	a.Inbound(inbound.Event{Time: at, Reason: inbound.ReasonUnavailable})
	clk.Advance(time.Second)
	a.Inbound(inbound.Event{Time: clk.Now(), Reason: inbound.ReasonUnknownKey, Via: inbound.ViaKey, KeyID: "yyyyyyyyyyyyyyyy"})
	a.Close(context.Background())

	var got []string
	for _, e := range sink.all() {
		got = append(got, string(e.Event)+"/"+e.Outcome+"/"+e.Reason+"/"+e.KeyID+"/"+e.Remote+"×"+itoa(e.Count))
	}
	want := []string{
		"key.used/ok//abcdefghijklmnop/192.0.2.1×1",
		"key.refused/refused/unknown-key/zzzzzzzzzzzzzzzz/198.51.100.9×1",
		"credential.refused/refused/missing//198.51.100.9×1",
		"key.refused/refused/unknown-key/yyyyyyyyyyyyyyyy/×50",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJSONLinesReopenFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sink, err := ops.OpenJSONLines(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	sink.WriteAudit([]ops.AuditEntry{{Event: ops.EventLogout, Tenant: "before"}})
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := sink.Reopen(); err != nil {
		t.Fatal(err)
	}
	sink.WriteAudit([]ops.AuditEntry{{Event: ops.EventLogout, Tenant: "after"}})
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !strings.Contains(string(old), `"before"`) || strings.Contains(string(old), `"after"`) || !strings.Contains(string(cur), `"after"`) {
		t.Errorf("rotated file %q, new file %q", old, cur)
	}
}

func TestNilAuditIsSafe(t *testing.T) {
	var a *ops.Audit
	a.Record(ops.AuditEntry{Event: ops.EventLogout})
	a.KeyUsed(ops.AuditEntry{})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
