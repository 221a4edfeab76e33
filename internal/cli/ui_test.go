package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"
)

func TestUIListenAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:0":    "127.0.0.1:0",
		"localhost:8765": "127.0.0.1:8765",
		"[::1]:9000":     "[::1]:9000",
		"127.0.0.2:80":   "127.0.0.2:80",
	} {
		if got, err := uiListenAddr(addr); err != nil || got != want {
			t.Errorf("uiListenAddr(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.2:80", "[::]:80", "example.com:80", "127.0.0.1"} {
		if _, err := uiListenAddr(addr); err == nil {
			t.Errorf("uiListenAddr(%q): want an error", addr)
		}
	}
}

func TestUIRefusesANetworkAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.mustRun(2, "ui", "--addr", "0.0.0.0:0", "--no-browser")
	if !strings.Contains(r.stderr, "loopback") {
		t.Errorf("stderr does not say why:\n%s", r)
	}
}

// TestUIServesUntilInterrupted: ui prints the address, serves the page
// there (with the token, not without), and ends cleanly on Ctrl-C.
func TestUIServesUntilInterrupted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, outW := io.Pipe()
	var errOut strings.Builder
	streams := &IO{In: strings.NewReader(""), Out: outW, ErrOut: &errOut}
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"--config", h.cfg, "--data-dir", h.dataDir, "ui", "--no-browser"}, streams, func(k string) string { return h.env[k] })
		outW.Close()
		done <- code
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	go io.Copy(io.Discard, out)
	pageURL := strings.TrimSpace(line)
	if !strings.HasPrefix(pageURL, "http://127.0.0.1:") || !strings.Contains(pageURL, "/?token=") {
		t.Fatalf("printed %q", line)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: tr, Jar: jar}

	bare := pageURL[:strings.Index(pageURL, "?")]
	resp, err := (&http.Client{Transport: tr}).Get(bare + "api/servers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %s, want 403", resp.Status)
	}
	resp, err = client.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "mcpgate settings") {
		t.Errorf("with the token: %s\n%s", resp.Status, body)
	}

	// The log drawer reads the store's log.
	resp, err = client.Get(bare + "api/log")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"entries"`) {
		t.Errorf("log: %s\n%s", resp.Status, body)
	}

	cancel() // Ctrl-C
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after Ctrl-C; stderr:\n%s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ui did not stop after Ctrl-C")
	}
}
