//go:build race && unix

package testbin

import (
	"os"
	"strings"
	"syscall"
)

// skipExitPause re-runs this test binary in its own process (exec, same
// pid, same arguments and output) with the race detector told not to
// pause at exit, unless GORACE already says how long to pause.
func skipExitPause() {
	current, set := os.LookupEnv("GORACE")
	if strings.Contains(current, "atexit_sleep_ms") {
		return // re-run already, or the person's own choice
	}
	exe, err := os.Executable()
	if err != nil {
		return // the pause is slow, not wrong
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	opts := "atexit_sleep_ms=0"
	if set && strings.TrimSpace(current) != "" {
		opts = strings.TrimSpace(current) + " " + opts
	}
	_ = syscall.Exec(exe, os.Args, append(env, "GORACE="+opts)) // returns only on failure
}
