package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
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

// describe applies stmts to a new database and reads its structure back
// from SQLite's own pragmas, keyed by table and index.
func describe(t *testing.T, stmts []string) map[string][][]any {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
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
