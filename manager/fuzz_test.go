package manager

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzEventFrames: SSE frames as a hostile server may send them, through
// the filter every POST response stream passes (with or without event IDs
// removed) and through the supervisor's forwarding of event streams.
// The filter changes nothing but id lines, and says a stream that ends
// inside an event is broken; forwarding writes only whole events, each
// within the bound.
func FuzzEventFrames(f *testing.F) {
	f.Add([]byte("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), false)
	f.Add([]byte("retry: 1\n\n: comment\r\ndata: a\r\ndata: b\r\n\r\n"), true)
	f.Add([]byte("data: {\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: partial"), false)
	f.Add([]byte("id\nid:x\nid: y\ndata:\n\n\n\n"), true)
	f.Add(append([]byte("data: "), bytes.Repeat([]byte("x"), 70<<10)...), false)
	// A line that fills the reader's buffer exactly, so its line break
	// comes alone: not a blank line.
	f.Add(append(bytes.Repeat([]byte("x"), 16<<10), '\n'), false)
	f.Add(append(append([]byte("id: "), bytes.Repeat([]byte("7"), 8<<10)...), "\ndata: a\n\n"...), true)
	f.Fuzz(func(t *testing.T, body []byte, stripIDs bool) {
		out, err := io.ReadAll(filterEvents(io.NopCloser(bytes.NewReader(body)), stripIDs, nil))
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read error %v", err)
		}
		want := body
		if stripIDs {
			want = withoutIDLines(body)
		}
		if err == nil && !bytes.Equal(out, want) {
			t.Errorf("the filter changed a whole stream:\n%q\nto\n%q", want, out)
		}
		if err != nil && !bytes.HasPrefix(want, out) {
			t.Errorf("the filter changed a broken stream:\n%q\nto\n%q", want, out)
		}
		if err == nil && len(want) > 0 && !endsEvent(want) {
			t.Errorf("a stream that ends inside an event read as whole: %q", body)
		}

		var w bytes.Buffer
		lastID, retry, werr := forwardEvents(bytes.NewReader(body), &w, nil)
		if werr != nil || retry < 0 {
			t.Fatalf("forwarding: %v, retry %v", werr, retry)
		}
		fw := w.String()
		if fw != "" && !strings.HasSuffix(fw, "\n\n") {
			t.Errorf("forwarded a partial event: %q", fw)
		}
		for _, ev := range strings.SplitAfter(fw, "\n\n") {
			if len(ev) > maxStreamEventBytes+2 {
				t.Errorf("forwarded an event of %d bytes", len(ev))
			}
		}
		if lastID != "" && !bytes.Contains(body, []byte(lastID)) {
			t.Errorf("last event ID %q is not in the stream", lastID)
		}
	})
}

// withoutIDLines is body without its id lines, as the filter must make it
// (lines longer than the reader's buffer pass in pieces, unexamined).
func withoutIDLines(body []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		bare := bytes.TrimRight(line, "\r\n")
		if bytes.HasPrefix(bare, []byte("id:")) || bytes.Equal(bare, []byte("id")) {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// endsEvent reports whether a stream's last line is the blank line that
// ends an event ("\r" alone counts: it is a line break in SSE).
func endsEvent(body []byte) bool {
	lines := bytes.SplitAfter(body, []byte("\n"))
	last := lines[len(lines)-1]
	if len(last) == 0 && len(lines) > 1 {
		last = lines[len(lines)-2]
	}
	return len(bytes.TrimRight(last, "\r\n")) == 0
}
