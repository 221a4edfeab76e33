// Package atomicfile replaces a file so that whoever reads it sees the old
// contents or the new, never a part: mcpgate's config, and the agent
// hosts' config files that mcpgate install edits.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same folder,
// synced, given mode, then renamed over path with rename (os.Rename, or a
// test's). The temporary file is created 0600, so what it holds (a header
// value, a token in a host's file) is readable by nobody else even for
// the moment before the rename. The folder is synced afterwards, best
// effort, so that the rename itself is durable where the system can.
func Write(path string, data []byte, mode fs.FileMode, rename func(oldpath, newpath string) error) (err error) {
	return write(path, data, mode, rename, true)
}

// WriteCache is Write without syncing, 0600, for a file whose loss costs
// only time (a cache) and whose reader checks what it reads: after a
// crash it may hold the old contents, the new, or neither, but a reader
// never sees a write in progress. A sync can take a tenth of a second on
// a busy disk.
func WriteCache(path string, data []byte) error {
	return write(path, data, 0o600, os.Rename, false)
}

func write(path string, data []byte, mode fs.FileMode, rename func(oldpath, newpath string) error, sync bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if mode != 0o600 {
		if err := tmp.Chmod(mode); err != nil {
			return err
		}
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := rename(tmp.Name(), path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some systems cannot sync a folder, and the data is safe in the file
		d.Close()
	}
	return nil
}
