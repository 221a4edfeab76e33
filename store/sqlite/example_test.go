package sqlite_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// UpdateCredential reads, decides and writes a credential under a lock
// that excludes other processes: the way a token refresh must run.
func ExampleStore_UpdateCredential() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	sealer, _ := seal.New(key)
	st, err := sqlite.Open(filepath.Join(dir, "mcpgate.db"), sealer)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	ctx := context.Background()
	cred, err := st.UpdateCredential(ctx, "", "docs", func(ctx context.Context, cur *store.Credential) (*store.Credential, error) {
		if cur != nil {
			return cur, nil // someone else already stored one
		}
		return &store.Credential{
			Binding:     store.Binding{Server: "docs", Resource: "https://docs.example.com/mcp"},
			Kind:        store.KindBearer,
			AccessToken: "sealed at rest",
		}, nil
	})
	fmt.Println(cred.Kind, err)
	// Output: bearer <nil>
}
