package hosted_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(removingBinary{m})
}

// removingBinary runs the tests, then removes the mcpgate binary they
// built, if any.
type removingBinary struct{ m *testing.M }

func (r removingBinary) Run() int {
	code := r.m.Run()
	testbin.Remove()
	return code
}
