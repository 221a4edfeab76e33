package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// Limits bound what one gateway answer may put into a model's context.
type Limits struct {
	// MaxBytes bounds the text of one answer; default 24 KiB.
	MaxBytes int
	// MaxLines bounds its lines; default 400.
	MaxLines int
	// MaxImageBytes bounds an image passed through as an image; larger ones
	// are described instead. Default 256 KiB; negative describes all. The
	// same bound applies to binary resource contents the bridge passes on.
	MaxImageBytes int
	// MaxAttachedBytes bounds the images (and binary resource contents)
	// one answer passes on together, each counted at its decoded size;
	// those past it are described instead. Default 1 MiB, so an answer
	// stays under about 1.4 MiB of base64 however many images a server
	// returns.
	MaxAttachedBytes int
	// MaxStructuredBytes bounds a tool's structured content (as JSON) the
	// bridge passes on to a host; default 64 KiB.
	MaxStructuredBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 24 << 10
	}
	if l.MaxLines <= 0 {
		l.MaxLines = 400
	}
	if l.MaxImageBytes == 0 {
		l.MaxImageBytes = 256 << 10
	}
	if l.MaxAttachedBytes <= 0 {
		l.MaxAttachedBytes = 1 << 20
	}
	if l.MaxStructuredBytes <= 0 {
		l.MaxStructuredBytes = 64 << 10
	}
	return l
}

// attachBudget counts what one answer passes on as binary content.
type attachBudget struct {
	lim  Limits
	used int
}

// take reports whether n more bytes may be attached, and counts them.
func (a *attachBudget) take(n int) bool {
	if a.lim.MaxImageBytes <= 0 || n > a.lim.MaxImageBytes || a.used+n > a.lim.MaxAttachedBytes {
		return false
	}
	a.used += n
	return true
}

// The marker around server-provided text. Every block carries a fresh
// random nonce in both markers, so content cannot close the block early:
// it would have to guess the nonce. The marker's name is also defused
// inside the content, so a forged marker does not even look like one.
const markerName = "untrusted-content"

// nonce is 12 random bytes in hex.
func nonce() (n [24]byte) {
	var b [12]byte
	rand.Read(b[:])
	hex.Encode(n[:], b[:])
	return n
}

// untrusted wraps server-provided text for a model: provenance, the
// nonce-carrying markers, and the bounded content. It runs on every
// result a model reads, so it is written out by hand, in one allocation
// but for a source that needs escaping: what fmt's %q would write.
func untrusted(source, content string, lim Limits) string {
	n := nonce()
	body, note := shown(content, lim)
	var b strings.Builder
	b.Grow(2*len(markerName) + 2*len(n) + len(source) + len(body) + len(note) + 32)
	b.WriteString("<" + markerName + ` nonce="`)
	b.Write(n[:])
	b.WriteString(`" source=`)
	if plainQuoted(source) {
		b.WriteByte('"')
		b.WriteString(source)
		b.WriteByte('"')
	} else {
		b.WriteString(strconv.Quote(source))
	}
	b.WriteString(">\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("</" + markerName + ` nonce="`)
	b.Write(n[:])
	b.WriteString(`">`)
	if note != "" {
		b.WriteByte('\n')
		b.WriteString(note)
	}
	return b.String()
}

// plainQuoted reports whether strconv.Quote(s) is s between quotes:
// printable ASCII without a quote or backslash.
func plainQuoted(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// forgedMarker is what a model may read as the marker's name: the two
// words in any case (long s included: it folds to s), joined by any dash,
// space or invisible character.
var forgedMarker = lazyregexp.New(`(?i)untrusted[\p{Pd}\p{Cf}\s]*content`)

// defuse keeps content from imitating the markers.
func defuse(s string) string {
	if !mayForge(s) {
		return s
	}
	return forgedMarker().ReplaceAllString(s, "untrusted_content")
}

// mayForge reports whether s holds "untru" in any case, as every match of
// forgedMarker begins: none of those four letters case-folds to anything
// outside ASCII (s does, to long s, which is why the check stops before
// it). It spares the regular expression the results that cannot match,
// nearly all of them; on 20 KB of text the expression alone took most of
// a millisecond.
func mayForge(s string) bool {
	for i := 0; i+len("untru") <= len(s); i++ {
		if s[i]|0x20 == 'u' && s[i+1]|0x20 == 'n' && s[i+2]|0x20 == 't' && s[i+3]|0x20 == 'r' && s[i+4]|0x20 == 'u' {
			return true
		}
	}
	return false
}

// shown is the part of content a model reads, defused and bounded, and
// the note that says what was cut. Only what the bounds keep is defused: a
// result of megabytes is not searched for markers in the part cut off (on
// 5 MB the expression took 180 ms). Defusing can lengthen a forged marker
// by a byte ("untrustedcontent") or join its lines, so the defused part is
// cut again; the note counts the content as the server sent it.
func shown(content string, lim Limits) (string, string) {
	kept := cut(content, lim)
	defused := defuse(kept)
	body := cut(defused, lim)
	if len(kept) == len(content) && len(body) == len(defused) {
		return body, ""
	}
	return body, truncated(body, content)
}

// cut is the longest start of s within the line and byte limits that ends
// on a rune boundary.
func cut(s string, lim Limits) string {
	c := s
	if n := lineCut(c, lim.MaxLines); n < len(c) {
		c = c[:n]
	}
	if len(c) > lim.MaxBytes {
		n := lim.MaxBytes
		for n > 0 && !utf8.RuneStart(c[n]) {
			n--
		}
		c = c[:n]
	}
	return c
}

// truncated is the notice that part is what a model sees of whole.
func truncated(part, whole string) string {
	shownLines := strings.Count(part, "\n")
	if part != "" && !strings.HasSuffix(part, "\n") {
		shownLines++
	}
	return fmt.Sprintf("[truncated: showing %d of %d bytes and %d of %d lines; ask for less (a narrower query, fewer results) to see the rest]",
		len(part), len(whole), shownLines, strings.Count(whole, "\n")+1)
}

// lineCut returns the byte offset after max lines.
func lineCut(s string, max int) int {
	off := 0
	for i := 0; i < max; i++ {
		j := strings.IndexByte(s[off:], '\n')
		if j < 0 {
			return len(s)
		}
		off += j + 1
	}
	return off
}
