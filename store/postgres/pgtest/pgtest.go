// Package pgtest gives a test a PostgreSQL schema of its own: the server
// is $MCPGATE_TEST_POSTGRES, else the one .ci/run keeps on 127.0.0.1:5432
// (user postgres, database test). A test whose server is unreachable is
// skipped, or failed when $CI is set, so CI never passes without it.
//
//	dsn := pgtest.DSN(t) // a fresh schema, dropped when the test ends
//	s, err := postgres.Open(ctx, dsn, sealer, nil)
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSN returns a connection string whose search_path is a new, empty
// schema, dropped when the test ends.
func DSN(t testing.TB) string {
	t.Helper()
	// The connection that finds the server makes the schema: each one is
	// a PostgreSQL backend forked, and CI makes a schema per test.
	base, conn := connect(t)
	name := "mcpgate_test_" + strings.ToLower(rand.Text()[:12])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP SCHEMA `+name+` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal("$MCPGATE_TEST_POSTGRES must be a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Server returns the test server's connection string, skipping (or, with
// $CI set, failing) the test when it does not answer.
func Server(t testing.TB) string {
	t.Helper()
	dsn, conn := connect(t)
	conn.Close(context.Background())
	return dsn
}

// connect connects to the test server, skipping (or, with $CI set,
// failing) the test when it does not answer.
func connect(t testing.TB) (string, *pgx.Conn) {
	t.Helper()
	dsn := os.Getenv("MCPGATE_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		// The error names host, user and database, never the password.
		msg := "PostgreSQL is not reachable at " + redact(dsn) + " (start it, or set MCPGATE_TEST_POSTGRES): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn, conn
}

func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		return u.String()
	}
	return "the configured server"
}
