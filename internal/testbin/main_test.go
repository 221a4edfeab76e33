package testbin_test

import (
	"os"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testbin"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	os.Exit(m.Run())
}
