package manager

import (
	"context"
	"net/http/httptest"
	"testing"
)

// TestKeepConnectionOfAnEndedRequest: a request whose caller's context
// has ended before it is sent gets a context that has ended too, at once.
// A context.AfterFunc of an ended context runs in a goroutine of its own,
// and the request could go out before that ran: under load, a call's next
// round, sent after the call's deadline, reached the server and was
// answered, so the call did not time out.
func TestKeepConnectionOfAnEndedRequest(t *testing.T) {
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, "POST", "http://127.0.0.1/mcp", nil)
		got, k := keepConnection(req)
		if got.Context().Err() == nil {
			t.Fatal("the request's own context had not ended with its caller's")
		}
		k.release()
	}
}
