package session

import (
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

// screen is the terminal model of one session. It is not safe for
// concurrent use; the worker holds its lock around every call.
type screen struct {
	emu        *vt.Emulator
	paste      atomic.Bool // DECSET 2004 seen (and not reset)
	cursorHide bool
	alt        bool
}

// newScreen returns a screen of the given size whose terminal replies
// (device attributes, cursor reports) are passed to reply on another
// goroutine, until close.
func newScreen(cols, rows int, reply func([]byte)) *screen {
	s := &screen{emu: vt.NewEmulator(cols, rows)}
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

func (s *screen) write(p []byte) { s.emu.Write(p) }

func (s *screen) resize(cols, rows int) { s.emu.Resize(cols, rows) }

// close stops the reply goroutine. It closes the emulator's reply pipe
// rather than calling Emulator.Close, whose closed flag is read without a
// lock by Emulator.Read.
func (s *screen) close() {
	if pw, ok := s.emu.InputPipe().(*io.PipeWriter); ok {
		pw.CloseWithError(io.EOF)
	}
}

func (s *screen) size() (cols, rows int) { return s.emu.Width(), s.emu.Height() }

// lines returns the visible rows as text, trailing spaces removed.
func (s *screen) lines() []string {
	w, h := s.emu.Width(), s.emu.Height()
	out := make([]string, h)
	var b strings.Builder
	for y := range h {
		b.Reset()
		pending := 0
		for x := 0; x < w; x++ {
			c := s.emu.CellAt(x, y)
			if c == nil || c.Width == 0 && c.Content == "" {
				if c == nil {
					pending++
				}
				continue
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
		out[y] = b.String()
	}
	return out
}

// cursorLine returns the text of the row the cursor is on.
func (s *screen) cursorLine() string {
	p := s.emu.CursorPosition()
	ls := s.lines()
	if p.Y >= 0 && p.Y < len(ls) {
		return ls[p.Y]
	}
	return ""
}

func (s *screen) snapshot(name string, seq uint64) Snapshot {
	ls := s.lines()
	w, h := s.size()
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

// repaint returns bytes that draw the current screen, with its colours, on
// a terminal of the same size: clear, every row, then the cursor.
func (s *screen) repaint() []byte {
	w, h := s.size()
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
