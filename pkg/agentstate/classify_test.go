package agentstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantByState is what each captured state's screen must classify as; the
// file names are CLI-COLSxROWS-STATE.txt (test/agentstate_capture_test.go).
var wantByState = map[string]struct {
	state State
	kind  Kind
}{
	"trust":           {NeedsAttention, KindTrust},
	"hooks-review":    {NeedsAttention, KindHooks},
	"apikey":          {NeedsAttention, KindAPIKey},
	"idle":            {Waiting, ""},
	"working":         {Working, ""},
	"answered":        {Waiting, ""},
	"permission":      {NeedsApproval, KindPermission},
	"permission-deny": {NeedsApproval, KindPermission},
	"approved":        {Waiting, ""},
	"denied":          {Waiting, ""},
	"api-error":       {NeedsAttention, KindError},
	"api-retry":       {NeedsAttention, KindError},
	"question":        {NeedsApproval, KindQuestion},
	"limit":           {NeedsAttention, KindUsageLimit},
}

// ambiguous are the screens that do not show what the CLI is doing, with
// what they read as (see the package doc).
var ambiguous = map[string]State{
	// Gemini CLI retries a 429 for minutes behind its usual "Thinking…
	// (esc to cancel)" row.
	"gemini-80x24-limit":  Working,
	"gemini-120x40-limit": Working,
}

// TestClassifyRealScreens holds the classifier to every screen captured
// from the real CLIs at 80x24 and 120x40.
func TestClassifyRealScreens(t *testing.T) {
	files, err := filepath.Glob("testdata/screens/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no screens in testdata/screens (%v): run test/agentstate_capture_test.go with AGENTSTATE_CAPTURE", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		parts := strings.SplitN(name, "-", 3)
		if len(parts) != 3 {
			t.Fatalf("%s: want CLI-SIZE-STATE.txt", f)
		}
		agent, state := Agent(parts[0]), parts[2]
		want, ok := wantByState[state]
		if !ok {
			t.Fatalf("%s: no expectation for state %q in wantByState", f, state)
		}
		seen[parts[0]+"/"+state] = true
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			scr, err := ParseScreen(string(b))
			if err != nil {
				t.Fatal(err)
			}
			got, d := Classify(agent, scr)
			if st, ok := ambiguous[name]; ok {
				want.state, want.kind = st, ""
			}
			if got != want.state || d.Kind != want.kind {
				t.Fatalf("Classify(%s, %s) = %s %q, want %s %q\ndetail %+v\n%s", agent, f, got, d.Kind, want.state, want.kind, d, b)
			}
			if got.Asks() && d.PromptID == "" {
				t.Errorf("%s: %s without a prompt id", f, got)
			}
			if got == NeedsApproval && d.Kind == KindPermission {
				if _, ok := d.Choice(RoleApprove); !ok {
					t.Errorf("%s: no approve choice in %+v", f, d.Choices)
				}
				if _, ok := d.Choice(RoleDeny); !ok {
					t.Errorf("%s: no deny choice in %+v", f, d.Choices)
				}
				if d.Subject == "" || d.Tool == "" {
					t.Errorf("%s: tool %q subject %q, want both", f, d.Tool, d.Subject)
				}
			}
			t.Logf("%s: %s %+v", name, got, d)
		})
	}
}

// TestPermissionKeysAreTheOnesVerified: the keys the classifier offers on
// each CLI's permission prompt are the ones test/agentstate_capture_test.go
// sent to the real CLIs from this same reading (approved.txt was made,
// denied.txt was not).
func TestPermissionKeysAreTheOnesVerified(t *testing.T) {
	type keys struct {
		text string
		keys string
	}
	verified := map[Agent]map[Role]keys{
		Claude: {RoleApprove: {"", "enter"}, RoleDeny: {"", "esc"}},
		Codex:  {RoleApprove: {"y", ""}, RoleDeny: {"", "esc"}},
		Gemini: {RoleApprove: {"", "enter"}, RoleDeny: {"", "esc"}},
	}
	files, _ := filepath.Glob("testdata/screens/*-permission*.txt")
	if len(files) < 12 {
		t.Fatalf("%d permission screens, want 2 per CLI and size", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scr, err := ParseScreen(string(b))
		if err != nil {
			t.Fatal(err)
		}
		agent := Agent(strings.SplitN(filepath.Base(f), "-", 2)[0])
		_, d := Classify(agent, scr)
		for role, want := range verified[agent] {
			c, ok := d.Choice(role)
			if got := (keys{c.Text, strings.Join(c.Keys, ",")}); !ok || got != want {
				t.Errorf("%s: %s choice %+v, want text %q keys %q", f, role, c, want.text, want.keys)
			}
		}
	}
}

// BenchmarkClassify reads every captured screen once per iteration: the
// cost of one reading after a screen change, per CLI and size.
func BenchmarkClassify(b *testing.B) {
	files, _ := filepath.Glob("testdata/screens/*.txt")
	type item struct {
		a Agent
		s Screen
	}
	var items []item
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		s, err := ParseScreen(string(data))
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, item{Agent(strings.SplitN(filepath.Base(f), "-", 2)[0]), s})
	}
	b.ResetTimer()
	for range b.N {
		for _, it := range items {
			Classify(it.a, it.s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/screen")
}

// TestGeminiTrustAnsweredStaysAbove: after the trust dialog is answered,
// Gemini CLI restarts itself and draws its new screen below the old
// dialog, which stays on the screen: that screen waits, it does not ask.
func TestGeminiTrustAnsweredStaysAbove(t *testing.T) {
	read := func(name string) Screen {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseScreen(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	trust, idle := read("gemini-120x40-trust.txt"), read("gemini-120x40-idle.txt")
	var lines []string
	for _, l := range trust.Lines {
		if strings.TrimSpace(l) != "" || len(lines) > 0 {
			lines = append(lines, l)
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	lines = append(lines, "", " Gemini CLI is restarting to apply the trust changes...", "")
	rest := idle.Lines
	for len(rest) > 0 && strings.TrimSpace(rest[len(rest)-1]) == "" {
		rest = rest[:len(rest)-1]
	}
	lines = append(lines, rest...)
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	if !strings.Contains(strings.Join(lines, "\n"), "Do you trust") {
		t.Fatal("the screen built lost the old dialog")
	}
	s := idle
	s.Lines = lines
	if got, d := Classify(Gemini, s); got != Waiting {
		t.Errorf("an answered trust dialog above the input box reads %s (%+v), want waiting", got, d)
	}
	if got, _ := Classify(Gemini, trust); got != NeedsAttention {
		t.Errorf("the trust dialog itself reads %s, want needs_attention", got)
	}
}

// TestGeminiRunningAHookSaysNothing: while a hook runs, Gemini CLI draws
// "⠧ Executing Hook: COMMAND" where its "Thinking… (esc to cancel)" row
// was, mid-turn as at its end: that screen reads Unknown (the Tracker keeps
// what the hooks said), not waiting.
func TestGeminiRunningAHookSaysNothing(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"gemini-80x24-working.txt", "gemini-120x40-working.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseScreen(string(b))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, l := range s.Lines {
			if strings.Contains(l, "(esc to cancel") {
				// As drawn at 80 columns, the row cut mid-word.
				s.Lines[i] = " ⠋ Executing Hook: '/usr/bin/agentctl' hook --agent gemini BeforeAgent… (esc to can"
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d status rows", name, n)
		}
		if got, d := Classify(Gemini, s); got != Unknown {
			t.Errorf("%s with a hook running reads %s (%+v), want unknown", name, got, d)
		}
	}
}
