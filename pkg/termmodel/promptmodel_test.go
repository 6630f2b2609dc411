package termmodel

import (
	"strings"
	"testing"
)

// TestPromptModelSplits holds the answer and prompt split of ready points
// as a person reads them, for prompts the old rules got wrong (issue 26:
// two-line prompts, text before the prompt, continuation prompts).
func TestPromptModelSplits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first       []string   // the first ready point
		learn       [][]string // ready points after earlier questions, oldest first
		rows        []string   // the ready point to split
		answer      string
		prompt      string
		primary     bool
		wantHeights int
		notAtStart  bool // the first ready point came after input
	}{
		{name: "python", first: []string{">>> "}, rows: []string{"42", ">>> "}, answer: "42", prompt: ">>>", primary: true, wantHeights: 1},
		{name: "python block left open", first: []string{">>> "}, rows: []string{"... "}, answer: "", prompt: "...", primary: false, wantHeights: 1},
		{name: "ipython counter", first: []string{"In [1]: "}, rows: []string{"Out[1]: 42", "", "In [2]: "}, answer: "Out[1]: 42\n", prompt: "In [2]:", primary: true, wantHeights: 1},
		{name: "ipython continuation", first: []string{"In [1]: "}, rows: []string{"   ...: "}, answer: "", prompt: "...:", primary: false, wantHeights: 1},
		{name: "two-line prompt", first: []string{"/tmp", "$ "}, learn: [][]string{{"/tmp", "$ "}}, rows: []string{"42", "/tmp", "$ "}, answer: "42", prompt: "/tmp\n$", primary: true, wantHeights: 2},
		{name: "two-line prompt, the directory changed", first: []string{"/tmp", "$ "}, learn: [][]string{{"x", "/tmp", "$ "}}, rows: []string{"/usr", "$ "}, answer: "", prompt: "/usr\n$", primary: true, wantHeights: 2},
		{name: "one-line prompt, same answer twice", first: []string{">>> "}, learn: [][]string{{"41", ">>> "}}, rows: []string{"41", ">>> "}, answer: "41", prompt: ">>>", primary: true, wantHeights: 1},
		{name: "banner above the first prompt", first: []string{"Welcome 1.0", "> "}, learn: [][]string{{"1", "> "}}, rows: []string{"2", "> "}, answer: "2", prompt: ">", primary: true, wantHeights: 1},
		{name: "lua, output without a newline", first: []string{"> "}, rows: []string{"...> "}, answer: "...", prompt: ">", primary: true, wantHeights: 1},
		{name: "lua continuation", first: []string{"> "}, rows: []string{">> "}, answer: "", prompt: ">>", primary: false, wantHeights: 1},
		{name: "bash, output without a newline", first: []string{"me@h:~$ "}, rows: []string{"abcme@h:~$ "}, answer: "abc", prompt: "me@h:~$", primary: true, wantHeights: 1},
		{name: "shell directory in the prompt", first: []string{"me@h:~$ "}, rows: []string{"me@h:/tmp$ "}, answer: "", prompt: "me@h:/tmp$", primary: true, wantHeights: 1},
		{name: "shell continuation", first: []string{"me@h:~$ "}, rows: []string{"> "}, answer: "", prompt: ">", primary: false, wantHeights: 1},
		{name: "clock in the prompt", first: []string{"[12:00:01] $ "}, rows: []string{"ok", "[12:00:09] $ "}, answer: "ok", prompt: "[12:00:09] $", primary: true, wantHeights: 1},
		{name: "an answer above the first ready point, not at start", first: []string{"q> go", "n=125", "q> "}, rows: []string{"n=75", "q> "}, answer: "n=75", prompt: "q>", primary: true, wantHeights: 1, notAtStart: true},
		{name: "a question the program asks", first: []string{">>> "}, rows: []string{"name? "}, answer: "", prompt: "name?", primary: false, wantHeights: 1},
	} {
		m := NewPromptModel(tc.first, !tc.notAtStart)
		for _, l := range tc.learn {
			m.Learn(l)
		}
		ans, prompt, primary := m.Split(tc.rows)
		if got := strings.Join(ans, "\n"); got != tc.answer || prompt != tc.prompt || primary != tc.primary {
			t.Errorf("%s: split %q = %q, %q, %v; want %q, %q, %v", tc.name, tc.rows, got, prompt, primary, tc.answer, tc.prompt, tc.primary)
		}
		if primary {
			m.Learn(tc.rows)
		}
		if m.height != tc.wantHeights {
			t.Errorf("%s: learned a prompt of %d rows, want %d", tc.name, m.height, tc.wantHeights)
		}
	}
}
