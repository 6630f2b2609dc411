package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestResumeTakesTheConversationTheHooksTold: two sessions of one CLI in
// one directory, with one HOME, each resume the conversation their hooks
// reported, not the newest of the store; one whose conversation is gone
// starts fresh rather than take another session's.
func TestResumeTakesTheConversationTheHooksTold(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	const cwd = "/work/p"
	old, recent := time.Now().Add(-time.Hour), time.Now()
	store := filepath.Join(home, ".claude/projects", claudeSlug(cwd))
	writeAt(t, filepath.Join(store, "aaaa.jsonl"), "{}\n", old)
	writeAt(t, filepath.Join(store, "bbbb.jsonl"), "{}\n", recent)
	const ca, cb = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
	writeAt(t, filepath.Join(home, ".codex/sessions/2026/12/01/rollout-2026-12-01T10-00-00-"+ca+".jsonl"),
		`{"type":"session_meta","payload":{"id":"`+ca+`","cwd":"/work/p"}}`+"\n", old)
	writeAt(t, filepath.Join(home, ".codex/sessions/2026/12/02/rollout-2026-12-02T10-00-00-"+cb+".jsonl"),
		`{"type":"session_meta","payload":{"id":"`+cb+`","cwd":"/work/p"}}`+"\n", recent)
	env := []string{"HOME=" + home}
	for _, tc := range []struct {
		name       string
		argv       []string
		id, path   string
		wantID     string
		noteHas    string
		wantFresh  bool
		wantInArgv string
	}{
		{name: "claude, the older by transcript", argv: []string{"claude"}, id: "aaaa", path: filepath.Join(store, "aaaa.jsonl"), wantID: "aaaa", noteHas: "resumed"},
		{name: "claude, the older by id", argv: []string{"claude"}, id: "aaaa", wantID: "aaaa", noteHas: "resumed"},
		{name: "claude, the newer", argv: []string{"claude"}, id: "bbbb", path: filepath.Join(store, "bbbb.jsonl"), wantID: "bbbb", noteHas: "resumed"},
		{name: "claude, gone", argv: []string{"claude"}, id: "cccc", path: filepath.Join(store, "cccc.jsonl"), noteHas: "its hooks reported is no longer in", wantFresh: true},
		{name: "codex, the older by thread id", argv: []string{"codex"}, id: ca, wantID: ca, noteHas: "resumed"},
		{name: "codex, gone", argv: []string{"codex"}, id: "99999999-2222-3333-4444-555555555555", noteHas: "no longer in", wantFresh: true},
	} {
		man := &Manifest{Cwd: cwd, RestartState: RestartState{ConversationID: tc.id, TranscriptPath: tc.path}}
		argv, id, note := resumeForm(man, tc.argv, env)
		if id != tc.wantID || !strings.Contains(note, tc.noteHas) || tc.wantFresh != slices.Equal(argv, tc.argv) ||
			!tc.wantFresh && !slices.Contains(argv, tc.wantID) {
			t.Errorf("%s: resumeForm = %q, %q, %q; want id %q, a note with %q", tc.name, argv, id, note, tc.wantID, tc.noteHas)
		}
	}
}

// TestHookOverlayWiresEachCLI: Claude Code gets --settings with a file of
// hooks right after its program, Codex -c notify there; behind a wrapper,
// with the person's own --settings or notify, or for Gemini CLI, nothing
// is added and the report says why.
func TestHookOverlayWiresEachCLI(t *testing.T) {
	t.Parallel()
	dir, home := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home}
	const ctl = "/opt/agent d/agentctl"
	argv, _, rep := hookOverlay(AgentClaude, []string{"/bin/claude", "--model", "x", "fix it"}, env, ctl, "", dir)
	file := filepath.Join(dir, "hooks-claude.json")
	if !rep.Wired || !slices.Equal(argv, []string{"/bin/claude", "--settings", file, "--model", "x", "fix it"}) {
		t.Fatalf("claude: %q, %+v", argv, rep)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string }
		}
	}
	b, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("the settings file: %v\n%s", err, b)
	}
	for _, ev := range HookEvents[AgentClaude] {
		if g := s.Hooks[ev]; len(g) != 1 || len(g[0].Hooks) != 1 || g[0].Hooks[0].Command != `'/opt/agent d/agentctl' hook --agent claude `+ev {
			t.Errorf("claude's %s hook: %+v", ev, g)
		}
	}
	if fi, _ := os.Stat(file); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the settings file's mode: %v", fi)
	}

	argv, _, rep = hookOverlay(AgentCodex, []string{"/usr/bin/codex", "--no-daemon"}, env, ctl, "", dir)
	if !rep.Wired || !slices.Equal(argv, []string{"/usr/bin/codex", "-c", `notify=["/opt/agent d/agentctl","hook","--agent","codex","notify"]`, "--no-daemon"}) {
		t.Fatalf("codex: %q, %+v", argv, rep)
	}
	for _, tc := range []struct {
		name, agent string
		argv        []string
		setup       func()
		why         string
	}{
		{"claude behind env", AgentClaude, []string{"env", "X=1", "claude"}, nil, "through another program"},
		{"claude with its own settings", AgentClaude, []string{"claude", "--settings", "/x.json"}, nil, "its own --settings"},
		{"codex with -c notify", AgentCodex, []string{"codex", "-c", "notify=[\"x\"]"}, nil, "already sets notify"},
		{"codex with notify in config.toml", AgentCodex, []string{"codex"}, func() {
			writeAt(t, filepath.Join(home, ".codex", "config.toml"), "model = \"m\"\nnotify = [\"n\"]\n[tui]\nx = 1\n", time.Now())
		}, "already sets notify"},
		{"gemini", AgentGemini, []string{"gemini"}, nil, "by hand"},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		argv, outEnv, rep := hookOverlay(tc.agent, tc.argv, env, ctl, "", dir)
		if rep.Wired || !strings.Contains(rep.Why, tc.why) || !slices.Equal(argv, tc.argv) || !slices.Equal(outEnv, env) {
			t.Errorf("%s: %q, %+v; want unchanged and why %q", tc.name, argv, rep, tc.why)
		}
	}
	if _, _, rep := hookOverlay(AgentClaude, []string{"claude"}, env, "", "spawned with --hooks=false", dir); rep.Wired || rep.Why != "spawned with --hooks=false" {
		t.Errorf("hooks off: %+v", rep)
	}
}
