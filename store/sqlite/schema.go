package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// SchemaVersion reads the schema version of the database at path without
// changing it (no migration, no file created, opened read-only), and
// returns it with the version this build of mcpgate migrates to: a larger
// version is a database from a newer mcpgate, which [Open] refuses; a
// smaller one is migrated by the next Open.
func SchemaVersion(ctx context.Context, path string) (version, current int, err error) {
	current = len(migrations)
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, current, fmt.Errorf("reading the store's schema version: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return 0, current, fmt.Errorf("reading the store's schema version: %w", err)
	}
	u, err := url.Parse(dsn(abs))
	if err != nil {
		return 0, current, fmt.Errorf("reading the store's schema version: %w", err)
	}
	q := u.Query()
	q.Set("mode", "ro")
	u.RawQuery = q.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return 0, current, fmt.Errorf("reading the store's schema version: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, current, fmt.Errorf("reading the store's schema version of %s: %w", abs, err)
	}
	return version, current, nil
}
