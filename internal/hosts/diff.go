package hosts

import (
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// unifiedDiff is the unified diff (as diff -u writes it) from a to b. An
// edit here changes one place in a file that may be long (~/.claude.json),
// so the common head and tail are set aside first and only what lies
// between is compared line by line.
func unifiedDiff(nameA, nameB string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	if head == len(x) && head == len(y) {
		return ""
	}
	ops := make([]diffOp, 0, len(x)+len(y))
	for i := range head {
		ops = append(ops, diffOp{' ', x[i]})
	}
	ops = append(ops, lineDiff(x[head:len(x)-tail], y[head:len(y)-tail])...)
	for i := len(x) - tail; i < len(x); i++ {
		ops = append(ops, diffOp{' ', x[i]})
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	lineA, lineB := 1, 1 // line numbers at ops[i]
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i, lineA, lineB = i+1, lineA+1, lineB+1
			continue
		}
		// A hunk: back up over the context, then run until a stretch of
		// more than twice the context is unchanged.
		start := max(0, i-diffContext)
		startA, startB := lineA-(i-start), lineB-(i-start)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			} else if j-end >= 2*diffContext {
				break
			}
		}
		end = min(len(ops), end+diffContext)
		var countA, countB int
		var body strings.Builder
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				countA++
			}
			if op.kind != '-' {
				countB++
			}
			body.WriteByte(op.kind)
			body.WriteString(redact(op.line))
			if !strings.HasSuffix(op.line, "\n") {
				body.WriteString("\n\\ No newline at end of file\n")
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(startA, countA), hunkRange(startB, countB), body.String())
		lineA, lineB = startA+countA, startB+countB
		i = end
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

func hunkRange(start, count int) string {
	if count == 0 {
		start-- // diff -u names the line before an empty range
	}
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

// lineDiff is a shortest edit from x to y by longest common subsequence;
// beyond a few million cells it gives up finding one and replaces x with y.
func lineDiff(x, y []string) []diffOp {
	var ops []diffOp
	if len(x)*len(y) > 4<<20 {
		for _, l := range x {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range y {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, diffOp{'+', y[j]})
			j++
		default:
			ops = append(ops, diffOp{'-', x[i]})
			i++
		}
	}
	return ops
}

// Host configs hold credentials next to the entry a diff shows (a server's
// env, a header, ~/.claude.json's own keys), and a diff's context lines
// would print them. redact masks the value of every key that names a
// credential, a bearer token and the password in a URL. The lines mcpgate
// writes have none of those. (mcpgate.Sanitize redacts one-line remote
// text; config lines quote their keys and keep their indentation.)
var (
	secretValue = lazyregexp.New(`(?i)("?[A-Za-z0-9_.-]*(?:token|secret|passw|api[_-]?key|authorization|credential|private[_-]?key|access[_-]?key|cookie|session)[A-Za-z0-9_.-]*"?'?\s*[:=]\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,}\]#{\[][^\s,}\]#]*)`)
	bearerValue = lazyregexp.New(`(?i)(bearer\s+)[^"'\s,]+`)
	urlPassword = lazyregexp.New(`(://[^/@\s"':]*:)[^/@\s"']+@`)
	// knownToken is a token by its issuer's prefix, wherever it is (an
	// argument, a URL).
	knownToken = lazyregexp.New(`\b(?:sk|pk|rk|ghp|gho|ghs|github_pat|xox[abp])[-_][A-Za-z0-9_-]{8,}`)
)

func redact(line string) string {
	line = secretValue().ReplaceAllString(line, `${1}"***"`)
	line = bearerValue().ReplaceAllString(line, `${1}***`)
	line = urlPassword().ReplaceAllString(line, `${1}***@`)
	return knownToken().ReplaceAllString(line, "***")
}
