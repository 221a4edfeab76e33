//go:build !unix && !windows

package sqlite

import (
	"os"
	"sync"
)

// Without flock, locks exclude only within this process.
var held sync.Map

func tryLock(f *os.File) (bool, error) {
	_, busy := held.LoadOrStore(f.Name(), true)
	return !busy, nil
}

func unlock(f *os.File) { held.Delete(f.Name()) }
