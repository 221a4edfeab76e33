package cli

import (
	"encoding/binary"
	"os"
	"os/exec"
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
