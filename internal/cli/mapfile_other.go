//go:build !unix

package cli

import "os"

// mapFile reads the file at path: mapping it is done only on Unix.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }

// unmapFile has nothing to undo: mapFile read the file.
func unmapFile([]byte) {}
