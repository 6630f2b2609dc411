package main

import (
	"bytes"
	"testing"
)

func TestEscapeControls(t *testing.T) {
	for _, tc := range []struct{ in, text, lines string }{
		{"plain text, é 日本", "plain text, é 日本", "plain text, é 日本"},
		{"sleep 9 #\x1b]2;pwned\a", `sleep 9 #\e]2;pwned\a`, `sleep 9 #\e]2;pwned\a`},
		{"\x1b[31mred\x1b[0m", `\e[31mred\e[0m`, `\e[31mred\e[0m`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"c1 \u009b2J and \u0085", `c1 \u009b2J and \u0085`, `c1 \u009b2J and \u0085`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`, `bad \xff\xfe utf-8`},
		{"del \x7f nul \x00", `del \x7f nul \x00`, `del \x7f nul \x00`},
		{"bidi \u202eevil", `bidi \u202eevil`, `bidi \u202eevil`},
	} {
		if got := safeText(tc.in); got != tc.text {
			t.Errorf("safeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
		if got := safeLines(tc.in); got != tc.lines {
			t.Errorf("safeLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

// A UTF-8 sequence cut between two writes is not taken for bad bytes.
func TestSafeWriterKeepsSplitRunes(t *testing.T) {
	var b bytes.Buffer
	w := newSafeWriter(&b)
	in := []byte("日\u009b\x1b]0;t\a")
	for i := range in {
		w.Write(in[i : i+1])
	}
	w.Write([]byte{0xe6}) // the stream ends inside a sequence
	w.Flush()
	if want := `日\u009b\e]0;t\a\xe6`; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
