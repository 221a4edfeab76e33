//go:build unix

package cli

import (
	"os"
	"syscall"
)

// mapFile maps the file at path into memory, read-only, and returns its
// bytes, for unmapFile; an empty file gives no bytes.
// The pages are the kernel's cached copy of the file: a process that reads
// them touches no heap, which is where a fresh page is dear (a page fault
// each). What is mapped shows the file as it is: mcpgate replaces the
// kept index by rename, never in place, and a file another program cuts
// short under a search is caught by fileIndexCache.guard.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 || int64(int(size)) != size {
		return nil, nil
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile unmaps what mapFile returned.
func unmapFile(data []byte) {
	if data != nil {
		_ = syscall.Munmap(data)
	}
}
