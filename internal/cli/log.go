package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
	"github.com/spf13/cobra"
)

type logOptions struct {
	JSON bool
	Last int
}

func newLogCmd(app *App) *cobra.Command {
	opts := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Show the last requests sent to remote servers (metadata only)",
		Long: strings.TrimSpace(`
Show the last requests mcpgate sent to remote servers, from every mcpgate
process sharing the data directory (serve, call, ui...): time, server,
JSON-RPC method, tool, duration, outcome, HTTP status and bytes in and out.
Payloads, headers and tokens are never logged. The data directory keeps the
last ` + fmt.Sprint(store.MaxLogEntries) + ` requests.`),
		Example: examples(`
  mcpgate log
  mcpgate log --last 10 --json`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLog(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&opts.Last, "last", 50, "show the last `N` requests")
	return cmd
}

// logEntryJSON is one request as `log --json` prints it.
type logEntryJSON struct {
	Time       time.Time `json:"time"`
	Server     string    `json:"server"`
	Method     string    `json:"method"`
	Tool       string    `json:"tool,omitempty"`
	DurationMs float64   `json:"durationMs"`
	Outcome    string    `json:"outcome"`
	HTTPStatus int       `json:"httpStatus,omitempty"`
	BytesIn    int64     `json:"bytesIn"`
	BytesOut   int64     `json:"bytesOut"`
}

func runLog(ctx context.Context, app *App, opts *logOptions) error {
	if opts.Last < 1 {
		return usageErrorf("--last must be at least 1")
	}
	entries, err := readLog(ctx, app, opts.Last)
	if err != nil {
		return err
	}
	if opts.JSON {
		list := make([]logEntryJSON, len(entries))
		for i, e := range entries {
			list[i] = logEntryJSON{
				Time: e.Time, Server: e.Server, Method: e.Method, Tool: e.Tool,
				DurationMs: float64(e.Duration.Microseconds()) / 1000, Outcome: e.Outcome,
				HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
			}
		}
		return writeJSON(app.IO.Out, map[string]any{"entries": list})
	}
	if len(entries) == 0 {
		fmt.Fprintln(app.IO.ErrOut, "No requests logged yet. They appear here once a command or an agent uses a server.")
		return nil
	}
	tw := tabwriter.NewWriter(app.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSERVER\tMETHOD\tTOOL\tMS\tOUTCOME\tSTATUS\tIN\tOUT")
	for _, e := range entries {
		status := "-"
		if e.HTTPStatus != 0 {
			status = fmt.Sprint(e.HTTPStatus)
		}
		tool := e.Tool
		if tool == "" {
			tool = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\n",
			e.Time.Local().Format("2006-01-02 15:04:05"), sanitize(e.Server), sanitize(e.Method), sanitize(tool),
			e.Duration.Milliseconds(), sanitize(e.Outcome), status, e.BytesIn, e.BytesOut)
	}
	return tw.Flush()
}

// readLog reads the store's log without creating a store (or a key) that
// does not exist yet: then nothing was logged.
func readLog(ctx context.Context, app *App, last int) ([]*store.LogEntry, error) {
	if app.store == nil {
		if _, err := app.DataDir(); err != nil {
			return nil, err
		}
		if _, err := os.Stat(app.storePath()); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	st, err := app.Store()
	if err != nil {
		return nil, err
	}
	return st.RecentLog(ctx, "", last)
}

const (
	// logQueueSize bounds the entries waiting for the store; when the
	// store is slower than the requests, the oldest are dropped.
	logQueueSize = 1000
	// logWriteTimeout bounds one write of the queue, and the last one at
	// close, so a store held by a long token refresh elsewhere cannot
	// hold the process.
	logWriteTimeout = 5 * time.Second
	// logBatchDelay gathers the requests of a burst into one write, so the
	// log takes the store's write lock once per burst, not per request.
	logBatchDelay = 50 * time.Millisecond
)

// logSink carries the manager's request log to the store in the
// background, so that `mcpgate log` in another process sees what this one
// did. add never blocks a request: entries wait in a bounded queue, and
// whatever piled up while one write ran goes in the next, as one batch.
type logSink struct {
	st store.Store

	mu    sync.Mutex
	queue []*store.LogEntry

	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newLogSink(st store.Store) *logSink {
	s := idleLogSink(st)
	go s.run()
	return s
}

// idleLogSink is a sink that queues but does not write until run starts.
func idleLogSink(st store.Store) *logSink {
	return &logSink{st: st, wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
}

// add queues e, dropping the oldest entry when the queue is full.
func (s *logSink) add(e manager.RequestLogEntry) {
	s.mu.Lock()
	if len(s.queue) == logQueueSize {
		copy(s.queue, s.queue[1:])
		s.queue = s.queue[:len(s.queue)-1]
	}
	s.queue = append(s.queue, &store.LogEntry{
		Time: e.Time, Server: e.Server, Method: e.Method, Tool: e.Tool, Duration: e.Duration,
		Outcome: e.Outcome, HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
	})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *logSink) run() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			select {
			case <-time.After(logBatchDelay):
			case <-s.closing:
			}
			s.write()
		case <-s.closing:
			s.write()
			return
		}
	}
}

// write appends what is queued. A failed write loses its batch: the log
// is a diagnostic, not worth holding anything up for.
func (s *logSink) write() {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), logWriteTimeout)
	defer cancel()
	_ = s.st.AppendLog(ctx, batch)
}

// close writes what is still queued and stops. Entries added afterwards
// are dropped.
func (s *logSink) close() {
	s.once.Do(func() { close(s.closing) })
	<-s.done
}
