package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
)

// TestSchemaIsTheMigrations: a database created from schema is the one
// the migrations build from nothing, table by table, column by column
// (type, NOT NULL, default, key) and index by index, STRICT included, so
// a store created new and a store migrated up are read and written alike.
func TestSchemaIsTheMigrations(t *testing.T) {
	fresh := describe(t, []string{schema})
	migrated := describe(t, migrations)
	if !reflect.DeepEqual(fresh, migrated) {
		for k, v := range migrated {
			if !reflect.DeepEqual(fresh[k], v) {
				t.Errorf("%s: the migrations build\n\t%v\nschema builds\n\t%v", k, v, fresh[k])
			}
		}
		for k, v := range fresh {
			if _, ok := migrated[k]; !ok {
				t.Errorf("%s: only schema builds it: %v", k, v)
			}
		}
	}
}

// TestNewStoresAreCopiesOfAnEmptyOne: from a process's second new store
// on, Open links a copy of an empty store into place. Each copy has the
// schema that schema builds, WAL mode, the current version, mode 0600 and
// rows of its own; handles opening one new path at once all get the same
// store; nothing of the copying is left beside it.
func TestNewStoresAreCopiesOfAnEmptyOne(t *testing.T) {
	sl, err := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	want := describe(t, []string{schema})
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), "data")
		path := filepath.Join(dir, "mcpgate.db")
		s, err := Open(path, sl)
		if err != nil {
			t.Fatal(err)
		}
		server := fmt.Sprintf("s%d", i)
		if err := s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: server}, Kind: store.KindBearer, AccessToken: "at"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetCredential(t.Context(), "", server); err != nil || got.AccessToken != "at" {
			t.Errorf("store %d: its own credential reads %v, %v", i, got, err)
		}
		if i > 0 {
			if got, err := s.GetCredential(t.Context(), "", fmt.Sprintf("s%d", i-1)); err == nil {
				t.Errorf("store %d holds the credential of store %d: %v", i, i-1, got)
			}
		}
		s.Close()
		if image.data == nil && i > 0 {
			t.Fatalf("store %d was created without the empty store's copy (%v)", i, image.err)
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 100 || string(b[:16]) != "SQLite format 3\x00" || b[18] != 2 || b[19] != 2 {
			t.Fatalf("store %d: not a database in WAL mode (%v)", i, err)
		}
		if v, cur, err := SchemaVersion(t.Context(), path); err != nil || v != cur {
			t.Errorf("store %d: schema version %d of %d, %v", i, v, cur, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("store %d: mode %v, %v; want 0600", i, fi.Mode().Perm(), err)
		}
		if got := describeFile(t, path); !reflect.DeepEqual(got, want) {
			t.Errorf("store %d: its structure is not what schema builds:\n%v\nwant\n%v", i, got, want)
		}
		assertOnlyTheStore(t, dir)
	}

	// The copy itself is the whole empty store: it needs no migration.
	if len(image.data) < 100 {
		t.Fatalf("the empty store's image is %d bytes (%v)", len(image.data), image.err)
	}
	if v := binary.BigEndian.Uint32(image.data[60:64]); int(v) != len(migrations) {
		t.Errorf("the empty store's image is at schema version %d, want %d", v, len(migrations))
	}
	img := filepath.Join(t.TempDir(), "image.db")
	if err := os.WriteFile(img, image.data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := describeFile(t, img); !reflect.DeepEqual(got, want) {
		t.Errorf("the empty store's image is not what schema builds:\n%v\nwant\n%v", got, want)
	}

	// Eight handles open one new path at once and write; each sees all.
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgate.db")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(path, sl)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: fmt.Sprintf("c%d", i)}, Kind: store.KindBearer, AccessToken: "at"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("handle %d: %v", i, err)
		}
	}
	s, err := Open(path, sl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range errs {
		if got, err := s.GetCredential(t.Context(), "", fmt.Sprintf("c%d", i)); err != nil || got.AccessToken != "at" {
			t.Errorf("handle %d wrote, and the store reads %v, %v", i, got, err)
		}
	}
	assertOnlyTheStore(t, dir)
}

// assertOnlyTheStore fails if dir holds anything but the store's files.
func assertOnlyTheStore(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "mcpgate.db") {
			t.Errorf("%s is left beside the store", e.Name())
		}
	}
}

// describe applies stmts to a new database and reads its structure back
// from SQLite's own pragmas, keyed by table and index.
func describe(t *testing.T, stmts []string) map[string][][]any {
	t.Helper()
	return describeDB(t, filepath.Join(t.TempDir(), "x.db"), stmts)
}

// describeFile reads the structure of the database at path.
func describeFile(t *testing.T, path string) map[string][][]any {
	t.Helper()
	return describeDB(t, path, nil)
}

func describeDB(t *testing.T, path string, stmts []string) map[string][][]any {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(q string) [][]any {
		r, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cols, _ := r.Columns()
		var out [][]any
		for r.Next() {
			row := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range row {
				ptrs[i] = &row[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, row)
		}
		return out
	}
	got := map[string][][]any{}
	for _, tbl := range rows("SELECT name, type, ncol, wr, strict FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
		name := fmt.Sprint(tbl[0])
		got["table "+name] = append([][]any{tbl}, rows(fmt.Sprintf("SELECT * FROM pragma_table_xinfo('%s')", name))...)
		for _, idx := range rows(fmt.Sprintf("SELECT name, \"unique\", origin, partial FROM pragma_index_list('%s') ORDER BY name", name)) {
			got["index "+fmt.Sprint(idx[0])] = append([][]any{idx}, rows(fmt.Sprintf("SELECT * FROM pragma_index_xinfo('%s')", idx[0]))...)
		}
	}
	if len(got) == 0 {
		t.Fatal("no tables read")
	}
	return got
}

// TestManyReadsAtOnceReuseConnections: twenty catalog reads at once, as a
// command listing twenty servers makes, share a few connections instead
// of each opening its own and most of them closing again.
func TestManyReadsAtOnceReuseConnections(t *testing.T) {
	sl, err := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(t.TempDir(), "mcpgate.db"), sl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const servers = 20
	// Catalogs of some size, so that reads at once overlap.
	tools := []byte(`[` + strings.Repeat(`{"name":"echo","description":"`+strings.Repeat("word ", 400)+`","inputSchema":{"type":"object"}},`, 100) + `{"name":"last","inputSchema":{"type":"object"}}]`)
	for i := range servers {
		c := &store.Catalog{Server: fmt.Sprintf("s%d", i), URL: "https://example.test/mcp", Tools: tools}
		if err := s.PutCatalog(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		var wg sync.WaitGroup
		for i := range servers {
			wg.Go(func() {
				if _, err := s.GetCatalog(t.Context(), "", fmt.Sprintf("s%d", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	st := s.db.Stats()
	if st.MaxIdleClosed != 0 || st.MaxOpenConnections == 0 || st.MaxOpenConnections > servers/2 || st.OpenConnections > st.MaxOpenConnections {
		t.Errorf("%d connections open (at most %d), %d closed for want of room to keep them", st.OpenConnections, st.MaxOpenConnections, st.MaxIdleClosed)
	}
}
