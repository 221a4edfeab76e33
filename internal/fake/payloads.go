package fake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// LeakCanary is the secret-looking text [Status500] puts in its body. Nothing
// derived from a server's error body may ever contain it.
const LeakCanary = "sk-live-SHOULD-NOT-LEAK"

// A ListHook is a ready-made list hook for [HostileOptions.ToolsList] (or
// PromptsList, ResourcesList) that counts how often it was hit:
//
//	pages := fake.EndlessCursor()
//	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: pages.List})
//	// ... list tools ...
//	if pages.Hits() > limit { ... }
type ListHook struct {
	hits atomic.Int64
	page func(cursor string) json.RawMessage
}

// List answers one list request; pass it as the hook.
func (h *ListHook) List(cursor string) json.RawMessage {
	h.hits.Add(1)
	return h.page(cursor)
}

// Hits returns how many list requests the hook has answered.
func (h *ListHook) Hits() int { return int(h.hits.Load()) }

// A CallHook is a ready-made [HostileOptions.CallTool] hook that counts how
// often it was hit, so a test can assert that a call was sent exactly once.
type CallHook struct {
	hits atomic.Int64
	call func(w http.ResponseWriter, r *http.Request, id, params json.RawMessage)
}

// Call handles one tools/call request; pass it as the hook.
func (h *CallHook) Call(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
	h.hits.Add(1)
	h.call(w, r, id, params)
}

// Hits returns how many tools/call requests reached the hook.
func (h *CallHook) Hits() int { return int(h.hits.Load()) }

// MalformedToolsList answers tools/list with a result whose "tools" is not an
// array: {"tools":"surprise"}.
func MalformedToolsList() *ListHook {
	return &ListHook{page: func(string) json.RawMessage {
		return json.RawMessage(`{"tools":"surprise"}`)
	}}
}

// OversizedToolsList answers tools/list with one page holding, in order: two
// valid tools ("alpha", "beta"), n tools "huge_<i>" whose descriptions are
// entryBytes long, a tool with an empty name and a tool "bad_schema" whose
// inputSchema is a string instead of an object.
func OversizedToolsList(n int, entryBytes int) *ListHook {
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"inputSchema"`
	}
	object := map[string]any{"type": "object"}
	entryBytes = max(entryBytes, 0)
	long := strings.Repeat("An overly long description. ", entryBytes/28+1)[:entryBytes]
	tools := []tool{
		{"alpha", "A normal tool.", object},
		{"beta", "Another normal tool.", object},
	}
	for i := range n {
		tools = append(tools, tool{"huge_" + strconv.Itoa(i), long, object})
	}
	tools = append(tools,
		tool{"", "A tool without a name.", object},
		tool{"bad_schema", "A tool whose input schema is not an object.", "not-an-object"},
	)
	page, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return &ListHook{page: func(string) json.RawMessage { return page }}
}

// EndlessCursor answers every tools/list page with one new tool and a
// nextCursor, forever: the first page (cursor "") holds "endless_1" and
// points to "page-2", page "page-<k>" holds "endless_<k>" and points to
// "page-<k+1>". Hits counts the pages served.
func EndlessCursor() *ListHook {
	return &ListHook{page: func(cursor string) json.RawMessage {
		k := 1
		if n, err := strconv.Atoi(strings.TrimPrefix(cursor, "page-")); err == nil && n > 0 {
			k = n
		}
		return json.RawMessage(fmt.Sprintf(
			`{"tools":[{"name":"endless_%d","description":"Page %d of infinity.","inputSchema":{"type":"object"}}],"nextCursor":"page-%d"}`,
			k, k, k+1))
	}}
}

// HugeResult answers tools/call with a valid result holding one text content
// of exactly n bytes (the big tool's pattern: lines of 100 'x'), streamed as
// application/json without ever holding it in memory. The go-sdk client reads
// application/json responses whole, without a size limit.
func HugeResult(n int) *CallHook {
	return &CallHook{call: func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		writeHugeResponse(w, id, n)
	}}
}

// HugeResultSSE is [HugeResult] sent as one server-sent event. The go-sdk
// client caps an event at StreamableClientTransport.MaxEventSize (16 MiB by
// default) and, past it, fails the whole session, not just the call.
func HugeResultSSE(n int) *CallHook {
	return &CallHook{call: func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, "event: message\ndata: "); err != nil {
			return
		}
		if writeHugeResponse(w, id, n) == nil {
			io.WriteString(w, "\n\n")
		}
	}}
}

// writeHugeResponse streams a JSON-RPC response (on one line) whose result is
// one text content of n bytes.
func writeHugeResponse(w io.Writer, id json.RawMessage, n int) error {
	if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id); err != nil {
		return err
	}
	if err := writePattern(w, n, true); err != nil {
		return err // the client gave up; nothing to finish
	}
	_, err := io.WriteString(w, `"}]}}`)
	return err
}

// Status500 answers tools/call with HTTP 500 and a plain-text body that is
// not JSON-RPC and contains [LeakCanary], the way crashing servers dump
// internals.
func Status500() *CallHook {
	return &CallHook{call: func(w http.ResponseWriter, _ *http.Request, _, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "internal detail: token="+LeakCanary+"\n")
	}}
}

// DropConnection answers tools/call by closing the TCP connection without a
// response, after the request has fully arrived: the call's outcome is in
// doubt, and net/http does not retry a POST.
func DropConnection() *CallHook {
	return &CallHook{call: func(w http.ResponseWriter, _ *http.Request, _, _ json.RawMessage) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "cannot hijack", http.StatusInternalServerError)
			return
		}
		conn.Close()
	}}
}
