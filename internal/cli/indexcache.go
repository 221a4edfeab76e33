package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/mcpgate/mcpgate/internal/atomicfile"
)

// searchIndexFileName is the search command's kept index in the data
// directory (gateway.IndexCache): the gateway's index over every server's
// stored catalog, for the next search. It is remote content, never
// secret; it is written 0600 like everything in the data directory.
const searchIndexFileName = "search-index"

// fileIndexCache keeps the gateway's index in one file, whose first line
// names the program that wrote it (its Go build ID) and the key it was
// saved under: another build of mcpgate, or other catalogs, find nothing.
type fileIndexCache struct {
	path    string
	program string

	mu     sync.Mutex
	mapped [][]byte // what Load gave, for guard and close
}

// errKeptIndexCutShort is a kept index that another program cut short
// while a search read it (guard).
var errKeptIndexCutShort = errors.New("the kept search index was cut short while it was read")

// indexCache is the search command's index cache, or nil when the program
// cannot tell its own build apart (no build ID) or has no data directory.
func (a *App) indexCache() *fileIndexCache {
	prog := programBuildID()
	dir, err := a.DataDir()
	if prog == "" || err != nil {
		return nil
	}
	c := &fileIndexCache{path: filepath.Join(dir, searchIndexFileName), program: prog}
	a.closers = append(a.closers, c.close)
	return c
}

func (c *fileIndexCache) header(key [sha256.Size]byte) string {
	return "mcpgate search index " + c.program + " " + hex.EncodeToString(key[:]) + "\n"
}

// Load maps the kept file (mapFile): the index is read in place, so its
// half a megabyte costs no fresh memory. What it returns stays mapped
// until close.
func (c *fileIndexCache) Load(key [sha256.Size]byte) []byte {
	data, err := mapFile(c.path)
	if err != nil {
		return nil
	}
	rest, ok := bytes.CutPrefix(data, []byte(c.header(key)))
	if !ok {
		unmapFile(data)
		return nil
	}
	c.mu.Lock()
	c.mapped = append(c.mapped, data)
	c.mu.Unlock()
	return rest
}

// guard runs f, which reads what Load gave. The file is replaced by
// rename, never rewritten, but another program could cut it short in
// place, and a mapped page past the end of a file faults (SIGBUS): such a
// fault in f is errKeptIndexCutShort, for the caller to search without
// the kept index. Any other fault is the crash it would have been.
func (c *fileIndexCache) guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if fault, ok := r.(interface{ Addr() uintptr }); ok && c.holds(fault.Addr()) {
			err = errKeptIndexCutShort
			return
		}
		panic(r)
	}()
	return f()
}

// holds reports whether addr is in what Load gave.
func (c *fileIndexCache) holds(addr uintptr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.mapped {
		if start := uintptr(unsafe.Pointer(unsafe.SliceData(m))); addr >= start && addr-start < uintptr(len(m)) {
			return true
		}
	}
	return false
}

// close unmaps what Load gave; the App calls it when its command is done
// with the gateway.
func (c *fileIndexCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, data := range c.mapped {
		unmapFile(data)
	}
	c.mapped = nil
}

func (c *fileIndexCache) Save(key [sha256.Size]byte, data []byte) {
	// Best effort: without it the next search builds the index again.
	_ = atomicfile.WriteCache(c.path, append([]byte(c.header(key)), data...))
}

// programBuildID is the Go build ID of the running program, which differs
// between any two builds of different code, or "" when it has none (built
// with -buildid=) or it cannot be read.
var programBuildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	return readBuildID(f)
})

// readBuildID reads the build ID at the start of an executable. The
// linker puts it in an ELF note among the first headers (the first 4 KB),
// else at the start of the text (within 64 KB); each 4 KB read is a fresh
// page of memory, so the rest is read only when the first has none.
func readBuildID(exe io.Reader) string {
	head := make([]byte, 0, 64<<10)
	for _, size := range []int{4 << 10, 64 << 10} {
		n, _ := io.ReadFull(exe, head[len(head):size])
		head = head[:len(head)+n]
		if id := buildIDIn(head); id != "" || len(head) < size {
			return id
		}
	}
	return ""
}

// buildIDIn finds a Go build ID in the first bytes of an executable: the
// raw form the linker writes into the text of non-ELF files, or the ELF
// note "Go" of type 4 (little-endian).
func buildIDIn(head []byte) string {
	const rawStart, rawEnd = "\xff Go build ID: \"", "\"\n \xff"
	if i := bytes.Index(head, []byte(rawStart)); i >= 0 {
		rest := head[i+len(rawStart):]
		if j := bytes.Index(rest, []byte(rawEnd)); j > 0 && j <= 256 {
			return string(rest[:j])
		}
	}
	for off := 0; ; {
		i := bytes.Index(head[off:], []byte("Go\x00\x00"))
		if i < 0 {
			return ""
		}
		i += off
		off = i + 1
		if i < 12 {
			continue
		}
		namesz := binary.LittleEndian.Uint32(head[i-12:])
		descsz := binary.LittleEndian.Uint32(head[i-8:])
		typ := binary.LittleEndian.Uint32(head[i-4:])
		if namesz == 4 && typ == 4 && descsz > 0 && descsz <= 256 && i+4+int(descsz) <= len(head) {
			return string(head[i+4 : i+4+int(descsz)])
		}
	}
}
