package session

import (
	"bytes"
	"regexp"
	"unicode/utf8"
)

// The screen model is the slow part of the output path (vt copies the
// whole screen on every scroll), so output is fed to it lazily: the worker
// queues output and flushes the queue before anyone looks at the screen, or
// when the queue grows past screenFlushAt. Before feeding, a long run of
// plain text (printable characters, CR, LF, TAB, BS: no escape sequence,
// no other control) is shortened to its last rows+1 lines: everything
// before them scrolls off the screen anyway and plain text changes no
// terminal state, so the visible screen is the same. This is skipped while
// the program has set a scroll region, where that does not hold.

// screenFlushAt bounds the output waiting for the screen model.
const screenFlushAt = 1 << 20

var scrollRegionRE = regexp.MustCompile(`\x1b\[(\d*)(?:;(\d*))?r`)

// compactPlain returns data with its trailing plain-text run shortened to
// the last rows+1 lines, or data itself when that is not safe or not worth
// it.
func compactPlain(data []byte, rows int) []byte {
	start := plainRunStart(data)
	tail := data[start:]
	// Find the (rows+1)th CRLF from the end of the tail.
	need := rows + 1
	cut := -1
	for i := len(tail); need > 0; {
		j := bytes.LastIndex(tail[:i], []byte("\r\n"))
		if j < 0 {
			return data
		}
		need--
		i = j
		cut = j
	}
	if cut < 4096 || !utf8.Valid(tail[:cut]) {
		return data // not worth it, or bytes a parser might read as C1 controls
	}
	out := make([]byte, 0, start+1+len(tail)-cut)
	out = append(out, data[:start]...)
	out = append(out, '\r')
	return append(out, tail[cut:]...)
}

// scrollRegionSet reports whether data leaves a scroll region other than
// the full screen set (given the previous state).
func scrollRegionSet(prev bool, data []byte, rows int) bool {
	if bytes.IndexByte(data, 0x1b) < 0 {
		return prev
	}
	for _, m := range scrollRegionRE.FindAllSubmatch(data, -1) {
		top, bottom := string(m[1]), string(m[2])
		full := (top == "" || top == "1" || top == "0") && (bottom == "" || bottom == itoa(rows))
		prev = !full
	}
	return prev
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
