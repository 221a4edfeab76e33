package manager

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// stallWhen is a fault plan that holds the requests of one JSON-RPC
// method and passes the rest.
func stallWhen(method string) func(*fake.FaultRequest) fake.Fault {
	return func(r *fake.FaultRequest) fake.Fault {
		if r.Method == method {
			return fake.FaultStall
		}
		return fake.FaultNone
	}
}

// TestConnectTimeoutBoundsTheFirstCatalog: a server that accepts the
// connection and never answers tools/list fails the connect when
// ConnectTimeout runs out; the attempt does not hang for every caller
// after it.
func TestConnectTimeoutBoundsTheFirstCatalog(t *testing.T) {
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Versions: gen.versions})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: stallWhen("tools/list")})
			m := newManager(t, &Options{ConnectTimeout: 200 * time.Millisecond}, cfg("s", p.URL))

			// The caller's own patience is far longer: only the connect's
			// bound can end this in time.
			err := m.Connect(ctxT(t, time.Minute), "s")
			if err == nil {
				t.Fatal("connected to a server that never listed its tools")
			}
			st := mustStatus(t, m, "s")
			if st.State != mcpgate.StateError || st.Error == nil || st.Error.Category != mcpgate.CategoryTimeout {
				t.Errorf("status = %s %+v, want error of category timeout", st.State, st.Error)
			}
		})
	}
}
