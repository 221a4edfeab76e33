package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/manager"
)

const (
	// exportEntries is how many requests "Export last 50" downloads.
	exportEntries = 50
	// maxLogEntries bounds one read of the log.
	maxLogEntries = 1000
	// defaultLogEntries is what the drawer shows.
	defaultLogEntries = 200
)

// logEntry is one request as the drawer shows it: metadata only.
type logEntry struct {
	Time       string `json:"time"`
	Server     string `json:"server"`
	Method     string `json:"method"`
	Tool       string `json:"tool,omitempty"`
	DurationMS int64  `json:"durationMs"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	BytesIn    int64  `json:"bytesIn"`
	BytesOut   int64  `json:"bytesOut"`
}

// recentLog reads the last n requests, oldest first: from Options.Log
// (every process, through the store) or else this process's manager.
func (s *Server) recentLog(ctx context.Context, n int) ([]logEntry, error) {
	var entries []manager.RequestLogEntry
	if s.opts.Log != nil {
		var err error
		if entries, err = s.opts.Log(ctx, n); err != nil {
			return nil, err
		}
	} else {
		entries = s.opts.Manager.RecentRequests(n)
	}
	out := make([]logEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, logEntry{
			Time: e.Time.UTC().Format(time.RFC3339Nano), Server: clean(e.Server, maxName),
			Method: clean(e.Method, maxName), Tool: clean(e.Tool, maxName),
			DurationMS: e.Duration.Milliseconds(), Outcome: clean(e.Outcome, maxName),
			HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
		})
	}
	return out, nil
}

// serveLog is the drawer's content: ?last=N, at most 1000.
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	n := defaultLogEntries
	if v := r.URL.Query().Get("last"); v != "" {
		if i, err := strconv.Atoi(v); err == nil && i > 0 {
			n = min(i, maxLogEntries)
		}
	}
	entries, err := s.recentLog(r.Context(), n)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}

// serveLogExport downloads the last 50 requests as a JSON file.
func (s *Server) serveLogExport(w http.ResponseWriter, r *http.Request) {
	entries, err := s.recentLog(r.Context(), exportEntries)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="mcpgate-requests.json"`)
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}
