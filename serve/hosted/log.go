package hosted

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
)

// serveLog answers GET /api/log?last=N with the caller's own last
// requests to remote servers (metadata only), from every replica: the
// requests made for them, whoever's credential they carried. Nobody reads
// another person's log here.
func (g *Gateway) serveLog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "mcpgate: GET only", http.StatusMethodNotAllowed)
		return
	}
	last := 50
	if v := r.URL.Query().Get("last"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLogEntries {
			http.Error(w, "mcpgate: last must be a number from 1 to "+strconv.Itoa(store.MaxLogEntries), http.StatusBadRequest)
			return
		}
		last = n
	}
	p, _ := principalFrom(r.Context())
	entries, err := g.opts.Store.RecentLog(r.Context(), Owner(p.Tenant, p.User), last)
	if err != nil {
		http.Error(w, "mcpgate: the log could not be read now", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"entries": serve.LogJSON(entries)})
}
