package oauth_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	testbin.Waiting(8)
	goleak.VerifyTestMain(m)
}
