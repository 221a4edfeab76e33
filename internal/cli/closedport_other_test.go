//go:build !unix

package cli

import (
	"net"
	"testing"
)

// closedAddr is a loopback address nothing answers on: one a listener had
// and gave back (another test may be given it meanwhile, which the unix
// version rules out).
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
