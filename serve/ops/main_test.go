package ops_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	goleak.VerifyTestMain(m)
}
