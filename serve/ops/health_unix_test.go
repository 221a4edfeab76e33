//go:build unix

package ops_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/serve/ops"
)

// Sending a signal to oneself is Unix only (syscall.Kill); the drain on
// SIGTERM is the same code everywhere.
func TestSIGTERMStartsTheDrain(t *testing.T) {
	h := ops.NewHealth(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- ops.Serve(ctx, &http.Server{Handler: h.Healthz(), ReadHeaderTimeout: time.Second}, ln, &ops.DrainOptions{Health: h})
	}()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not drain")
	}
	if !h.IsDraining() {
		t.Error("health not draining after SIGTERM")
	}
}
