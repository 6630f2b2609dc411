package test

// The screens and hook payloads behind pkg/agentstate's classifier, taken
// from the real agent CLIs under agentd (see agentcli_harness_test.go): each
// CLI at 80x24 and 120x40 with hooks wired the way agentd will wire them
// (Claude Code through a --settings overlay, Codex through notify and
// hooks.json, Gemini CLI through its user settings), driven through every
// state — the trust dialog, idle, working, a permission prompt, approved,
// an API error banner, a second prompt denied — and, for Claude Code, the
// API key dialog. Each state's screen is saved with its cursor as
// pkg/agentstate/testdata/screens/CLI-COLSxROWS-STATE.txt and each hook's
// input as pkg/agentstate/testdata/hooks/CLI-N-EVENT.json.
//
// It runs only with AGENTSTATE_CAPTURE set to the directory to write (the
// package's testdata to refresh it); the classifier's own tests read what
// it wrote, so the CLIs are needed once per release, not per test run.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/wire"
)

// The prompts of the capture's conversation beyond cliScript's.
const (
	denyPrompt  = "fm-deny-file"
	failPrompt  = "fm-fail-turn"
	limitPrompt = "fm-limit-turn"
	askPrompt   = "fm-ask-question"
)

// askTool is Claude Code's question menu: the model asks, the person picks.
var askTool = fakemodel.ToolCall{Name: "AskUserQuestion", Input: map[string]any{"questions": []any{map[string]any{
	"question": "Which file should I create?", "header": "File", "multiSelect": false,
	"options": []any{map[string]any{"label": "alpha.txt", "description": "The first file"},
		map[string]any{"label": "beta.txt", "description": "The second file"}}}}}}

// captureScript is cliScript with a longer working turn, a tool call to
// deny and a turn the API refuses (401, which no CLI retries for long).
func captureScript(tool fakemodel.ToolCall) fakemodel.Script {
	deny := tool
	deny.Input = map[string]any{}
	for k, v := range tool.Input {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "approved.txt", "denied.txt")
		}
		deny.Input[k] = v
	}
	return fakemodel.Script{Turns: []fakemodel.Turn{
		{Prompt: helloPrompt, Steps: []fakemodel.Step{{Text: helloReply, Lead: 4 * time.Second, Delay: 3 * time.Second}}},
		{Prompt: toolPrompt, Steps: []fakemodel.Step{{Tool: &tool}, fakemodel.Text(toolReply)}},
		// Claude Code sends the prompt after a failed turn in one message
		// with the failed one; the fake model plays the first turn named
		// in it, so the failing turns come last.
		{Prompt: denyPrompt, Steps: []fakemodel.Step{{Tool: &deny}, fakemodel.Text("Not made.")}},
		{Prompt: askPrompt, Steps: []fakemodel.Step{{Tool: &askTool}, fakemodel.Text("Noted.")}},
		{Prompt: limitPrompt, Steps: []fakemodel.Step{fakemodel.Fail(429)}},
		{Prompt: failPrompt, Steps: []fakemodel.Step{fakemodel.Fail(401)}},
	}}
}

// hookScript saves what a hook gets: its stdin, or for Codex's notify
// program its last argument.
const hookScript = `#!/bin/sh
out="$1"; ev="$2"
n=$(date +%s%N)
if [ "$ev" = notify ]; then
	for a; do last="$a"; done
	printf '%s' "$last" > "$out/$n-notify.json"
else
	cat > "$out/$n-$ev.json"
fi
[ "$3" = json ] && printf '{}'
exit 0
`

// captureHooks wires cli's hooks to hookScript writing into out, and
// returns extra arguments for its command line.
func captureHooks(t *testing.T, cli, home, script, out string) []string {
	cmd := func(ev string, extra ...string) string {
		return strings.Join(append([]string{"sh", script, out, ev}, extra...), " ")
	}
	group := func(ev string, extra ...string) []any {
		return []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd(ev, extra...)}}}}
	}
	switch cli {
	case "claude":
		hooks := map[string]any{}
		for _, ev := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied",
			"Notification", "UserPromptSubmit", "Stop", "StopFailure", "SessionStart", "SessionEnd"} {
			hooks[ev] = group(ev)
		}
		file := filepath.Join(t.TempDir(), "agentd-hooks.json")
		writeJSONFile(t, file, map[string]any{"hooks": hooks})
		return []string{"--settings", file}
	case "codex":
		hooks := map[string]any{}
		for _, ev := range []string{"SessionStart", "PreToolUse", "PermissionRequest", "PostToolUse", "UserPromptSubmit", "Stop"} {
			hooks[ev] = group(ev)
		}
		writeJSONFile(t, filepath.Join(home, ".codex", "hooks.json"), map[string]any{"hooks": hooks})
		notify, _ := json.Marshal([]string{"sh", script, out, "notify"})
		return []string{"-c", "features.codex_hooks=true", "-c", "notify=" + string(notify)}
	case "gemini":
		var s map[string]any
		b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
		if err != nil || json.Unmarshal(b, &s) != nil {
			t.Fatalf("gemini settings: %v", err)
		}
		hooks := map[string]any{}
		for _, ev := range []string{"SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "Notification"} {
			hooks[ev] = group(ev, "json")
		}
		s["hooks"] = hooks
		writeJSONFile(t, filepath.Join(home, ".gemini", "settings.json"), s)
	}
	return nil
}

// solo is one CLI run under agentd alone (no tmux twin).
type solo struct {
	t          *testing.T
	h          *home
	name, size string
	dir, out   string
	// timeline lists the screens saved, "UNIXNANO screen FILE", to be
	// merged with the hooks' (saveHooks) in testdata/timelines.
	timeline []string
}

// screen is the session's snapshot: its rows and cursor.
func (s *solo) screen() wire.SnapshotResult {
	var r struct{ Result wire.SnapshotResult }
	if err := json.Unmarshal([]byte(s.h.ctl(0, "--json", "snapshot", s.name)), &r); err != nil {
		s.t.Fatal(err)
	}
	return r.Result
}

func (s *solo) text() string { return strings.Join(s.screen().Lines, "\n") }

// await polls until the screen matches re; false (logged) on timeout.
func (s *solo) await(re string, timeout time.Duration) bool {
	s.t.Helper()
	rx := regexp.MustCompile("(?m)" + re)
	deadline := time.Now().Add(timeout)
	for {
		scr := s.text()
		if rx.MatchString(scr) {
			return true
		}
		if time.Now().After(deadline) {
			s.t.Errorf("%s %s: no %q in %s:\n%s", s.name, s.size, re, timeout, scr)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitGone polls until the screen no longer matches re.
func (s *solo) awaitGone(re string, timeout time.Duration) bool {
	s.t.Helper()
	rx := regexp.MustCompile("(?m)" + re)
	deadline := time.Now().Add(timeout)
	for rx.MatchString(s.text()) {
		if time.Now().After(deadline) {
			s.t.Errorf("%s %s: %q still shown after %s:\n%s", s.name, s.size, re, timeout, s.text())
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// save writes the screen as testdata: a header with the cursor, then rows.
func (s *solo) save(state string, settle bool) {
	s.t.Helper()
	if settle {
		last, since := "", time.Now()
		for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if cur := s.text(); cur != last {
				last, since = cur, time.Now()
			} else if time.Since(since) > 400*time.Millisecond {
				break
			}
		}
	}
	at := time.Now()
	scr := s.screen()
	lines := append([]string(nil), scr.Lines...)
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.ReplaceAll(l, s.dir, "/home/user/proj"), " ")
	}
	head := fmt.Sprintf("# agentstate screen cols=%d rows=%d cursor=%d,%d visible=%v alt=%v", scr.Cols, scr.Rows, scr.CursorX, scr.CursorY, scr.CursorVisible, scr.AltScreen)
	file := filepath.Join(s.out, "screens", fmt.Sprintf("%s-%s-%s.txt", s.name, s.size, state))
	if err := os.WriteFile(file, []byte(head+"\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.timeline = append(s.timeline, fmt.Sprintf("%d screen %s", at.UnixNano(), filepath.Base(file)))
	s.t.Logf("saved %s", file)
}

// submit types text, waits for it, then presses enter until taken shows.
func (s *solo) submit(text, taken string) bool {
	s.t.Helper()
	s.h.ctl(0, "send", s.name, text)
	if !s.await(regexp.QuoteMeta(text), 30*time.Second) {
		return false
	}
	time.Sleep(300 * time.Millisecond) // Codex and Gemini take an Enter right after typing as a paste
	rx := regexp.MustCompile("(?m)" + taken)
	for range 4 {
		s.h.ctl(0, "send", s.name, "--keys", "enter")
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if rx.MatchString(s.text()) {
				return true
			}
			time.Sleep(30 * time.Millisecond)
		}
	}
	s.t.Errorf("%s %s: %q never taken (no %q):\n%s", s.name, s.size, text, taken, s.text())
	return false
}

// TestCaptureAgentStateScreens writes pkg/agentstate's testdata from the
// real CLIs; see the file's comment.
func TestCaptureAgentStateScreens(t *testing.T) {
	out := os.Getenv("AGENTSTATE_CAPTURE")
	if out == "" {
		t.Skip("set AGENTSTATE_CAPTURE=DIR to capture the agent CLIs' screens and hook payloads into DIR")
	}
	modules := agentCLIModules(t)
	for _, d := range []string{"screens", "hooks"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	only := os.Getenv("AGENTSTATE_CLI")
	const step = 90 * time.Second
	for _, cli := range agentCLIs {
		if only != "" && only != cli.name {
			continue
		}
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s/%dx%d", cli.name, size[0], size[1]), func(t *testing.T) {
				t.Parallel()
				r := newCLIRig(t)
				root := t.TempDir()
				home, dir, hookDir := filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "hooks")
				for _, d := range []string{home, dir, hookDir} {
					os.MkdirAll(d, 0o700)
				}
				runOK(t, "git", "-C", dir, "init", "-q")
				srv, url := r.fakeServer(captureScript(cli.tool))
				cli.setup(t, home, dir, url)
				script := filepath.Join(root, "hook.sh")
				writeFile(t, script, hookScript)
				argv := append(cli.argv(modules), captureHooks(t, cli.name, home, script, hookDir)...)
				// Gemini CLI runs hooks only in a trusted folder, and a folder
				// trusted in its dialog is trusted by the process it restarts
				// (a race of its own): with AGENTSTATE_GEMINI_TRUSTED the
				// folder is trusted beforehand, and there is no dialog.
				pretrust := cli.name == "gemini" && os.Getenv("AGENTSTATE_GEMINI_TRUSTED") != ""
				if pretrust {
					writeJSONFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), map[string]any{dir: "TRUST_FOLDER"})
				}
				s := &solo{t: t, h: r.h, name: cli.name, size: fmt.Sprintf("%dx%d", size[0], size[1]), dir: dir, out: out}
				args := []string{"spawn", cli.name, "--size", s.size, "--cwd", dir}
				env := append([]string{"HOME=" + home, "LANG=C.UTF-8", "COLORTERM=truecolor", "TERM=xterm-256color"}, cli.env(url)...)
				if cli.name == "claude" {
					// It retries a 401 ten times over minutes, "retrying in
					// 14s · attempt 8/10" on screen; once is enough to see
					// the banner that stays.
					env = append(env, "CLAUDE_CODE_MAX_RETRIES=1")
				}
				for _, kv := range env {
					args = append(args, "--env", kv)
				}
				r.h.ctl(0, append(append(args, "--"), argv...)...)
				defer func() {
					r.h.stopAll()
					tl := append(s.timeline, saveHooks(t, cli.name, s.size, hookDir, filepath.Join(out, "hooks"))...)
					sort.Strings(tl)
					os.MkdirAll(filepath.Join(out, "timelines"), 0o755)
					os.WriteFile(filepath.Join(out, "timelines", cli.name+"-"+s.size+".txt"), []byte(strings.Join(tl, "\n")+"\n"), 0o644)
					for _, q := range srv.Requests() {
						t.Logf("  %s", q)
					}
				}()

				if !pretrust {
					if !s.await(cli.trust, step) {
						return
					}
					s.save("trust", true)
					for i, k := range cli.trustKeys {
						r.h.ctl(0, "send", cli.name, "--keys", k)
						if i < len(cli.trustSteps) && !s.await(cli.trustSteps[i], step) {
							return
						}
					}
				}
				if cli.name == "codex" {
					// Codex asks to review the hooks it found before it runs
					// them: trust them all.
					if !s.await(`Hooks need review`, step) {
						return
					}
					s.save("hooks-review", true)
					r.h.ctl(0, "send", cli.name, "--keys", "down")
					if !s.await(`› 2\. Trust all`, step) {
						return
					}
					r.h.ctl(0, "send", cli.name, "--keys", "enter")
				}
				if cli.trusted != nil {
					deadline := time.Now().Add(step)
					for !cli.trusted(s.text()) && time.Now().Before(deadline) {
						time.Sleep(100 * time.Millisecond)
					}
				}
				if !s.await(cli.idle, step) {
					return
				}
				s.save("idle", true)

				if !s.submit(helloPrompt, cli.working) {
					return
				}
				time.Sleep(time.Second)
				s.save("working", false)
				if !s.await(regexp.QuoteMeta(helloReply), step) || !s.awaitGone(cli.working, step) || !s.await(cli.idle, step) {
					return
				}
				// Codex's screen does not show the end of a turn that
				// streamed text; its Stop hook does (Gemini CLI's
				// AfterAgent), and the next prompt must not join the turn.
				if !awaitHook(t, hookDir, map[string]string{"gemini": "AfterAgent"}[cli.name], step) {
					return
				}
				s.save("answered", true)

				if !s.submit(toolPrompt, cli.permission) {
					return
				}
				s.save("permission", true)
				// Approve with the keys the classifier read off the screen:
				// the proof that its choices are the CLI's.
				s.answer(agentstate.RoleApprove)
				if !s.await(regexp.QuoteMeta(toolReply), step) || !s.await(cli.idle, step) {
					return
				}
				if _, err := os.Stat(filepath.Join(dir, "approved.txt")); err != nil {
					t.Errorf("after the approval: %v", err)
				}
				s.save("approved", true)

				// Before the denial: Claude Code sends the next prompt beside
				// a denied call's result, where the fake model reads it as
				// the result's reminder text.
				if s.submit(failPrompt, `401|[Ee]rror|API key|[Uu]nauthori`) {
					// Claude Code and Codex retry first, saying so.
					if regexp.MustCompile(`retrying in|Reconnecting`).MatchString(s.text()) {
						s.save("api-retry", false)
					}
					if s.awaitGone(`esc to (interrupt|cancel)`, step) && s.await(cli.idle, step) {
						s.save("api-error", true)
					}
				}
				if cli.name == "claude" && s.submit(askPrompt, `Which file should I create\?`) {
					s.save("question", true)
					scr := s.screen()
					st, d := agentstate.Classify(agentstate.Claude, agentstate.Screen{Lines: scr.Lines})
					t.Logf("question: %s %+v", st, d)
					if len(d.Choices) > 0 {
						c := d.Choices[0]
						args := []string{"send", cli.name}
						if c.Text != "" {
							args = append(args, c.Text)
						}
						r.h.ctl(0, append(args, "--keys", strings.Join(c.Keys, ","))...)
					} else {
						r.h.ctl(0, "send", cli.name, "--keys", "enter")
					}
					s.await(`Noted\.`, step)
					s.await(cli.idle, step)
				}
				// A usage limit: each CLI retries a 429 first; what shows
				// after a while is saved, then the turn is cancelled.
				if s.submit(limitPrompt, `429|[Ll]imit|[Qq]uota|Reconnecting|retrying|esc to`) {
					time.Sleep(6 * time.Second)
					s.save("limit", false)
					if regexp.MustCompile(`esc to (interrupt|cancel)`).MatchString(s.text()) {
						r.h.ctl(0, "send", cli.name, "--keys", "esc")
					}
					s.awaitGone(`esc to (interrupt|cancel)`, step)
					s.await(cli.idle, step)
				}
				if !s.submit(denyPrompt, cli.permission) {
					return
				}
				s.save("permission-deny", true)
				s.answer(agentstate.RoleDeny)
				s.await(cli.idle, step)
				time.Sleep(2 * time.Second)
				if _, err := os.Stat(filepath.Join(dir, "denied.txt")); err == nil {
					t.Errorf("denied.txt exists after esc on the prompt")
				}
				s.save("denied", true)

			})
		}
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		if only != "" && only != "claude" {
			break
		}
		t.Run(fmt.Sprintf("claude-apikey/%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			cli := agentCLIs[0]
			r := newCLIRig(t)
			root := t.TempDir()
			home, dir := filepath.Join(root, "home"), filepath.Join(root, "proj")
			os.MkdirAll(home, 0o700)
			os.MkdirAll(dir, 0o700)
			_, url := r.fakeServer(captureScript(cli.tool))
			cli.setup(t, home, dir, url)
			// Onboarding done, the folder trusted, the key not approved:
			// Claude Code asks about the key first.
			writeJSONFile(t, filepath.Join(home, ".claude.json"), map[string]any{"hasCompletedOnboarding": true,
				"hasSeenAutoDefaultNudge": true, "numStartups": 1,
				"projects": map[string]any{dir: map[string]any{"hasTrustDialogAccepted": true}}})
			s := &solo{t: t, h: r.h, name: "claude", size: fmt.Sprintf("%dx%d", size[0], size[1]), dir: dir, out: out}
			args := []string{"spawn", "claude", "--size", s.size, "--cwd", dir}
			for _, kv := range append([]string{"HOME=" + home, "LANG=C.UTF-8", "TERM=xterm-256color"}, cli.env(url)...) {
				args = append(args, "--env", kv)
			}
			r.h.ctl(0, append(append(args, "--"), cli.argv(modules)...)...)
			defer r.h.stopAll()
			if s.await(`API key`, step) {
				s.save("apikey", true)
			}
		})
	}
}

// answer picks the permission prompt's option of role r, as
// agentstate.Classify reads it from the screen, and logs what it sent.
func (s *solo) answer(r agentstate.Role) {
	s.t.Helper()
	scr := s.screen()
	st, d := agentstate.Classify(agentstate.Agent(s.name), agentstate.Screen{Lines: scr.Lines, CursorX: scr.CursorX, CursorY: scr.CursorY,
		CursorVisible: scr.CursorVisible, AltScreen: scr.AltScreen})
	c, ok := d.Choice(r)
	if st != agentstate.NeedsApproval || !ok {
		s.t.Fatalf("%s %s: the classifier reads %s with no %s choice (%+v) on:\n%s", s.name, s.size, st, r, d, strings.Join(scr.Lines, "\n"))
	}
	args := []string{"send", s.name}
	if c.Text != "" {
		args = append(args, c.Text)
	}
	if len(c.Keys) > 0 {
		args = append(args, "--keys", strings.Join(c.Keys, ","))
	}
	s.t.Logf("%s %s: %s = %q: agentctl %s", s.name, s.size, r, c.Label, strings.Join(args, " "))
	s.h.ctl(0, args...)
}

// awaitHook polls until a hook input for event (Stop when "") is in dir.
func awaitHook(t *testing.T, dir, event string, timeout time.Duration) bool {
	t.Helper()
	if event == "" {
		event = "Stop"
	}
	deadline := time.Now().Add(timeout)
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "*-"+event+".json")); len(m) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("no %s hook in %s", event, timeout)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runOK runs a command and fails the test if it fails.
func runOK(t *testing.T, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// saveHooks copies the hook payloads, in the order they came, as
// CLI-SIZE-NN-EVENT.json, and returns their timeline lines.
func saveHooks(t *testing.T, cli, size, from, to string) []string {
	ents, _ := os.ReadDir(from)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var lines []string
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			continue
		}
		ns, ev, _ := strings.Cut(strings.TrimSuffix(n, ".json"), "-")
		dst := filepath.Join(to, fmt.Sprintf("%s-%s-%02d-%s.json", cli, size, i, ev))
		os.WriteFile(dst, b, 0o644)
		lines = append(lines, fmt.Sprintf("%s hook %s", ns, filepath.Base(dst)))
	}
	t.Logf("%s %s: %d hook payloads", cli, size, len(names))
	return lines
}
