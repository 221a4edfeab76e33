package ops

import (
	"net/http"
	"strings"
)

// recorder is the http.ResponseWriter the middlewares here hand on: it
// notes the status and whether the response is an event stream, and
// passes flushes through, so Streamable HTTP streams stay streams.
// Unwrap lets http.ResponseController reach the connection beneath.
type recorder struct {
	http.ResponseWriter
	code     int
	wrote    bool
	onHeader func(code int, header http.Header) // called once, with the final status
}

func wrapWriter(w http.ResponseWriter, onHeader func(int, http.Header)) *recorder {
	return &recorder{ResponseWriter: w, onHeader: onHeader}
}

func (r *recorder) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		r.ResponseWriter.WriteHeader(code) // informational: the real status follows
		return
	}
	if !r.wrote {
		r.wrote, r.code = true, code
		if r.onHeader != nil {
			r.onHeader(code, r.Header())
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(p)
}

// Flush sends what was written so far: an event stream's events must not
// wait in a buffer.
func (r *recorder) Flush() {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// status is the response's status: 200 when the handler wrote nothing.
func (r *recorder) status() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.code
}

// isEventStream reports whether a response header starts an SSE stream.
func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}
