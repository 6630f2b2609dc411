package test

// agentctl hook (issue 27): the command an agent CLI's hooks run inside a
// session. These tests drive the real agentctl binary against a real
// agentd, with a session that says it runs Claude Code (--agent claude)
// and whose program hands its secret to the test; the real CLIs' hooks are
// in agentcli_test.go.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// hookSession spawns name as a stand-in agent CLI (--agent claude, or
// the agent given) whose program writes its session token to a file, and
// returns the token.
func hookSession(t *testing.T, h *home, name string, agent ...string) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	h.ctl(0, "spawn", name, "--agent", append(agent, "claude")[0], "--", "sh", "-c", `printf %s "$AGENTD_SESSION_TOKEN" > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 600`, tok)
	var b []byte
	await(t, 10*time.Second, "the session's token", func() bool {
		var err error
		b, err = os.ReadFile(tok)
		return err == nil && len(b) > 0
	})
	return string(b)
}

// hook runs `agentctl hook ARGS` with env (beyond the home's) and stdin,
// as a CLI's hook would, and returns its stdout, stderr and status.
func (h *home) hook(env []string, stdin string, args ...string) (string, string, int) {
	h.t.Helper()
	cmd := exec.Command(bin.agentctl, append([]string{"hook"}, args...)...)
	cmd.Env = h.env(append([]string{"AGENTD_SOCKET=" + h.socket}, env...)...)
	cmd.Stdin = strings.NewReader(stdin)
	return h.runCmd(cmd)
}

// stateRecords are the session's state records as "STATE/SOURCE".
func stateRecords(t *testing.T, h *home, name string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(h.ctl(0, "logs", name, "--events"), "\n") {
		var ev struct {
			Type, Text, Reason string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "state" {
			out = append(out, ev.Text+"/"+ev.Reason)
		}
	}
	return out
}

// TestHookRefusesWhatIsNotTheSessions: a hook from outside any session,
// without a token, with a wrong one or with another session's, and a
// payload that is not JSON, over 1 MiB or of an unknown event are all
// refused with a clear message on stderr, and nothing of the session
// changes; agentctl hook still exits 0 with nothing on stdout (a hook's
// status and output are decisions to the CLI). A hook with the session's
// own token moves its state, recorded as from a hook, and the CLI's
// session id and transcript reach the manifest.
func TestHookRefusesWhatIsNotTheSessions(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	tokA, tokB := hookSession(t, h, "a"), hookSession(t, h, "b")
	if tokA == tokB {
		t.Fatal("two sessions share a token")
	}
	stop := `{"session_id":"cc-1","transcript_path":"/p/cc-1.jsonl","hook_event_name":"Stop"}`
	inA := []string{"AGENTD_SESSION=a"}
	for _, tc := range []struct {
		name  string
		env   []string
		stdin string
		args  []string
		want  string // in stderr
	}{
		{"outside any session", nil, stop, []string{"Stop"}, "not inside an agentd session"},
		{"no token", inA, stop, []string{"Stop"}, "without the session's token"},
		{"wrong token", append(inA, "AGENTD_SESSION_TOKEN=0123"), stop, []string{"Stop"}, "not session \"a\"'s"},
		{"another session's token", append(inA, "AGENTD_SESSION_TOKEN="+tokB), stop, []string{"Stop"}, "not session \"a\"'s"},
		{"not JSON", append(inA, "AGENTD_SESSION_TOKEN="+tokA), "hello", []string{"Stop"}, "not a JSON object"},
		{"over 1 MiB", append(inA, "AGENTD_SESSION_TOKEN="+tokA), `{"x":"` + strings.Repeat("x", wire.MaxHookPayload) + `"}`, []string{"Stop"}, "too large"},
		{"unknown event", append(inA, "AGENTD_SESSION_TOKEN="+tokA), `{}`, []string{"Teatime"}, "unknown hook event"},
		{"no event", append(inA, "AGENTD_SESSION_TOKEN="+tokA), `{}`, nil, "no event"},
		{"payload of another event", append(inA, "AGENTD_SESSION_TOKEN="+tokA), stop, []string{"PreToolUse"}, "for another event"},
	} {
		out, errOut, code := h.hook(tc.env, tc.stdin, tc.args...)
		if code != 0 || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want 0 and nothing", tc.name, code, out)
		}
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: stderr %q, want it to say %q", tc.name, errOut, tc.want)
		}
	}
	for _, name := range []string{"a", "b"} {
		st := sessionStatus(t, h, name)
		if st.State != "unknown" && st.State != "" || st.Conversation != "" || st.Hooks == nil || st.Hooks.Count != 0 {
			t.Errorf("%s after the refused hooks: state %q, conversation %q, hooks %+v; want nothing changed", name, st.State, st.Conversation, st.Hooks)
		}
		if recs := stateRecords(t, h, name); len(recs) > 0 {
			t.Errorf("%s after the refused hooks: state records %q", name, recs)
		}
	}
	// Refusals are in agentd's log, with who asked.
	await(t, 5*time.Second, "the refusals in agentd's log", func() bool {
		return strings.Contains(d.stderr.String(), `"method":"agent.hook"`) && strings.Contains(d.stderr.String(), "permission denied")
	})

	// The session's own token: the state moves, from the hook.
	if out, errOut, code := h.hook(append(inA, "AGENTD_SESSION_TOKEN="+tokA), stop, "--agent", "claude", "Stop"); code != 0 || out != "" || errOut != "" {
		t.Fatalf("a good hook: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	st := sessionStatus(t, h, "a")
	if st.State != wire.StateWaiting || st.Conversation != "cc-1" || st.Transcript != "/p/cc-1.jsonl" || st.Hooks == nil || st.Hooks.Count != 1 {
		t.Errorf("after Stop: state %q, conversation %q %q, hooks %+v; want waiting, cc-1", st.State, st.Conversation, st.Transcript, st.Hooks)
	}
	if got := stateRecords(t, h, "a"); len(got) != 1 || got[0] != "waiting/hook" {
		t.Errorf("state records %q, want [waiting/hook]", got)
	}
	var man struct {
		ConversationID string `json:"conversation_id"`
	}
	b, _ := os.ReadFile(filepath.Join(h.state, "agentd", "sessions", "a", "manifest.json"))
	if json.Unmarshal(b, &man); man.ConversationID != "cc-1" {
		t.Errorf("the manifest's conversation_id is %q, want cc-1", man.ConversationID)
	}
	// A session that runs no agent CLI takes no hooks; an ended one
	// neither.
	tokC := hookSession(t, h, "c", "none")
	if _, errOut, code := h.hook([]string{"AGENTD_SESSION=c", "AGENTD_SESSION_TOKEN=" + tokC}, stop, "Stop"); code != 0 || !strings.Contains(errOut, "runs no agent CLI") {
		t.Errorf("a hook for a session that is no agent: exit %d, stderr %q", code, errOut)
	}
	h.ctl(0, "stop", "b")
	if _, errOut, code := h.hook([]string{"AGENTD_SESSION=b", "AGENTD_SESSION_TOKEN=" + tokB}, stop, "Stop"); code != 0 || !strings.Contains(errOut, `session "b"`) {
		t.Errorf("a hook for an ended session: exit %d, stderr %q", code, errOut)
	}
	// Gemini CLI reads stdout: {} says nothing, and keeps stderr from
	// being read as a decision.
	if out, _, code := h.hook(nil, stop, "--agent", "gemini", "AfterAgent"); code != 0 || strings.TrimSpace(out) != "{}" {
		t.Errorf("--agent gemini outside a session: exit %d, stdout %q; want 0 and {}", code, out)
	}
	// agentd down: still 0, nothing on stdout, within the budget.
	start := time.Now()
	out, errOut, code := h.hook([]string{"AGENTD_SESSION=a", "AGENTD_SESSION_TOKEN=" + tokA, "AGENTD_SOCKET=" + filepath.Join(t.TempDir(), "none.sock")}, stop, "Stop")
	if code != 0 || out != "" || !strings.Contains(errOut, "agentd") || time.Since(start) > 3*time.Second {
		t.Errorf("agentd unreachable: exit %d, stdout %q, stderr %q in %s", code, out, errOut, time.Since(start))
	}
	// A CLI that never closes the hook's stdin does not hold it past the
	// budget.
	cmd := exec.Command(bin.agentctl, "hook", "Stop")
	cmd.Env = h.env("AGENTD_SESSION=a", "AGENTD_SESSION_TOKEN="+tokA, "AGENTD_SOCKET="+h.socket)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd.Stdin = pr
	start = time.Now()
	_, errOut, code = h.runCmd(cmd)
	pr.Close()
	if code != 0 || !strings.Contains(errOut, "stdin was not closed") || time.Since(start) > 3*time.Second {
		t.Errorf("stdin left open: exit %d, stderr %q after %s", code, errOut, time.Since(start))
	}
}

// hookLatencies runs n hooks into session name (alternating Stop and
// UserPromptSubmit, each a change of state) and returns, for each, the
// time from just before agentctl hook started to the state record's
// timestamp.
func hookLatencies(t *testing.T, h *home, name, token string, n int) []time.Duration {
	t.Helper()
	env := []string{"AGENTD_SESSION=" + name, "AGENTD_SESSION_TOKEN=" + token}
	var starts []time.Time
	for i := range n {
		ev := []string{"UserPromptSubmit", "Stop"}[i%2]
		starts = append(starts, time.Now())
		if _, errOut, _ := h.hook(env, `{"session_id":"lat","hook_event_name":"`+ev+`"}`, "--agent", "claude", ev); errOut != "" {
			t.Fatalf("hook %s: %s", ev, errOut)
		}
	}
	var ts []time.Time
	for _, line := range strings.Split(h.ctl(0, "logs", name, "--events"), "\n") {
		var ev struct {
			TS           time.Time
			Type, Reason string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "state" && ev.Reason == "hook" {
			ts = append(ts, ev.TS)
		}
	}
	if len(ts) < n {
		t.Fatalf("%d state records from hooks, want %d", len(ts), n)
	}
	ts = ts[len(ts)-n:]
	var out []time.Duration
	for i := range n {
		out = append(out, ts[i].Sub(starts[i]))
	}
	return out
}

// TestHookToStateEventLatency measures agentctl hook → the state record it
// causes, with the real binary and daemon: the figure in BENCHMARKS.md
// (goal ≤ 20 ms median, 2–3 ms measured), logged here. It is a figure, not
// this test's bar (the median was 22.6 ms with the whole suite beside two
// CPU hogs); the test fails only on a path that is broken, not slow.
func TestHookToStateEventLatency(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	tok := hookSession(t, h, "lat")
	d := hookLatencies(t, h, "lat", tok, 40)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	med, p90 := d[len(d)/2], d[len(d)*9/10]
	t.Logf("agentctl hook → state record: median %s, p90 %s, max %s (40 hooks)", med, p90, d[len(d)-1])
	if med > time.Second {
		t.Errorf("median hook → state record %s: the hook's path is broken (the figure is 2–3 ms)", med)
	}
}

// checkHooks asserts that the real CLI of w reported through the hooks
// agentd wired (spawned as a person would, without --hooks; Gemini CLI's
// added to its settings as README says): state
// records from hooks in its event log, and its own session id in the
// manifest, the conversation in its store (Codex's side threads, which
// title a conversation, must not be taken for it).
func checkHooks(t *testing.T, w *twin) {
	t.Helper()
	if w.name == "gemini" {
		// Gemini CLI relaunches itself after the trust dialog to apply the
		// trust; now and then it goes on after the dialog still saying the
		// folder is untrusted (the new process started before the trust
		// was on disk, or no relaunch), and in an untrusted folder it runs
		// no hooks at all (seen once in a strict make test, while the tmux
		// twin, trusted, ran them). Gemini's own race, not agentd's:
		// there is nothing to count.
		// Judged by the text a person saw (logs --plain) as well as the
		// raw bytes, in which Ink may split the words with escapes: a
		// strict make test once missed it in the raw bytes alone, while
		// the screen said "Skipping project agents due to untrusted
		// folder".
		untrusted := func(out string) bool {
			i := max(strings.LastIndex(out, "trust the files in this folder"), strings.LastIndex(out, "Trust folder ("))
			return i >= 0 && strings.Contains(out[i:], "untrusted folder")
		}
		if untrusted(w.r.h.ctl(0, "logs", w.name)) || untrusted(w.r.h.ctl(0, "logs", w.name, "--plain")) {
			t.Logf("gemini: still untrusted after the trust dialog (its own race); it runs no hooks there, none checked")
			return
		}
	}
	st := sessionStatus(t, w.r.h, w.name)
	// Gemini CLI's are added by hand (its settings, in the test's home).
	if st.Hooks == nil || st.Hooks.Count == 0 || !st.Hooks.Wired && w.name != "gemini" {
		t.Fatalf("%s: hooks %+v; want wired and called", w.name, st.Hooks)
	}
	recs := stateRecords(t, w.r.h, w.name)
	var fromHooks []string
	for _, r := range recs {
		if strings.HasSuffix(r, "/hook") {
			fromHooks = append(fromHooks, r)
		}
	}
	t.Logf("%s: hooks %s, %d calls; state records %q", w.name, st.Hooks.How, st.Hooks.Count, recs)

	if len(fromHooks) == 0 {
		t.Errorf("%s: no state record came from a hook: %q", w.name, recs)
	}
	if st.Conversation == "" {
		t.Fatalf("%s: no conversation id in the manifest", w.name)
	}
	stored, _ := filepath.Glob(filepath.Join(w.ours.home, conversationStores[w.name]))
	found := false
	for _, f := range stored {
		b, _ := os.ReadFile(f)
		if strings.Contains(f, st.Conversation) || strings.Contains(string(b), st.Conversation) {
			found = strings.Contains(string(b), helloReply)
		}
	}
	if !found {
		t.Errorf("%s: the manifest's conversation %s (transcript %q) is not the one in the store holding the turn (%q)", w.name, st.Conversation, st.Transcript, stored)
	}
}

// TestHooksFollowTheConfig: hooks = false in config.toml leaves an agent
// CLI's hooks out of every spawn that does not say, and status says why;
// spawn --hooks wires them anyway, and --hooks=false leaves them out under
// the default config.
func TestHooksFollowTheConfig(t *testing.T) {
	t.Parallel()
	// A program named claude, so that agentd wires Claude Code's hooks
	// into its command (it takes the --settings and sleeps).
	bindir := t.TempDir()
	claude := filepath.Join(bindir, "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\nexec sleep 600\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	wired := func(h *home, name string) *wire.HookStatus {
		t.Helper()
		st := sessionStatus(t, h, name)
		if st.Hooks == nil {
			t.Fatalf("%s: no hooks in status", name)
		}
		return st.Hooks
	}

	off := newHome(t)
	writeFile(t, filepath.Join(off.config, "agentd", "config.toml"), "hooks = false\n")
	off.startDaemon(nil)
	off.ctl(0, "spawn", "plain", "--agent", "claude", "--", claude)
	if hs := wired(off, "plain"); hs.Wired || !strings.Contains(hs.Why, "hooks = false in config.toml") {
		t.Errorf("hooks = false, spawn without --hooks: %+v, want not wired, saying why", hs)
	}
	off.ctl(0, "spawn", "asked", "--agent", "claude", "--hooks", "--", claude)
	if hs := wired(off, "asked"); !hs.Wired {
		t.Errorf("hooks = false, spawn --hooks: %+v, want wired", hs)
	}

	on := newHome(t)
	on.startDaemon(nil)
	on.ctl(0, "spawn", "plain", "--agent", "claude", "--", claude)
	if hs := wired(on, "plain"); !hs.Wired {
		t.Errorf("default config, spawn without --hooks: %+v, want wired", hs)
	}
	on.ctl(0, "spawn", "none", "--agent", "claude", "--hooks=false", "--", claude)
	if hs := wired(on, "none"); hs.Wired {
		t.Errorf("default config, spawn --hooks=false: %+v, want not wired", hs)
	}
	if _, errOut, code := on.agentctl("", "spawn", "bad", "--hooks=maybe", "--", claude); code == 0 || !strings.Contains(errOut, "hooks") {
		t.Errorf("spawn --hooks=maybe: exit %d %q, want a usage error naming hooks", code, errOut)
	}
}
