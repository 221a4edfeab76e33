package cli

import (
	"strings"
	"testing"
)

// serve's HTTP flags mean nothing without --http, and a replica does not
// start without the sealing key every replica shares: both are usage
// errors that say what to do, before anything listens or connects.
func TestServeHTTPRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	h, path := keysHarness(t, "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	for _, args := range [][]string{
		{"serve", "--deploy", path},
		{"serve", "--ops-addr", "127.0.0.1:0"},
		{"serve", "--audit-log", "-"},
	} {
		r := h.mustRun(2, args...)
		if !strings.Contains(r.stderr, "--http") {
			t.Errorf("%v: the error does not point to --http:\n%s", args, r.stderr)
		}
	}
	delete(h.env, "MCPGATE_SECRET_KEY")
	r := h.mustRun(2, "serve", "--http", "127.0.0.1:0", "--deploy", path)
	if !strings.Contains(r.stderr, "MCPGATE_SECRET_KEY is not set") || !strings.Contains(r.stderr, "every replica needs the same key") {
		t.Errorf("without the key:\n%s", r.stderr)
	}
	h.env["MCPGATE_SECRET_KEY"] = "not base64 of 32 bytes"
	r = h.mustRun(2, "serve", "--http", "127.0.0.1:0", "--deploy", path)
	if !strings.Contains(r.stderr, "MCPGATE_SECRET_KEY is not the base64 of a 32-byte key") || strings.Contains(r.stderr, "not base64 of 32 bytes") {
		t.Errorf("with a bad key:\n%s", r.stderr)
	}
}
