package lazyregexp

import (
	"testing"

	"github.com/mcpgate/mcpgate/internal/testbin"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	m.Run()
}
