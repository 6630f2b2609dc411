package session

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"w1", true}, {"a", true}, {"my-agent_2.x", true}, {strings.Repeat("a", 63), true},
		{"", false}, {"a/b", false}, {"..", false}, {".", false}, {".hidden", false}, {"a b", false},
		{"A", false}, {strings.Repeat("a", 64), false}, {strings.Repeat("a", 200), false}, {"-x", false}, {"é", false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q): got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestKeyBytes(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"enter", "\r"}, {"ESC", "\x1b"}, {"tab", "\t"}, {"up", "\x1b[A"}, {"pagedown", "\x1b[6~"},
		{"backspace", "\x7f"}, {"ctrl+c", "\x03"}, {"CTRL+A", "\x01"}, {"ctrl+[", "\x1b"}, {"alt+x", "\x1bx"},
		{"alt+X", "\x1bX"}, {"alt+enter", "\x1b\r"}, {"f1", "\x1bOP"}, {"f12", "\x1b[24~"}, {"space", " "},
	} {
		b, err := KeyBytes(tc.name)
		if err != nil || string(b) != tc.want {
			t.Errorf("KeyBytes(%q): got %q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
	for _, bad := range []string{"", "hyper", "ctrl+1", "ctrl+", "alt+", "f13", "ctrl+ab"} {
		if _, err := KeyBytes(bad); err == nil {
			t.Errorf("KeyBytes(%q): got no error", bad)
		}
	}
}

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
		s := newScreen(cols, rows, nil)
		s.write([]byte("$ "))
		s.startCapture()
		start := s.cursorRow()
		for off := 0; off < len(data); {
			n := min(len(data)-off, 1+rng.IntN(1<<16))
			s.feedCapturing(data[off:off+n], true)
			off += n
		}
		got, _ := s.rows(start, s.capture.top()+rows)
		s.close()

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
		if got := learnPrompt(tc.learned).matches(tc.seen); got != tc.want {
			t.Errorf("prompt %q matches %q: got %v, want %v", tc.learned, tc.seen, got, tc.want)
		}
	}
	var none *promptShape
	if none.matches(">>> ") {
		t.Error("no prompt matched")
	}
	for s, want := range map[string]bool{">>> ": true, "sqlite> ": true, "bash-5.2$ ": true, "❯ ": true, "": false, "   ": false, "abc": false, "Password: ": true} {
		if promptLike(s) != want {
			t.Errorf("promptLike(%q) = %v", s, !want)
		}
	}
}

func TestEchoRowsAndQuestion(t *testing.T) {
	for _, tc := range []struct {
		q       string
		x, cols int
		want    int
	}{
		{"print(1)", 4, 80, 1}, {"", 4, 80, 1}, {strings.Repeat("a", 76), 4, 80, 1}, {strings.Repeat("a", 77), 4, 80, 2},
		{"a\nb\nc", 4, 80, 3}, {"宽宽", 0, 3, 2},
	} {
		if got := echoRows(tc.q, tc.x, tc.cols); got != tc.want {
			t.Errorf("echoRows(%q, %d, %d) = %d, want %d", tc.q, tc.x, tc.cols, got, tc.want)
		}
	}
	if q := question("a\r\nb\n\n"); q != "a\nb\n" {
		t.Errorf("question: %q", q)
	}
}

func TestUntilHint(t *testing.T) {
	re := regexp.MustCompile(`^>>> $`)
	if h := untilHint(re, "42\n>>> "); !strings.Contains(h, "(?m)") {
		t.Errorf("no hint for an anchored pattern: %q", h)
	}
	if h := untilHint(re, "42"); h != "" {
		t.Errorf("hint for a pattern that cannot match anyway: %q", h)
	}
}

func TestScreenLinesAndRepaint(t *testing.T) {
	s := newScreen(20, 3, nil)
	defer s.close()
	s.write([]byte("hello \x1b[1mworld\x1b[0m\r\n宽字\r\n\x1b[?2004h"))
	ls := s.lines()
	if ls[0] != "hello world" || ls[1] != "宽字" || ls[2] != "" {
		t.Errorf("lines: %q", ls)
	}
	if !s.paste.Load() {
		t.Error("bracketed paste not tracked")
	}
	// A repaint drawn on a fresh screen shows the same text.
	s2 := newScreen(20, 3, nil)
	defer s2.close()
	s2.write(s.repaint())
	if got := s2.lines(); strings.Join(got, "|") != strings.Join(ls, "|") {
		t.Errorf("repaint gives %q, want %q", got, ls)
	}
	snap := s.snapshot("x", 1)
	if snap.Hash != s2.snapshot("x", 1).Hash || snap.CursorY != 2 {
		t.Errorf("snapshot: %+v", snap)
	}
	s.write([]byte("\x1b[?2004l"))
	if s.paste.Load() {
		t.Error("bracketed paste reset not tracked")
	}
}

func TestEventLogRoundTripAndRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := openEventLog(dir, MinLogCap)
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	evs := []Event{
		{Type: EventOutput, Data: []byte("plain \x1b[31mtext\n")},
		{Type: EventOutput, Data: []byte{0xff, 0xfe, 'x'}},
		{Type: EventInput, Data: []byte("\r")},
		{Type: EventResize, Cols: 10, Rows: 5},
		{Type: EventExit, ExitCode: &code, Termination: TermNonzeroExit},
	}
	for i := range evs {
		if err := l.append(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	if !bytes.Contains(b, []byte(`"data_b64":"//54"`)) || !bytes.Contains(b, []byte(`"data":"plain \u001b[31mtext\n"`)) {
		t.Errorf("encoding on disk:\n%s", b)
	}
	var got []Event
	r := newLogReader(dir, 0)
	r.poll(func(ev Event) error { got = append(got, ev); return nil })
	r.close()
	if len(got) != len(evs) {
		t.Fatalf("read %d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i].Seq != uint64(i+1) || !bytes.Equal(got[i].Data, evs[i].Data) || got[i].Type != evs[i].Type {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], evs[i])
		}
	}
	// Rotation: write well past the cap; the log stays under it and seq
	// continues across parts.
	big := bytes.Repeat([]byte("y"), 1000)
	for range 500 {
		if err := l.append(&Event{Type: EventOutput, Data: big}); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	var size int64
	for _, f := range []string{logName, logOldName} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > MinLogCap+2000 {
		t.Errorf("log is %d bytes, cap %d", size, MinLogCap)
	}
	var last uint64
	var n int
	r = newLogReader(dir, 0)
	r.poll(func(ev Event) error {
		if last != 0 && ev.Seq != last+1 {
			t.Fatalf("seq jumps from %d to %d", last, ev.Seq)
		}
		last = ev.Seq
		n++
		return nil
	})
	r.close()
	if last != 505 {
		t.Errorf("last seq %d, want 505", last)
	}
	// Reopening continues the numbering.
	l, err = openEventLog(dir, MinLogCap)
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{Type: EventMarker, Text: "again"}
	l.append(&ev)
	l.close()
	if ev.Seq != 506 {
		t.Errorf("seq after reopen %d, want 506", ev.Seq)
	}
}

func TestEventLogTornLine(t *testing.T) {
	dir := t.TempDir()
	l, err := openEventLog(dir, DefaultLogCap)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.append(&Event{Type: EventOutput, Data: []byte{byte('a' + i)}, TS: time.Unix(0, 0).UTC()})
	}
	l.close()
	path := filepath.Join(dir, logName)
	good, _ := os.ReadFile(path)
	for _, tail := range []string{`{"seq":4,"ts":"1970-01-01T00:00:00Z","type":"out`, "garbage\n", `{"seq":4}` + "\n" + `{"seq":5,"ty`} {
		os.WriteFile(path, append(append([]byte(nil), good...), tail...), 0o600)
		// Readers skip the torn tail.
		var n int
		r := newLogReader(dir, 0)
		r.poll(func(Event) error { n++; return nil })
		r.close()
		if n != 3 {
			t.Errorf("tail %q: reader saw %d events, want 3", tail, n)
		}
		// Opening for writing cuts it and continues after the last good record.
		l, err := openEventLog(dir, DefaultLogCap)
		if err != nil {
			t.Fatal(err)
		}
		ev := Event{Type: EventMarker, Text: "after crash"}
		l.append(&ev)
		l.close()
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, good) || ev.Seq != 4 || bytes.Count(b, []byte("\n")) != 4 {
			t.Errorf("tail %q: after reopen seq %d, log:\n%s", tail, ev.Seq, b)
		}
		os.WriteFile(path, good, 0o600)
	}
}

// FuzzEventLog checks that the line decoder never panics, that whatever it
// accepts re-encodes to a record it decodes the same way, and that torn-tail
// recovery keeps exactly whole, valid records.
func FuzzEventLog(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"output","data":"hi\r\n"}` + "\n"))
	f.Add([]byte(`{"seq":2,"ts":"2026-01-01T00:00:00Z","type":"output","data_b64":"//54"}` + "\n" + `{"seq":3,"ty`))
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"exit","exit_code":1,"termination":"nonzero_exit"}`))
	f.Add([]byte("garbage\n\n{}\n"))
	f.Add([]byte(`{"seq":1,"type":"output","data":"a","data_b64":"YQ=="}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, last := validPrefix(data)
		if n < 0 || n > len(data) {
			t.Fatalf("validPrefix returned %d for %d bytes", n, len(data))
		}
		if n > 0 {
			if data[n-1] != '\n' {
				t.Fatalf("kept prefix does not end at a line end")
			}
			i := bytes.LastIndexByte(data[:n-1], '\n') + 1
			ev, err := DecodeEvent(data[i : n-1])
			if err != nil || ev.Seq != last {
				t.Fatalf("last kept line does not decode to seq %d: %v", last, err)
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			ev, err := DecodeEvent(line)
			// DecodeEvent calls UnmarshalJSON itself; json.Unmarshal
			// through it must take and refuse the same lines.
			var viaJSON Event
			jerr := json.Unmarshal(line, &viaJSON)
			if (err == nil) != (jerr == nil && viaJSON.Seq != 0 && viaJSON.Type != "") {
				t.Fatalf("line %q: DecodeEvent %v, json.Unmarshal %v (%+v)", line, err, jerr, viaJSON)
			}
			if err != nil {
				continue
			}
			if !bytes.Equal(viaJSON.Data, ev.Data) || viaJSON.Seq != ev.Seq || !viaJSON.TS.Equal(ev.TS) || viaJSON.Text != ev.Text {
				t.Fatalf("line %q: DecodeEvent %+v, json.Unmarshal %+v", line, ev, viaJSON)
			}
			b, err := ev.MarshalJSON()
			if err != nil {
				t.Fatalf("re-encode %+v: %v", ev, err)
			}
			ev2, err := DecodeEvent(b)
			if err != nil || !bytes.Equal(ev2.Data, ev.Data) || ev2.Seq != ev.Seq || ev2.Type != ev.Type {
				t.Fatalf("round trip of %q: %+v != %+v (%v)", line, ev2, ev, err)
			}
			if bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("encoded record holds a newline: %q", b)
			}
		}
	})
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
	full, short := newScreen(80, 24, nil), newScreen(80, 24, nil)
	defer full.close()
	defer short.close()
	full.write([]byte("before\r\n"))
	short.write([]byte("before\r\n"))
	full.write(data)
	short.write(compact)
	a, b := full.snapshot("x", 0), short.snapshot("x", 0)
	if a.Hash != b.Hash || a.CursorX != b.CursorX || a.CursorY != b.CursorY {
		t.Errorf("screens differ:\n%q\n%q", a.Lines, b.Lines)
	}
	if !scrollRegionSet(false, []byte("\x1b[2;10r"), 24) || scrollRegionSet(true, []byte("\x1b[r"), 24) {
		t.Error("scroll region tracking")
	}
}

func TestOutputRecordFastPath(t *testing.T) {
	for _, d := range []string{"plain", "esc \x1b[31m \"q\" \\ \r\n\t\x00\x7f é 宽 \u2028", ""} {
		ev := Event{Seq: 9, TS: time.Now().UTC(), Type: EventOutput, Data: []byte(d)}
		got, err := DecodeEvent(appendOutputRecord(nil, &ev))
		if err != nil || string(got.Data) != d || got.Seq != 9 || !got.TS.Equal(ev.TS) || got.Type != EventOutput {
			t.Errorf("fast record of %q decodes to %+v, %v", d, got, err)
		}
	}
}
