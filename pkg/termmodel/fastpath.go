package termmodel

import (
	"bytes"
	"regexp"
	"unicode/utf8"
)

// The screen model is the slow part of the output path (vt copies the
// whole screen on every scroll), so output is fed to it lazily: the owner
// queues output (Queue) and the queue is fed before anyone looks at the
// screen (every method that reads it calls Flush first), when it grows past
// screenFlushAt, or at once when the output asks the terminal a question
// (a cursor position or device attributes query), which the program waits
// for. Before feeding, a long run of
// plain text (printable characters, CR, LF, TAB, BS: no escape sequence,
// no other control) is shortened to its last rows+1 lines: everything
// before them scrolls off the screen anyway and plain text changes no
// terminal state, so the visible screen is the same. This is skipped while
// the program has set a scroll region, where that does not hold.

// screenFlushAt bounds the output waiting for the screen model.
const screenFlushAt = 1 << 20

// Queue adds program output to what the screen will show, feeding it at
// once only when the queue is long or the output holds a terminal query.
// It reports whether p held a query (which the reply func will answer).
func (s *Screen) Queue(p []byte) (query bool) {
	s.pending = append(s.pending, p...)
	query = HasQuery(p)
	if len(s.pending) >= screenFlushAt || query {
		s.Flush()
	}
	return query
}

// Flush feeds the queued output to the emulator.
func (s *Screen) Flush() {
	if len(s.pending) == 0 {
		return
	}
	data := s.pending
	_, rows := s.Size()
	if s.capture != nil {
		s.feedCapturing(data, !s.scrollRegion)
	} else {
		if !s.scrollRegion {
			data = compactPlain(data, rows)
		}
		s.feed(data)
	}
	s.scrollRegion = scrollRegionSet(s.scrollRegion, s.pending, rows)
	if cap(s.pending) > 4*screenFlushAt {
		s.pending = nil
	} else {
		s.pending = s.pending[:0]
	}
}

// HasQuery reports whether p may hold a query the terminal answers: a CSI
// sequence ending in n (DSR: cursor position, status), c (device
// attributes), t (window reports) or $p (DECRQM), or DCS/OSC requests
// (XTGETTCAP, colour queries). It errs towards true: a false positive only
// feeds the screen early.
func HasQuery(p []byte) bool {
	for i := bytes.IndexByte(p, 0x1b); i >= 0 && i+1 < len(p); {
		switch p[i+1] {
		case '[':
			j := i + 2
			for j < len(p) && (p[j] >= 0x20 && p[j] <= 0x3f) {
				j++
			}
			if j < len(p) {
				switch p[j] {
				case 'n', 'c', 't':
					return true
				case 'p':
					if j > i+2 && p[j-1] == '$' {
						return true
					}
				}
			}
		case 'P':
			return true
		case ']':
			if k := bytes.IndexByte(p[i:], '?'); k >= 0 && k < 64 {
				return true
			}
		}
		k := bytes.IndexByte(p[i+1:], 0x1b)
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

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
