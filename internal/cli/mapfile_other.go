//go:build !unix

package cli

import "os"

// mapFile reads the file at path: mapping it is done only on Unix.
func mapFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}
