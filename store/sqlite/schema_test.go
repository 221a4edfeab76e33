package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/store/sqlite"
)

// SchemaVersion reads a store's version without migrating or creating
// anything: current for a store Open made, the newer number a newer
// mcpgate wrote, and an error (with no file left behind) for none.
func TestSchemaVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	if _, _, err := sqlite.SchemaVersion(ctx, path); err == nil {
		t.Error("SchemaVersion of a missing store succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("SchemaVersion created the store: %v", err)
	}

	s, err := sqlite.Open(path, sealer(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	v, current, err := sqlite.SchemaVersion(ctx, path)
	if err != nil || v != current || current < 1 {
		t.Fatalf("SchemaVersion of a fresh store = %d, %d, %v; want the current version twice", v, current, err)
	}

	if _, err := raw(t, path).Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if v, _, err := sqlite.SchemaVersion(ctx, path); err != nil || v != 99 {
		t.Errorf("SchemaVersion of a newer store = %d, %v; want 99", v, err)
	}
}
