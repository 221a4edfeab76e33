package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

// Exit codes of the mcpgate command.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	exitAuth  = 4
)

// exitCode is the one place that decides how an error ends the process:
// usage errors and invalid or unsupported input 2, authorization needed 4, anything else 1.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if _, ok := errors.AsType[*UsageError](err); ok {
		return exitUsage
	}
	switch mcpgate.CategoryOf(err) {
	case mcpgate.CategoryInvalid, mcpgate.CategoryUnsupported:
		// Unsupported comes only from input: a stdio or SSE entry.
		return exitUsage
	case mcpgate.CategoryAuth:
		return exitAuth
	}
	return exitFail
}

// UsageError is a mistake in how mcpgate was invoked: unknown command,
// bad flag, wrong number of arguments, malformed argument.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// reportedError says the command has already shown the person what went
// wrong (a tool's own error text, one line per failed server); only the
// exit code of Err remains to be decided.
type reportedError struct {
	Err error
}

func (e *reportedError) Error() string { return e.Err.Error() }
func (e *reportedError) Unwrap() error { return e.Err }

// errToolFailed is the cause of a reported tool result with isError set.
var errToolFailed = errors.New("the tool reported an error")

// argsBetween checks the number of positional arguments, naming the
// command's usage line when it is wrong.
func argsBetween(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		want := fmt.Sprintf("%d", min)
		switch {
		case max < 0:
			want = fmt.Sprintf("at least %d", min)
		case max != min:
			want = fmt.Sprintf("%d to %d", min, max)
		}
		return usageErrorf("%s takes %s argument(s), got %d (usage: %s)", cmd.CommandPath(), want, len(args), cmd.UseLine())
	}
}

func exactArgs(n int) cobra.PositionalArgs { return argsBetween(n, n) }

// enumFlag is a string flag that accepts only the listed values, so a typo
// is a usage error at parse time.
type enumFlag struct {
	value   string
	allowed []string
}

func newEnumFlag(def string, allowed ...string) *enumFlag {
	return &enumFlag{value: def, allowed: allowed}
}

func (f *enumFlag) String() string { return f.value }
func (f *enumFlag) Type() string   { return strings.Join(f.allowed, "|") }

func (f *enumFlag) Set(v string) error {
	if !slices.Contains(f.allowed, v) {
		return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
	}
	f.value = v
	return nil
}
