package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// flagError says what is wrong with a flag in mcpgate's words: pflag's
// "invalid argument" errors carry the parser's own message
// (`strconv.ParseInt: parsing "x": invalid syntax`, `time: missing unit`),
// which names a Go function instead of what the flag wants.
func flagError(err error) error {
	if e, ok := errors.AsType[*pflag.InvalidValueError](err); ok {
		f := e.GetFlag()
		return usageErrorf("--%s %q: %s", f.Name, e.GetValue(), flagWants(f, errors.Unwrap(e)))
	}
	return &UsageError{Err: err}
}

// flagWants is what a flag of f's type accepts, in words.
func flagWants(f *pflag.Flag, cause error) string {
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		if errors.Is(cause, strconv.ErrRange) {
			return "is too large"
		}
		return "must be a whole number"
	case "float32", "float64":
		return "must be a number"
	case "duration":
		return "must be a duration with a unit, such as 30s, 5m or 1h30m"
	case "bool":
		return "must be true or false"
	}
	if _, ours := f.Value.(*enumFlag); ours && cause != nil {
		return cause.Error() // enumFlag's own words
	}
	return fmt.Sprintf("is not a valid %s", f.Value.Type())
}
