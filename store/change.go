package store

import "context"

// Change says that a record changed, through this handle or another one
// on the same data (another replica sharing the database). It names the
// record, never its content.
type Change struct {
	Kind   string `json:"kind"` // ChangeCredential, ChangeInteraction or ChangeCatalog
	Tenant string `json:"tenant,omitempty"`
	Server string `json:"server,omitempty"`
}

// The kinds of [Change].
const (
	ChangeCredential  = "credential"
	ChangeInteraction = "interaction"
	// ChangeCatalog: a server's stored catalog was replaced or deleted.
	ChangeCatalog = "catalog"
)

// A Watcher is a [Store] that tells of changes made by every handle on its
// data, so that what a process derived from a record (a cached token, a
// session signed in with it) can be dropped the moment another process
// changes it. Backends shared by several processes on several machines
// implement it (store/postgres).
type Watcher interface {
	// Watch calls fn for every change until ctx is done; fn is called from
	// one goroutine, in order, and must not block for long. Changes made
	// while the backend could not listen (a lost connection) are reported
	// as one Change with an empty Kind: everything may have changed.
	Watch(ctx context.Context, fn func(Change)) error
}
