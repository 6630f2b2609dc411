package termmodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// Snapshot is the screen as a person sees it.
type Snapshot struct {
	Name string `json:"name"`
	// Lines are the visible rows, trailing spaces removed; there are Rows
	// of them.
	Lines   []string `json:"lines"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
	CursorX int      `json:"cursor_x"` // column, from 0
	CursorY int      `json:"cursor_y"` // row, from 0
	// CursorVisible is false when the program hid the cursor.
	CursorVisible bool `json:"cursor_visible"`
	// AltScreen is true when the program uses the alternate screen (a
	// full-screen TUI).
	AltScreen bool `json:"alt_screen"`
	// BracketedPaste is true when the program enabled bracketed paste.
	BracketedPaste bool `json:"bracketed_paste"`
	// Hash is the SHA-256 (hex) of the visible text, Lines joined by "\n":
	// equal hashes mean the same text on screen.
	Hash string `json:"hash"`
	// Seq is the last event-log seq the screen reflects.
	Seq uint64 `json:"seq"`
}

// Screen is the terminal model of one session: the rendered screen a person
// would see, fed with the program's output. It is not safe for concurrent
// use; its owner (the session's worker) holds a lock around every call.
type Screen struct {
	emu        *vt.Emulator
	paste      atomic.Bool // DECSET 2004 seen (and not reset)
	cursorHide bool
	alt        bool
	// capture holds the lines scrolled off while an ask or wait runs
	// (captureUsers of them); nil otherwise.
	capture      *scrollCapture
	captureUsers int
	// marks bounds the combining characters a cell keeps (maxCellMarks);
	// every byte the emulator is fed goes through it (feed).
	marks markLimiter
	// strs keeps UTF-8 inside control strings from ending them (strings.go).
	strs stringFilter
	// pending is output queued (Queue) and not yet fed; scrollRegion says
	// whether the program has set a scroll region (where plain text does
	// not simply scroll, so it is never compacted).
	pending      []byte
	scrollRegion bool
}

// New returns a screen of the given size whose terminal replies (device
// attributes, cursor reports) are passed to reply on another goroutine,
// until Close. Without a reply func, replies are dropped.
func New(cols, rows int, reply func([]byte)) *Screen {
	s := &Screen{emu: vt.NewEmulator(cols, rows)}
	// Snapshots show the visible screen only, and a vt cell costs ~100
	// bytes: keep (next to) no scrollback; the event log has the history.
	s.emu.SetScrollbackSize(1)
	s.emu.SetCallbacks(vt.Callbacks{
		EnableMode: func(m ansi.Mode) {
			if m == ansi.ModeBracketedPaste {
				s.paste.Store(true)
			}
		},
		DisableMode: func(m ansi.Mode) {
			if m == ansi.ModeBracketedPaste {
				s.paste.Store(false)
			}
		},
		CursorVisibility: func(v bool) { s.cursorHide = !v },
		AltScreen:        func(on bool) { s.alt = on },
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := s.emu.Read(buf)
			if n > 0 && reply != nil { // without a reply func, replies are dropped
				reply(append([]byte(nil), buf[:n]...))
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// Write feeds program output to the screen at once (after anything
// queued).
func (s *Screen) Write(p []byte) {
	s.Flush()
	s.feed(p)
}

// feed writes program output to the emulator, each cell bounded to
// maxCellMarks combining characters, control strings kept whole
// (strings.go).
func (s *Screen) feed(p []byte) { s.emu.Write(s.marks.filter(s.strs.filter(p))) }

// Resize changes the screen's size, after feeding what is queued (it was
// written for the old size).
func (s *Screen) Resize(cols, rows int) {
	s.Flush()
	s.emu.Resize(cols, rows)
}

// Close stops the reply goroutine. It closes the emulator's reply pipe
// rather than calling Emulator.Close, whose closed flag is read without a
// lock by Emulator.Read.
func (s *Screen) Close() {
	if pw, ok := s.emu.InputPipe().(*io.PipeWriter); ok {
		pw.CloseWithError(io.EOF)
	}
}

// Size is the screen's size.
func (s *Screen) Size() (cols, rows int) { return s.emu.Width(), s.emu.Height() }

// Cursor is the cursor's position on the screen, from 0.
func (s *Screen) Cursor() (x, y int) {
	p := s.emu.CursorPosition()
	return p.X, p.Y
}

// Alt reports whether the program uses the alternate screen (a full-screen
// program).
func (s *Screen) Alt() bool { return s.alt }

// BracketedPaste reports whether the program enabled bracketed paste
// (DECSET 2004).
func (s *Screen) BracketedPaste() bool { return s.paste.Load() }

// Lines returns the visible rows as text, trailing spaces removed.
func (s *Screen) Lines() []string {
	h := s.emu.Height()
	out := make([]string, h)
	var b strings.Builder
	for y := range h {
		out[y] = s.rowText(&b, y)
	}
	return out
}

// rowText is screen row y as text, trailing spaces removed.
func (s *Screen) rowText(b *strings.Builder, y int) string {
	return cellsText(b, s.emu.Width(), false, func(x int) *uv.Cell { return s.emu.CellAt(x, y) })
}

// BeforeCursor is the cursor's row up to the cursor, spaces kept (a
// prompt such as ">>> " ends in one), and whether the row is blank after
// the cursor.
func (s *Screen) BeforeCursor() (text string, restBlank bool) {
	p := s.emu.CursorPosition()
	if p.Y < 0 || p.Y >= s.emu.Height() {
		return "", true
	}
	var b strings.Builder
	text = cellsText(&b, min(p.X, s.emu.Width()), true, func(x int) *uv.Cell { return s.emu.CellAt(x, p.Y) })
	rest := cellsText(&b, s.emu.Width()-p.X, false, func(x int) *uv.Cell { return s.emu.CellAt(p.X+x, p.Y) })
	return text, rest == ""
}

// StartCapture begins keeping the text of lines that scroll off the top,
// numbering rows absolutely (see scrollCapture), or joins the capture
// running. Every call is matched by one StopCapture.
func (s *Screen) StartCapture() {
	s.captureUsers++
	if s.capture != nil {
		return
	}
	s.emu.ClearScrollback()
	s.emu.SetScrollbackSize(captureScrollback)
	s.capture = &scrollCapture{}
}

// StopCapture leaves the capture, ending it with its last user.
func (s *Screen) StopCapture() {
	if s.captureUsers--; s.captureUsers > 0 {
		return
	}
	s.capture = nil
	s.emu.ClearScrollback()
	s.emu.SetScrollbackSize(1)
}

// Top is the absolute row number of the screen's first row while
// capturing: the number of rows scrolled off since the capture began (0
// when not capturing).
func (s *Screen) Top() int {
	if s.capture == nil {
		return 0
	}
	return s.capture.top()
}

// CursorRow is the cursor's absolute row while capturing (its screen row
// otherwise).
func (s *Screen) CursorRow() int {
	y := s.emu.CursorPosition().Y
	if s.capture != nil {
		y += s.capture.top()
	}
	return y
}

// Rows returns the absolute rows [from, to) as text, trailing spaces
// removed, and whether some of them were dropped from the capture.
func (s *Screen) Rows(from, to int) (out []string, cut bool) {
	top := 0
	var c *scrollCapture
	if s.capture != nil {
		c = s.capture
		top = c.top()
	}
	if c != nil && from < c.dropped {
		from, cut = c.dropped, true
	}
	from = max(from, 0)
	to = min(to, top+s.emu.Height())
	var b strings.Builder
	for r := from; r < to; r++ {
		if r < top {
			out = append(out, c.lines[c.off+r-c.dropped])
		} else {
			out = append(out, s.rowText(&b, r-top))
		}
	}
	return out, cut
}

// drainScrollback moves what vt scrolled off into the capture.
func (s *Screen) drainScrollback() {
	sb := s.emu.Scrollback()
	if sb == nil || sb.Len() == 0 {
		return
	}
	var b strings.Builder
	for _, l := range sb.Lines() {
		s.capture.push(cellsText(&b, len(l), false, func(x int) *uv.Cell { return &l[x] }))
	}
	s.emu.ClearScrollback()
}

// feedCapturing writes output while an ask captures: in chunks small
// enough for vt's scrollback, draining it after each, and with a long
// middle of plain text rendered here (plain is false while the program has
// set a scroll region, where plain text does not simply scroll).
func (s *Screen) feedCapturing(data []byte, plain bool) {
	w, h := s.Size()
	if plain && !s.alt {
		if head, mid, tail, ok := splitPlainRun(data, h); ok {
			s.writeChunked(head)
			// The rows above the cursor scroll off before the middle.
			p := s.emu.CursorPosition()
			var b strings.Builder
			for y := 0; y < p.Y; y++ {
				s.capture.push(s.rowText(&b, y))
			}
			r := &plainRenderer{cols: w, row: make([]rune, w), x: min(p.X, w-1), emit: s.capture.push}
			r.write(mid)
			// The tail is drawn on a cleared screen from the top, where
			// the middle left the cursor; what the clear scrolls off is
			// already captured.
			s.emu.Write([]byte("\x1b[H\x1b[2J"))
			s.emu.ClearScrollback()
			if r.x > 0 {
				fmt.Fprintf(s.emu, "\x1b[%dG", r.x+1)
			}
			s.writeChunked(tail)
			return
		}
	}
	s.writeChunked(data)
}

func (s *Screen) writeChunked(data []byte) {
	for len(data) > 0 {
		n, i := 0, 0
		for n < captureChunkLines {
			j := bytes.IndexByte(data[i:], '\n')
			if j < 0 {
				i = len(data)
				break
			}
			i += j + 1
			n++
		}
		s.feed(data[:i])
		s.drainScrollback()
		data = data[i:]
	}
}

// Snapshot is the screen as a person sees it, for session name at event
// seq.
func (s *Screen) Snapshot(name string, seq uint64) Snapshot {
	ls := s.Lines()
	w, h := s.Size()
	p := s.emu.CursorPosition()
	return Snapshot{Name: name, Lines: ls, Cols: w, Rows: h, CursorX: p.X, CursorY: p.Y,
		CursorVisible: !s.cursorHide, AltScreen: s.alt, BracketedPaste: s.paste.Load(),
		Hash: hashLines(ls), Seq: seq}
}

func hashLines(ls []string) string {
	h := sha256.New()
	for i, l := range ls {
		if i > 0 {
			io.WriteString(h, "\n")
		}
		io.WriteString(h, l)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Repaint returns bytes that draw the current screen, with its colours, on
// a terminal of the same size: clear, every row, then the cursor.
func (s *Screen) Repaint() []byte {
	w, h := s.Size()
	var b strings.Builder
	if s.alt {
		b.WriteString("\x1b[?1049h")
	}
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	line := make(uv.Line, w)
	for y := range h {
		for x := range w {
			if c := s.emu.CellAt(x, y); c != nil {
				line[x] = *c
			} else {
				line[x] = uv.EmptyCell
			}
		}
		fmt.Fprintf(&b, "\x1b[%d;1H", y+1)
		b.WriteString(line.Render())
		b.WriteString("\x1b[0m")
	}
	p := s.emu.CursorPosition()
	fmt.Fprintf(&b, "\x1b[%d;%dH", p.Y+1, p.X+1)
	if s.paste.Load() {
		b.WriteString(ansi.SetModeBracketedPaste)
	}
	if s.cursorHide {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}
