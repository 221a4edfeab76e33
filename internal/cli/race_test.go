//go:build race

package cli

// raceEnabled says the tests run with the race detector, so the mcpgate
// binary they start is built with it too.
const raceEnabled = true
