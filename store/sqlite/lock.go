package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// lockPoll is how often a waiting Lock tries again.
const lockPoll = 25 * time.Millisecond

// Lock takes a named lock shared by every process using this database: an
// exclusive lock (flock, or LockFileEx on Windows) on a file beside it.
// The kernel releases it when its holder dies, and separate opens of the
// file exclude each other even in one process, so goroutines and
// processes wait alike.
func (s *Store) Lock(ctx context.Context, name string) (func(), error) {
	if err := os.MkdirAll(s.lockDir, 0o700); err != nil {
		return nil, fmt.Errorf("taking lock: %w", err)
	}
	sum := sha256.Sum256([]byte(name))
	path := filepath.Join(s.lockDir, hex.EncodeToString(sum[:16]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("taking lock: %w", err)
	}
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("taking lock: %w", err)
		}
		if ok {
			return func() { unlock(f); f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
