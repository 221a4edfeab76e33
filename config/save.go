package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/atomicfile"
)

// rename is a seam so tests can fail the last step of a save.
var rename = os.Rename

// Save writes f to f.Path atomically: a temporary file in the same folder,
// synced, then renamed over the old one, so a crash or a full disk leaves
// the old file whole. The file is 0600 and a folder it creates 0700. Save
// refuses, with an error of [mcpgate.CategoryConflict], to overwrite a file
// that changed since f read or wrote it; on any error the file on disk is
// untouched.
func (f *File) Save() error {
	if f.Path == "" {
		return invalidf("config: no path to save to")
	}
	data, err := f.encode()
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	path, err := target(f.Path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating config folder: %w", err)
	}
	if err := f.checkUnchanged(path); err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600, rename); err != nil {
		return fmt.Errorf("saving config %s: %w", f.Path, err)
	}
	f.sum, f.existed = sha256.Sum256(data), true
	return nil
}

// target follows a symlink at path, so a config kept in a dotfiles
// repository and linked into place stays linked after a save.
func target(path string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	switch {
	case err == nil:
		return resolved, nil
	case errors.Is(err, fs.ErrNotExist):
		return path, nil
	default:
		return "", fmt.Errorf("resolving config path: %w", err)
	}
}

// checkUnchanged compares the file on disk with what f last read or wrote.
// Without it the settings page and a CLI command (or a person's editor)
// would silently undo each other's changes.
func (f *File) checkUnchanged(path string) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !f.existed {
			return nil
		}
	case err != nil:
		return fmt.Errorf("reading config: %w", err)
	case f.existed && sha256.Sum256(data) == f.sum:
		return nil
	}
	return mcpgate.Errorf(mcpgate.CategoryConflict, "config %s changed on disk since it was read; load it again and redo the change", f.Path)
}
