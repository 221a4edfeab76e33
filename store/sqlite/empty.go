package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// A new store is created with the schema, which has SQLite parse every
// statement of it: 3 ms, and 26 ms under the race detector, which the test
// suite's several hundred new stores paid in full. From the second store a
// process creates on, the new file is a copy of an empty store instead,
// made once per process: a write of some hundred kilobytes.

// created counts the stores this process found missing.
var created atomic.Int32

// image is the file of a store with the current schema and no rows.
var image struct {
	once sync.Once
	data []byte
	err  error
}

// placeEmpty puts a copy of an empty store at path when nothing is there,
// from the second store this process creates on. It never replaces a
// file: the copy is linked into place, so a store that another process
// (or handle) created a moment before is the one opened. Whatever fails
// leaves path to open's own creation.
func placeEmpty(path string) {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	if created.Add(1) == 1 {
		return // most processes create one store, and need no copy
	}
	dir := filepath.Dir(path)
	image.once.Do(func() { image.data, image.err = emptyImage(dir) })
	if image.err != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".mcpgate-new-*.db") // mode 0600
	if err != nil {
		return
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(image.data)
	serr := f.Sync()
	if cerr := f.Close(); werr != nil || serr != nil || cerr != nil {
		return
	}
	os.Link(f.Name(), path) // fails if path exists now: that store is kept
}

// emptyImage creates a store in a directory of its own under dir, closes
// it, and returns its file: the schema, WAL mode and the schema version,
// no rows.
func emptyImage(dir string) ([]byte, error) {
	tmp, err := os.MkdirTemp(dir, ".mcpgate-schema-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "empty.db")
	s, err := open(path, nil)
	if err != nil {
		return nil, err
	}
	_, err = s.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
