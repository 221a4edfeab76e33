package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate/internal/atomicfile"
)

// BackupSuffix is added to a host config's name for the copy [Change.Apply]
// keeps of it: the file as it was before the last change mcpgate made.
const BackupSuffix = ".mcpgate-backup"

// rename is a seam so tests can fail the last step of a write.
var rename = os.Rename

// Apply writes the change: the previous file is copied to
// PATH.mcpgate-backup (0600: host configs can hold tokens), then the new
// one is written to a temporary file in the same folder, synced and renamed
// over it, keeping the old file's mode, so a crash leaves one or the other
// whole. A file that changed since it was read is not overwritten. A
// missing file is created 0600, its missing folders 0700. A symlinked file
// stays linked: its target is written.
func (c *Change) Apply() error {
	if !c.Changed() {
		return nil
	}
	path := c.Path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resolving %s: %w", c.Path, err)
	}
	now, err := readFile(path)
	if err != nil {
		return err
	}
	if (now == nil) != (c.Before == nil) || !bytes.Equal(now, c.Before) {
		return fmt.Errorf("%s changed since mcpgate read it; run the command again", c.Path)
	}
	mode := fs.FileMode(0o600)
	if c.Before != nil {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		mode = info.Mode().Perm()
		backup := path + BackupSuffix
		if err := atomicfile.Write(backup, c.Before, 0o600, rename); err != nil {
			return fmt.Errorf("saving the backup %s: %w", backup, err)
		}
		c.Backup = backup
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", c.Path, err)
	}
	if err := atomicfile.Write(path, c.After, mode, rename); err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	return nil
}
