package termmodel

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// TestCaptureMatchesVT feeds the same output to a capturing screen (which
// renders long plain runs itself) and to a bare vt emulator that keeps all
// its scrollback: every row must read the same.
func TestCaptureMatchesVT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "宽", "é", " ", "\t", "\r\n", "\r\n", "\n", "\r", "\b", "xyz0123456789", "\x1b[31m", "\x1b[0m"}
	for round := range 40 {
		cols, rows := 5+rng.IntN(40), 2+rng.IntN(10)
		var data []byte
		for range 20000 + rng.IntN(40000) {
			p := pieces[rng.IntN(len(pieces))]
			if strings.HasPrefix(p, "\x1b") && rng.IntN(50) != 0 {
				continue // escapes are rare, so plain runs are long
			}
			data = append(data, p...)
		}
		s := New(cols, rows, nil)
		s.Write([]byte("$ "))
		s.StartCapture()
		start := s.CursorRow()
		for off := 0; off < len(data); {
			n := min(len(data)-off, 1+rng.IntN(1<<16))
			s.feedCapturing(data[off:off+n], true)
			off += n
		}
		got, _ := s.Rows(start, s.capture.top()+rows)
		s.Close()

		ref := vt.NewEmulator(cols, rows)
		ref.SetScrollbackSize(1 << 20)
		ref.Write([]byte("$ "))
		ref.Write(data)
		var want []string
		var b strings.Builder
		for _, l := range ref.Scrollback().Lines() {
			want = append(want, cellsText(&b, len(l), false, func(x int) *uv.Cell { return &l[x] }))
		}
		for y := range rows {
			want = append(want, cellsText(&b, cols, false, func(x int) *uv.Cell { return ref.CellAt(x, y) }))
		}
		if len(got) != len(want) {
			t.Fatalf("round %d (%dx%d): %d rows, want %d", round, cols, rows, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d (%dx%d): row %d of %d is %q, want %q", round, cols, rows, i, len(want), got[i], want[i])
			}
		}
	}
}

func TestPromptShapes(t *testing.T) {
	for _, tc := range []struct {
		learned, seen string
		want          bool
	}{
		{">>> ", ">>> ", true},
		{">>> ", "... ", false},
		{"In [3]: ", "In [4]: ", true},
		{"In [3]: ", "   ...: ", false},
		{"me@host:~$ ", "me@host:/tmp$ ", true}, // a shell shows its directory
		{"sqlite> ", "   ...> ", false},
		{"(gdb) ", "(gdb) ", true},
		{">>> ", ">>> x", false},
		{"% ", "% ", true},
	} {
		if got := LearnPrompt(tc.learned).Matches(tc.seen); got != tc.want {
			t.Errorf("prompt %q matches %q: got %v, want %v", tc.learned, tc.seen, got, tc.want)
		}
	}
	var none *Prompt
	if none.Matches(">>> ") {
		t.Error("no prompt matched")
	}
	for s, want := range map[string]bool{">>> ": true, "sqlite> ": true, "bash-5.2$ ": true, "❯ ": true, "": false, "   ": false, "abc": false, "Password: ": true} {
		if PromptLike(s) != want {
			t.Errorf("PromptLike(%q) = %v", s, !want)
		}
	}
}

func TestScreenLinesAndRepaint(t *testing.T) {
	s := New(20, 3, nil)
	defer s.Close()
	s.Write([]byte("hello \x1b[1mworld\x1b[0m\r\n宽字\r\n\x1b[?2004h"))
	ls := s.Lines()
	if ls[0] != "hello world" || ls[1] != "宽字" || ls[2] != "" {
		t.Errorf("lines: %q", ls)
	}
	if !s.BracketedPaste() {
		t.Error("bracketed paste not tracked")
	}
	// A repaint drawn on a fresh screen shows the same text.
	s2 := New(20, 3, nil)
	defer s2.Close()
	s2.Write(s.Repaint())
	if got := s2.Lines(); strings.Join(got, "|") != strings.Join(ls, "|") {
		t.Errorf("repaint gives %q, want %q", got, ls)
	}
	snap := s.Snapshot("x", 1)
	if snap.Hash != s2.Snapshot("x", 1).Hash || snap.CursorY != 2 {
		t.Errorf("snapshot: %+v", snap)
	}
	s.Write([]byte("\x1b[?2004l"))
	if s.BracketedPaste() {
		t.Error("bracketed paste reset not tracked")
	}
}

// TestCompactPlainSameScreen checks that the plain-text shortcut shows the
// same screen as feeding every byte.
func TestCompactPlainSameScreen(t *testing.T) {
	var data []byte
	data = append(data, "\x1b[1;32mgreen start\x1b[0m partial"...)
	for i := range 3000 {
		data = append(data, strings.Repeat("w", i%150)...)
		data = append(data, "\tline "...)
		data = append(data, strconv.Itoa(i)...)
		data = append(data, "\r\n"...)
	}
	data = append(data, "last line, no newline"...)
	compact := compactPlain(data, 24)
	if len(compact) >= len(data)/10 {
		t.Fatalf("compacted %d bytes to %d", len(data), len(compact))
	}
	full, short := New(80, 24, nil), New(80, 24, nil)
	defer full.Close()
	defer short.Close()
	full.Write([]byte("before\r\n"))
	short.Write([]byte("before\r\n"))
	full.Write(data)
	short.Write(compact)
	a, b := full.Snapshot("x", 0), short.Snapshot("x", 0)
	if a.Hash != b.Hash || a.CursorX != b.CursorX || a.CursorY != b.CursorY {
		t.Errorf("screens differ:\n%q\n%q", a.Lines, b.Lines)
	}
	if !scrollRegionSet(false, []byte("\x1b[2;10r"), 24) || scrollRegionSet(true, []byte("\x1b[r"), 24) {
		t.Error("scroll region tracking")
	}
}

func TestEchoRows(t *testing.T) {
	for _, tc := range []struct {
		q       string
		x, cols int
		want    int
	}{
		{"print(1)", 4, 80, 1}, {"", 4, 80, 1}, {strings.Repeat("a", 76), 4, 80, 1}, {strings.Repeat("a", 77), 4, 80, 2},
		{"a\nb\nc", 4, 80, 3}, {"宽宽", 0, 3, 2},
	} {
		if got := EchoRows(tc.q, tc.x, tc.cols); got != tc.want {
			t.Errorf("EchoRows(%q, %d, %d) = %d, want %d", tc.q, tc.x, tc.cols, got, tc.want)
		}
	}
}
func TestPlainTextAppliesEditsAndKeepsScrolledLines(t *testing.T) {
	p := NewPlainText(20, 3)
	defer p.Close()
	var got strings.Builder
	out := func(s string) { got.WriteString(p.Output([]byte(s))) }
	out("$ ecg\bho hi\r\n")      // a typo fixed with backspace
	out("hi\r\n$ progress 10%")  // redrawn in place below
	out("\r$ progress 100%\r\n") //
	out("\x1b[1mbold\x1b[0m\r\n$ ")
	got.WriteString(p.Lines(false))
	got.WriteString(p.End())
	want := "$ echo hi\nhi\n$ progress 100%\nbold\n$\n"
	if got.String() != want {
		t.Fatalf("plain text:\n%q\nwant\n%q", got.String(), want)
	}
	if rest := p.End(); rest != "" {
		t.Fatalf("End again gave %q; lines are handed out once", rest)
	}
}

func TestPlainTextHandsOutEachLineOnce(t *testing.T) {
	p := NewPlainText(80, 5)
	defer p.Close()
	var got strings.Builder
	var want strings.Builder
	for i := range 30000 { // enough to pass plainFeedAt several times
		line := fmt.Sprintf("line %d", i)
		want.WriteString(line + "\n")
		got.WriteString(p.Output([]byte(line + "\r\n")))
		got.WriteString(p.Lines(i%7 == 0))
	}
	got.WriteString(p.End())
	if got.String() != want.String() {
		t.Fatalf("got %d bytes, want %d:\n%s", got.Len(), want.Len(), got.String())
	}
	if k := p.scr.capture.kept(); k != 0 {
		t.Fatalf("%d lines still kept after being handed out", k)
	}
}
