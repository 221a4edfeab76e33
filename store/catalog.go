package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxCatalogBytes bounds one stored catalog: the JSON of its tools,
// prompts, resources and templates together. A backend refuses a bigger
// one with [ErrTooLarge]; whoever writes catalogs skips it.
const MaxCatalogBytes = 4 << 20

// ErrTooLarge is returned when a record exceeds its bound.
var ErrTooLarge = errors.New("too large to store")

// Catalog is a server's last valid catalog as a process listed it, so the
// next process can answer from it at once. Every list is a JSON array of
// entries as the MCP server sent them (after mcpgate's validation); a nil
// list is a kind that was never loaded. Catalogs are remote content,
// never secret: they are stored unsealed, and whoever reads one validates
// it again.
type Catalog struct {
	Tenant string // "" for a single user
	Server string // server ID
	// URL is the server URL the catalog was listed from; a catalog whose
	// URL is not the server's configured URL must not be used.
	URL string
	// Protocol is the MCP version the listing session negotiated.
	Protocol string
	// Title and Instructions are what the server said of itself to the
	// listing session (initialize's or server/discover's title, else
	// name, and instructions), sanitized; remote text, for search and
	// display.
	Title, Instructions string
	Tools               json.RawMessage
	Prompts             json.RawMessage
	Resources           json.RawMessage
	Templates           json.RawMessage
	// Counts are how many entries the lists hold (tools, prompts,
	// resources, templates), so that a process can say so without
	// decoding them.
	Counts [4]int
	// FetchedAt is when the oldest of the lists was fetched.
	FetchedAt time.Time
	// TTL is the shortest ttlMs a 2026-07-28 server gave (zero: none, or
	// fresh for its session only).
	TTL time.Duration
	// Generation grows each time the stored catalog's content changes.
	Generation uint64
	// Sum is the catalog's [Catalog.ContentSum] as the store took it when
	// the catalog was put, read back with it, and listed by Catalogs too:
	// a reader tells two catalogs apart without reading their lists. Zero
	// for a catalog stored before stores kept it. PutCatalog ignores it.
	Sum [sha256.Size]byte
}

// ContentSum identifies the catalog's content: its URL, lists, title and
// instructions, a list never loaded (nil) apart from an empty one.
func (c *Catalog) ContentSum() [sha256.Size]byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(c.URL), c.Tools, c.Prompts, c.Resources, c.Templates, []byte(c.Title), []byte(c.Instructions)} {
		var n [8]byte
		for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write(part)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// SumOf reads a stored Sum: the zero sum unless b is one.
func SumOf(b []byte) (sum [sha256.Size]byte) {
	if len(b) == len(sum) {
		copy(sum[:], b)
	}
	return sum
}

// Size is the number of bytes of the catalog's lists, which
// [MaxCatalogBytes] bounds.
func (c *Catalog) Size() int {
	return len(c.Tools) + len(c.Prompts) + len(c.Resources) + len(c.Templates)
}

// CatalogStore keeps each server's last valid catalog. The backends
// (store/sqlite, store/postgres) implement it; every method is safe for
// concurrent use by many goroutines and processes.
type CatalogStore interface {
	// PutCatalog stores c, replacing the server's previous catalog. One
	// bigger than [MaxCatalogBytes] is refused with [ErrTooLarge].
	PutCatalog(ctx context.Context, c *Catalog) error
	// GetCatalog returns [ErrNotFound] when there is none.
	GetCatalog(ctx context.Context, tenant, server string) (*Catalog, error)
	// Catalogs lists a tenant's catalogs, by server ID, without their
	// lists (Tools, Prompts, Resources and Templates are nil; Counts says
	// their sizes): a process with many servers starts without reading
	// them all, and reads each with GetCatalog when it needs it.
	Catalogs(ctx context.Context, tenant string) ([]*Catalog, error)
	// DeleteCatalog succeeds when there is nothing to delete.
	DeleteCatalog(ctx context.Context, tenant, server string) error
}

// EncodeCounts is how the stores keep a catalog's Counts: "[3,0,1,0]",
// a JSON array.
func EncodeCounts(n [4]int) string {
	parts := make([]string, len(n))
	for i, v := range n {
		parts[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// DecodeCounts reads what EncodeCounts wrote, without a JSON decoder:
// listing 1,000 catalogs reads 1,000 of them.
func DecodeCounts(s string, n *[4]int) error {
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ",")
	if len(parts) != len(n) {
		return fmt.Errorf("decoding stored catalog counts: %q is not four counts", s)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return fmt.Errorf("decoding stored catalog counts: %q is not four counts", s)
		}
		n[i] = v
	}
	return nil
}
