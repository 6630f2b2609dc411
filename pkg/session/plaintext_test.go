package session

import (
	"fmt"
	"strings"
	"testing"
)

func TestPlainTextAppliesEditsAndKeepsScrolledLines(t *testing.T) {
	p := NewPlainText(20, 3)
	defer p.Close()
	var got strings.Builder
	out := func(s string) { got.WriteString(p.Write(Event{Type: EventOutput, Data: []byte(s)})) }
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
		got.WriteString(p.Write(Event{Type: EventOutput, Data: []byte(line + "\r\n")}))
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

func TestSplitTailAndLends(t *testing.T) {
	for _, c := range []struct {
		data       string
		have, need int
	}{{"abc", 0, 0}, {"a\xe4", 1, 2}, {"a\xe4\xb8", 2, 1}, {"a\xe4\xb8\xad", 0, 0}, {"\xf0\x9f\x98", 3, 1}, {"\xc3", 1, 1}, {"\x80", 0, 0}} {
		have, need := splitTail([]byte(c.data))
		if have != c.have || need != c.need {
			t.Errorf("splitTail(%q) = %d, %d; want %d, %d", c.data, have, need, c.have, c.need)
		}
	}
	a := Event{Seq: 1, Type: EventOutput, Data: []byte("x\xe4\xb8")}
	b := Event{Seq: 2, Type: EventOutput, Data: []byte("\xady")}
	if n := lends(&a, &b); n != 1 {
		t.Fatalf("lends = %d, want 1", n)
	}
	b.Seq = 3
	if n := lends(&a, &b); n != 0 {
		t.Fatalf("lends across a missing record = %d, want 0", n)
	}
}

func TestRuneJoinerMovesSplitCharacters(t *testing.T) {
	evs := []Event{
		{Seq: 1, Type: EventOutput, Data: []byte("中\xe6")},
		{Seq: 2, Type: EventOutput, Data: []byte("\x96\x87文")},
		{Seq: 3, Type: EventResize, Cols: 80, Rows: 24},
		{Seq: 4, Type: EventOutput, Data: []byte("\xf0\x9f")},
	}
	run := func(skip uint64, from int) []string {
		var got []string
		j := &runeJoiner{skipFirst: skip, fn: func(ev Event) error {
			got = append(got, fmt.Sprintf("%d:%s", ev.Seq, ev.Data))
			return nil
		}}
		for _, ev := range evs[from:] {
			ev.Data = append([]byte(nil), ev.Data...)
			if err := j.deliver(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.flush(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []string{"1:中文", "2:文", "3:", "4:\xf0\x9f"}
	if got := run(0, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("whole read: %q, want %q", got, want)
	}
	// A read from seq 2 looks at seq 1 only to drop what it lent.
	if got := run(1, 0); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Fatalf("read from 2: %q, want %q", got, want[1:])
	}
}
