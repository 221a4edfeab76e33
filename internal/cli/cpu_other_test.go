//go:build !unix

package cli

import "time"

// selfCPU is not measured here.
func selfCPU() time.Duration { return 0 }
