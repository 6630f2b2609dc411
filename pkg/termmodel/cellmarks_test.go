package termmodel

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScreenCellKeepsAFewCombiningMarks: a program that prints rows of
// letters and then 150,000 combining accents (the attack of issue 21, D10)
// leaves a screen whose snapshot is still small, every cell holding its
// letter and at most maxCellMarks marks, however the output is split into
// writes.
func TestScreenCellKeepsAFewCombiningMarks(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	for range 45 {
		out.WriteString(strings.Repeat("a", 80) + "\r\n")
	}
	out.WriteString("a" + strings.Repeat("\u0301", 150_000))
	data := []byte(out.String())
	for _, chunk := range []int{len(data), 4096, 4095, 1} {
		s := New(80, 24, nil)
		for p := data; len(p) > 0; {
			n := min(chunk, len(p))
			s.Write(p[:n])
			p = p[n:]
		}
		snap := s.Snapshot("s", 0)
		b, _ := json.Marshal(snap)
		if len(b) > 64<<10 {
			t.Errorf("writes of %d bytes: the snapshot is %d bytes, want a screen's worth (under 64 KiB)", chunk, len(b))
		}
		for y := range 24 {
			for x := range 80 {
				c := s.emu.CellAt(x, y)
				if c == nil {
					continue
				}
				if n := utf8.RuneCountInString(c.Content); n > 1+maxCellMarks {
					t.Fatalf("writes of %d bytes: cell %d,%d holds %d characters, want at most %d", chunk, x, y, n, 1+maxCellMarks)
				}
			}
		}
		last := snap.Lines[snap.CursorY]
		if !strings.HasPrefix(last, "a\u0301") {
			t.Errorf("writes of %d bytes: the last row %q lost its letter and first accent", chunk, last[:min(len(last), 16)])
		}
		s.Close()
	}
}

// TestScreenKeepsOrdinaryClusters: text with the few marks real scripts
// use, and a character split across two writes, reach the screen whole.
func TestScreenKeepsOrdinaryClusters(t *testing.T) {
	t.Parallel()
	text := "Vi\u1ec7t e\u0301\u0323 \U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F44D\U0001F3FD \u0915\u094d\u0937"
	s := New(80, 4, nil)
	defer s.Close()
	b := []byte(text)
	// Split inside the 4-byte emoji.
	cut := strings.Index(text, "\U0001F468") + 2
	s.Write(b[:cut])
	s.Write(b[cut:])
	if got := s.Lines()[0]; got != text {
		t.Errorf("row = %q, want %q", got, text)
	}
}

func TestMarkLimiterPassesPlainOutputThrough(t *testing.T) {
	var l markLimiter
	p := []byte("hello, w\u00f6rld\r\n")
	if got := l.filter(p); &got[0] != &p[0] || string(got) != string(p) {
		t.Errorf("plain output was copied or changed: %q", got)
	}
}
