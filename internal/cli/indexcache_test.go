package cli

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuildIDIn finds the build ID where the Go linker writes it: raw at
// the start of the text (Mach-O, PE), or in the ELF note "Go" of type 4;
// and nothing in bytes without one.
func TestBuildIDIn(t *testing.T) {
	const id = "abc/def/ghi/jkl"
	note := binary.LittleEndian.AppendUint32(nil, 4)
	note = binary.LittleEndian.AppendUint32(note, uint32(len(id)))
	note = binary.LittleEndian.AppendUint32(note, 4)
	note = append(append(note, "Go\x00\x00"...), id...)
	for _, tc := range []struct {
		name, head, want string
	}{
		{"raw", "\x7fMACHO....\xff Go build ID: \"" + id + "\"\n \xff rest", id},
		{"ELF note", "\x7fELF" + strings.Repeat("\x00", 40) + "Go\x00\x00 not a note" + string(note) + "\x00\x00", id},
		{"none", "\x7fELF" + strings.Repeat("\x00", 100), ""},
	} {
		if got := buildIDIn([]byte(tc.head)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReadBuildIDReadsOnOnlyWhenItMust: an ID in the first 4 KB is found
// there, one further in (the raw form, in the text of a non-ELF file)
// within 64 KB, and none beyond.
func TestReadBuildIDReadsOnOnlyWhenItMust(t *testing.T) {
	t.Parallel()
	raw := "\xff Go build ID: \"abc/def\"\n \xff"
	for _, tc := range []struct {
		at       int
		want     string
		readUpTo int
	}{
		{at: 100, want: "abc/def", readUpTo: 4 << 10},
		{at: 4<<10 - len(raw) + 3, want: "abc/def", readUpTo: 64 << 10}, // split across the first read
		{at: 40 << 10, want: "abc/def", readUpTo: 64 << 10},
		{at: 70 << 10, want: "", readUpTo: 64 << 10},
	} {
		file := append(bytes.Repeat([]byte{0}, tc.at), raw...)
		file = append(file, bytes.Repeat([]byte{0}, 100<<10)...)
		r := &countingReader{r: bytes.NewReader(file)}
		if got := readBuildID(r); got != tc.want || r.n != tc.readUpTo {
			t.Errorf("ID at %d: read %q from %d bytes, want %q from %d", tc.at, got, r.n, tc.want, tc.readUpTo)
		}
	}
	if got := readBuildID(bytes.NewReader([]byte(raw))); got != "abc/def" {
		t.Errorf("a file shorter than 4 KB: %q", got)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestProgramBuildID: the running program's is what go tool buildid says.
func TestProgramBuildID(t *testing.T) {
	t.Parallel()
	got := programBuildID()
	if got == "" {
		t.Fatal("no build ID read from the test binary")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Errorf("programBuildID() = %q, go tool buildid says %q", got, want)
	}
}

// TestFileIndexCacheKeepsWhatItGaveUntilClose: Load gives back what Save
// kept under the same key and program only, and what it gave stays as it
// was while a later Save replaces the file, until close releases it.
func TestFileIndexCacheKeepsWhatItGaveUntilClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, searchIndexFileName)
	c := &fileIndexCache{path: path, program: "one"}
	if got := c.Load([32]byte{1}); got != nil {
		t.Fatalf("Load before any Save = %q", got)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.Load([32]byte{1}); got != nil {
		t.Fatalf("Load of an empty file = %q", got)
	}
	kept := bytes.Repeat([]byte("index "), 2000)
	c.Save([32]byte{1}, kept)
	got := c.Load([32]byte{1})
	if !bytes.Equal(got, kept) {
		t.Fatalf("Load gave %d bytes, want the %d kept", len(got), len(kept))
	}
	if c.Load([32]byte{2}) != nil {
		t.Error("Load under another key gave data")
	}
	if (&fileIndexCache{path: path, program: "two"}).Load([32]byte{1}) != nil {
		t.Error("another program's Load gave data")
	}
	c.Save([32]byte{1}, []byte("another index"))
	if !bytes.Equal(got, kept) {
		t.Error("what Load gave changed when Save replaced the file")
	}
	if again := c.Load([32]byte{1}); string(again) != "another index" {
		t.Errorf("Load after the second Save = %q", again)
	}
	if len(c.mapped) != 2 {
		t.Errorf("%d mappings held, want the 2 Loads that gave data", len(c.mapped))
	}
	c.close()
	if len(c.mapped) != 0 {
		t.Errorf("%d mappings held after close", len(c.mapped))
	}
}

// TestGuardTurnsACutShortKeptIndexIntoAnError: a kept file cut short in
// place while a search reads its mapping faults; guard makes that fault
// errKeptIndexCutShort instead of a crash, and lets any other fault be
// the panic it is.
func TestGuardTurnsACutShortKeptIndexIntoAnError(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the file is read, not mapped, on Windows")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), searchIndexFileName)
	c := &fileIndexCache{path: path, program: "one"}
	defer c.close()
	c.Save([32]byte{1}, bytes.Repeat([]byte("index "), 4000)) // more than a page
	got := c.Load([32]byte{1})
	if got == nil {
		t.Fatal("nothing loaded")
	}
	if err := c.guard(func() error { _ = got[len(got)-1]; return nil }); err != nil {
		t.Fatalf("reading the whole mapping: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err := c.guard(func() error {
		var sum byte
		for _, b := range got {
			sum += b
		}
		t.Errorf("read %d bytes of a file cut short (sum %d)", len(got), sum)
		return nil
	})
	if !errors.Is(err, errKeptIndexCutShort) {
		t.Errorf("guard = %v, want errKeptIndexCutShort", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a fault outside the mapping did not panic")
			}
		}()
		var p *fileIndexCache
		_ = c.guard(func() error { return errors.New(p.path) })
	}()
}
