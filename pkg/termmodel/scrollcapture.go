package termmodel

import (
	"bytes"
	"strings"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// An ask reads its answer from the rendered terminal, and an answer may be
// longer than the screen: while an ask runs, the screen keeps the text of
// every line that scrolls off its top (a scrollCapture), so the rows of the
// ask's window can be read whole, by position. Outside asks the screen keeps
// no scrollback (a vt cell costs ~100 bytes; the event log has the history).
//
// vt renders about 2 MB/s of scrolling text (it moves every row of the
// screen on each line feed), too slow for an answer that is a flood. So a
// long run of plain text (printable characters, CR, LF, TAB, BS) that would
// scroll through the screen is rendered to text lines here instead, with the
// same wrapping, and only the part that stays visible goes through vt (see
// feedCapturing). That is exact when the rows below the cursor are empty,
// which is how line-oriented programs print.

// maxCaptureBytes bounds the text an ask keeps of lines scrolled off; past
// it the oldest lines are dropped and the answer says it was cut.
const maxCaptureBytes = 4 << 20

// captureChunkLines bounds the line feeds given to vt in one write while
// capturing, so its scrollback (captureScrollback lines) never fills between
// drains.
const (
	captureChunkLines = 256
	captureScrollback = 4 * captureChunkLines
)

// plainRunMin is the size of a plain-text middle worth rendering here rather
// than through vt.
const plainRunMin = 16 << 10

// scrollCapture is the text of the lines that scrolled off the screen since
// it began, oldest first. Row numbers are absolute: row dropped+i is
// lines[off+i], and screen row y is row dropped+len(lines)-off+y.
type scrollCapture struct {
	lines   []string
	off     int // lines[:off] are dropped and free to reuse
	bytes   int
	dropped int
}

func (c *scrollCapture) push(l string) {
	c.lines = append(c.lines, l)
	c.bytes += len(l) + 1
	c.dropWhile(func() bool { return c.bytes > maxCaptureBytes })
}

// dropWhile drops the oldest kept line while more holds, and compacts the
// slice once most of it is dropped.
func (c *scrollCapture) dropWhile(more func() bool) {
	for c.off < len(c.lines) && more() {
		c.bytes -= len(c.lines[c.off]) + 1
		c.lines[c.off] = ""
		c.off++
		c.dropped++
	}
	if c.off > 4096 && c.off > len(c.lines)/2 {
		c.lines = append(c.lines[:0], c.lines[c.off:]...)
		c.off = 0
	}
}

// kept is the number of captured lines held.
func (c *scrollCapture) kept() int { return len(c.lines) - c.off }

// top is the absolute row of the screen's first row.
func (c *scrollCapture) top() int { return c.dropped + c.kept() }

// cellsText is the text of a row of n cells: wide characters once, missing
// cells as spaces; trailing spaces are kept only with keepTrailing.
func cellsText(b *strings.Builder, n int, keepTrailing bool, cell func(x int) *uv.Cell) string {
	b.Reset()
	pending := 0
	for x := 0; x < n; x++ {
		c := cell(x)
		if c == nil {
			pending++
			continue
		}
		if c.Width == 0 && c.Content == "" {
			continue // the right half of a wide character
		}
		if c.Content == "" || c.Content == " " {
			pending++
			continue
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		b.WriteString(c.Content)
	}
	if keepTrailing {
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// plainRunStart returns where the trailing plain-text run of data starts.
func plainRunStart(data []byte) int {
	for i := len(data) - 1; i >= 0; i-- {
		c := data[i]
		if c < 0x20 && c != '\r' && c != '\n' && c != '\t' && c != '\b' || c == 0x7f {
			return i + 1
		}
	}
	return 0
}

// splitPlainRun splits data for feedCapturing: head goes through vt, then
// middle (whole lines of plain text) is rendered here, then tail (the last
// rows line feeds and what follows) goes through vt on a cleared screen. ok
// is false when there is no middle worth the trouble.
func splitPlainRun(data []byte, rows int) (head, middle, tail []byte, ok bool) {
	start := plainRunStart(data)
	run := data[start:]
	first := bytes.IndexByte(run, '\n')
	if first < 0 {
		return nil, nil, nil, false
	}
	// The tail holds the last rows line feeds.
	cut := len(run)
	for need := rows; need > 0; need-- {
		j := bytes.LastIndexByte(run[:cut], '\n')
		if j <= first {
			return nil, nil, nil, false
		}
		cut = j
	}
	cut++ // after that line feed; the tail starts a line
	if cut-(first+1) < plainRunMin || !utf8.Valid(run[first+1:cut]) {
		return nil, nil, nil, false
	}
	return data[:start+first+1], run[first+1 : cut], run[cut:], true
}

// plainRenderer lays plain text out in rows the way a terminal with
// autowrap does, producing the text of each row that is finished.
type plainRenderer struct {
	cols int
	row  []rune // the current row, cell by cell; 0 is an empty cell
	x    int
	wrap bool // the last column was written: the next character wraps
	emit func(string)
}

func (r *plainRenderer) flushRow() {
	var b strings.Builder
	n := len(r.row)
	for n > 0 && (r.row[n-1] == 0 || r.row[n-1] == ' ') {
		n--
	}
	for _, c := range r.row[:n] {
		switch c {
		case 0:
			b.WriteByte(' ')
		case -1: // the right half of a wide character
		default:
			b.WriteRune(c)
		}
	}
	r.emit(b.String())
	clear(r.row)
}

func (r *plainRenderer) write(p []byte) {
	for len(p) > 0 {
		c, size := utf8.DecodeRune(p)
		p = p[size:]
		switch c {
		case '\r':
			r.x, r.wrap = 0, false
		case '\n':
			r.flushRow()
			r.wrap = false
		case '\b':
			if r.wrap {
				r.wrap = false
			} else if r.x > 0 {
				r.x--
			}
		case '\t':
			r.x = min((r.x/8+1)*8, r.cols-1)
			r.wrap = false
		default:
			w := ansi.StringWidth(string(c))
			if w == 0 {
				continue // combining marks are rare in floods; drop them
			}
			if r.wrap || r.x+w > r.cols {
				r.flushRow()
				r.x, r.wrap = 0, false
			}
			r.row[r.x] = c
			if w == 2 && r.x+1 < r.cols {
				r.row[r.x+1] = -1
			}
			r.x += w
			if r.x >= r.cols {
				r.x, r.wrap = r.cols-1, true
			}
		}
	}
}

// forget drops the kept lines above absolute row upTo: a reader has taken
// them.
func (c *scrollCapture) forget(upTo int) {
	c.dropWhile(func() bool { return c.dropped < upTo })
}
