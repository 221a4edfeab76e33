package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

// sampleCatalog is a catalog with every field set, as a store gives it
// back (its Sum the store's).
func sampleCatalog(tenant, server string) *store.Catalog {
	c := &store.Catalog{
		Tenant:       tenant,
		Server:       server,
		URL:          "https://" + server + ".example/mcp",
		Protocol:     "2026-07-28",
		Title:        "Docs",
		Instructions: "Search and read the product documentation of " + server + ".",
		Tools:        json.RawMessage(`[{"name":"search","inputSchema":{"type":"object"}}]`),
		Prompts:      json.RawMessage(`[{"name":"summary"}]`),
		Resources:    json.RawMessage(`[{"uri":"docs://readme","name":"readme"}]`),
		Templates:    json.RawMessage(`[{"uriTemplate":"docs://{page}","name":"page"}]`),
		Counts:       [4]int{1, 1, 1, 1},
		FetchedAt:    at(0),
		TTL:          90 * time.Second,
		Generation:   7,
	}
	c.Sum = c.ContentSum()
	return c
}

// testCatalog checks that a catalog comes back byte for byte, is replaced
// whole, keeps a kind never loaded apart from an empty one, is listed per
// tenant, and is deleted.
func testCatalog(t *testing.T, s store.CatalogStore) {
	ctx := context.Background()
	_, err := s.GetCatalog(ctx, "", "docs")
	wantNotFound(t, "catalog before any", err)
	want := sampleCatalog("", "docs")
	allSet(t, sampleCatalog("acme", "docs"))
	want.Sum = [32]byte{1} // not the caller's to say
	check(t, s.PutCatalog(ctx, want))
	want.Sum = want.ContentSum()
	got, err := s.GetCatalog(ctx, "", "docs")
	check(t, err)
	diff(t, "catalog", got, want)

	// A replacement replaces every field; a kind never loaded stays nil,
	// an empty list stays empty.
	next := sampleCatalog("", "docs")
	next.URL, next.Protocol, next.Generation = "https://docs.example/v2/mcp", "2025-11-25", 8
	next.Tools, next.Prompts, next.Resources, next.Templates = json.RawMessage(`[]`), nil, json.RawMessage(`[]`), nil
	next.TTL, next.Counts = 0, [4]int{0, 0, 0, 0}
	next.Title, next.Instructions = "Docs v2", ""
	check(t, s.PutCatalog(ctx, next))
	next.Sum = next.ContentSum()
	if next.Sum == want.Sum {
		t.Fatal("two catalogs of other lists have one content sum")
	}
	other := sampleCatalog("", "docs")
	other.Instructions += " Answers in French."
	if other.ContentSum() == sampleCatalog("", "docs").ContentSum() {
		t.Error("two catalogs of other instructions have one content sum")
	}
	got, err = s.GetCatalog(ctx, "", "docs")
	check(t, err)
	if got.Prompts != nil || got.Templates != nil {
		t.Errorf("kinds never loaded came back as %q and %q, want nil", got.Prompts, got.Templates)
	}
	if !bytes.Equal(got.Tools, []byte(`[]`)) || !bytes.Equal(got.Resources, []byte(`[]`)) {
		t.Errorf("empty lists came back as %q and %q, want []", got.Tools, got.Resources)
	}
	diff(t, "replaced catalog", got, next)

	// Catalogs lists the tenant's own, by server.
	check(t, s.PutCatalog(ctx, sampleCatalog("", "alpha")))
	check(t, s.PutCatalog(ctx, sampleCatalog("acme", "docs")))
	list, err := s.Catalogs(ctx, "")
	check(t, err)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.Tenant+"/"+c.Server)
	}
	diff(t, "listed catalogs", ids, []string{"/alpha", "/docs"})
	list, err = s.Catalogs(ctx, "acme")
	check(t, err)
	if len(list) != 1 {
		t.Fatalf("tenant acme has %d catalogs, want 1", len(list))
	}
	summary := sampleCatalog("acme", "docs")
	// Listed with its Sum, so a reader tells catalogs apart without lists.
	summary.Tools, summary.Prompts, summary.Resources, summary.Templates = nil, nil, nil, nil
	diff(t, "tenant's catalog, listed without its lists", list[0], summary)
	if list[0].Tools != nil {
		t.Errorf("Catalogs read the tools list (%d bytes)", len(list[0].Tools))
	}
	list, err = s.Catalogs(ctx, "nobody")
	check(t, err)
	if len(list) != 0 {
		t.Errorf("a tenant without catalogs has %d", len(list))
	}

	check(t, s.DeleteCatalog(ctx, "", "docs"))
	_, err = s.GetCatalog(ctx, "", "docs")
	wantNotFound(t, "deleted catalog", err)
	check(t, s.DeleteCatalog(ctx, "", "docs")) // nothing to delete
	if _, err := s.GetCatalog(ctx, "acme", "docs"); err != nil {
		t.Errorf("deleting one tenant's catalog touched another's: %v", err)
	}
	if err := s.PutCatalog(ctx, &store.Catalog{URL: "https://x.example/mcp"}); err == nil {
		t.Error("a catalog without a server ID was stored")
	}
}

// testCatalogBound checks that a catalog over the bound is refused and
// the one stored before stays.
func testCatalogBound(t *testing.T, s store.CatalogStore) {
	ctx := context.Background()
	check(t, s.PutCatalog(ctx, sampleCatalog("", "docs")))
	big := sampleCatalog("", "docs")
	big.Tools = json.RawMessage(`["` + string(bytes.Repeat([]byte("x"), store.MaxCatalogBytes)) + `"]`)
	if err := s.PutCatalog(ctx, big); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("a catalog of %d bytes: err = %v, want ErrTooLarge", big.Size(), err)
	}
	got, err := s.GetCatalog(ctx, "", "docs")
	check(t, err)
	diff(t, "catalog kept after a refused one", got, sampleCatalog("", "docs"))

	// Just under the bound is kept.
	fits := sampleCatalog("", "docs")
	fits.Prompts, fits.Resources, fits.Templates = nil, nil, nil
	fits.Tools = json.RawMessage(`["` + string(bytes.Repeat([]byte("y"), store.MaxCatalogBytes-4)) + `"]`)
	check(t, s.PutCatalog(ctx, fits))
	got, err = s.GetCatalog(ctx, "", "docs")
	check(t, err)
	if !bytes.Equal(got.Tools, fits.Tools) {
		t.Errorf("a catalog of %d bytes came back with %d", fits.Size(), got.Size())
	}
}

// testCatalogAcrossHandles checks that what one process stores the next
// one reads.
func testCatalogAcrossHandles(t *testing.T, hs []store.CatalogStore) {
	ctx := context.Background()
	first, last := hs[0], hs[len(hs)-1]
	check(t, first.PutCatalog(ctx, sampleCatalog("", "docs")))
	got, err := last.GetCatalog(ctx, "", "docs")
	check(t, err)
	diff(t, "catalog from the other handle", got, sampleCatalog("", "docs"))
	check(t, last.DeleteCatalog(ctx, "", "docs"))
	_, err = first.GetCatalog(ctx, "", "docs")
	wantNotFound(t, "catalog the other handle deleted", err)
}
