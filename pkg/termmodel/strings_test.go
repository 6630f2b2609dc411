package termmodel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlStringsStayWhole plays bytes recorded from Claude Code and
// Gemini CLI whose window titles hold a character with the byte 0x9C, split
// across writes at every point, and holds the screen to what tmux showed
// for the same bytes (testdata/osc/*.tmux.txt, captured with capture-pane).
func TestControlStringsStayWhole(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "osc", "*.raw"))
	if len(files) == 0 {
		t.Fatal("no testdata/osc/*.raw")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".raw")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(f, ".raw") + ".tmux.txt")
		if err != nil {
			t.Fatal(err)
		}
		var cols, rows int
		fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%dx%d", &cols, &rows)
		for cut := 0; cut <= len(data); cut++ {
			s := New(cols, rows, nil)
			s.Write(data[:cut])
			s.Write(data[cut:])
			got := strings.Join(s.Lines(), "\n")
			s.Close()
			if w := strings.TrimRight(string(want), "\n"); strings.TrimRight(got, "\n") != w {
				t.Fatalf("%s cut at %d:\n%q\nwant (tmux)\n%q", name, cut, got, w)
			}
		}
	}
}

func TestStringFilter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain \xe2\x9c\xb3 text", "plain \xe2\x9c\xb3 text"},
		{"\x1b]0;\xe2\x9c\xb3 Claude\x07after \xe2\x9c\xb3", "\x1b]0;??? Claude\x07after \xe2\x9c\xb3"},
		{"\x1b]2;t\xc3\xa9\x1b\\\xc3\xa9", "\x1b]2;t??\x1b\\\xc3\xa9"},
		{"\x1bP\xc3\xa9\x1b[31m\xc3\xa9", "\x1bP??\x1b[31m\xc3\xa9"}, // an escape aborts the string
		{"\x1b[1m\xc3\xa9", "\x1b[1m\xc3\xa9"},
	} {
		var f stringFilter
		if got := f.filter([]byte(tc.in)); !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("filter(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var f stringFilter
	p := []byte("no strings here \xe2\x9c\xb3")
	if got := f.filter(p); &got[0] != &p[0] {
		t.Error("output without control strings was copied")
	}
}
