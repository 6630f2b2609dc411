package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeAt(t *testing.T, p, body string, mod time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// TestResumeFormFindsTheNewestConversation holds each CLI's resume form
// against a store laid out as the pinned versions write it.
func TestResumeFormFindsTheNewestConversation(t *testing.T) {
	t.Parallel()
	old, recent := time.Now().Add(-time.Hour), time.Now()
	const cwd = "/work/my.proj"
	for _, tc := range []struct {
		name    string
		argv    []string
		store   func(home string)
		want    []string
		wantID  string
		noteHas string
	}{
		{name: "claude", argv: []string{"/opt/bin/claude", "--model", "x", "--continue"},
			store: func(home string) {
				writeAt(t, filepath.Join(home, ".claude/projects/-work-my-proj/aaaa.jsonl"), "{}\n", old)
				writeAt(t, filepath.Join(home, ".claude/projects/-work-my-proj/bbbb.jsonl"), "{}\n", recent)
				writeAt(t, filepath.Join(home, ".claude/projects/-work-other/cccc.jsonl"), "{}\n", recent.Add(time.Minute))
			},
			want: []string{"/opt/bin/claude", "--model", "x", "--resume", "bbbb"}, wantID: "bbbb", noteHas: "resumed"},
		{name: "codex", argv: []string{"codex", "--no-daemon"},
			store: func(home string) {
				const a, b = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
				writeAt(t, filepath.Join(home, ".codex/sessions/2026/12/01/rollout-2026-12-01T10-00-00-"+a+".jsonl"),
					`{"type":"session_meta","payload":{"id":"`+a+`","cwd":"/work/my.proj"}}`+"\n", old)
				writeAt(t, filepath.Join(home, ".codex/sessions/2026/12/02/rollout-2026-12-02T10-00-00-"+b+".jsonl"),
					`{"type":"session_meta","payload":{"id":"`+b+`","cwd":"/elsewhere"}}`+"\n", recent)
			},
			want: []string{"codex", "resume", "--no-daemon", "11111111-2222-3333-4444-555555555555"}, wantID: "11111111-2222-3333-4444-555555555555"},
		{name: "gemini", argv: []string{"node", "/m/gemini-cli/bundle/gemini.js"},
			store: func(home string) {
				writeAt(t, filepath.Join(home, ".gemini/projects.json"), `{"projects":{"/work":"w","/work/my.proj":"my-proj"}}`, old)
				writeAt(t, filepath.Join(home, ".gemini/tmp/my-proj/chats/session-2026-12-02T10-00-abc.json"), `{"sessionId":"gem-1","messages":[]}`, recent)
			},
			want: []string{"node", "/m/gemini-cli/bundle/gemini.js", "--resume", "gem-1"}, wantID: "gem-1"},
		{name: "claude-empty-store", argv: []string{"claude"}, store: func(string) {},
			want: []string{"claude"}, noteHas: "started fresh"},
		{name: "not-an-agent", argv: []string{"python3", "-i"}, store: func(string) {}, want: []string{"python3", "-i"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			tc.store(home)
			argv, id, note := resumeForm(&Manifest{Cwd: cwd}, tc.argv, []string{"HOME=" + home})
			if !slices.Equal(argv, tc.want) || id != tc.wantID || !strings.Contains(note, tc.noteHas) {
				t.Fatalf("resumeForm(%q) = %q, %q, %q; want %q, %q, a note with %q", tc.argv, argv, id, note, tc.want, tc.wantID, tc.noteHas)
			}
		})
	}
}

// TestResumeOfAConversationGoneStartsFresh: the id the session last
// resumed is no longer in the store: the CLI starts fresh, and the note
// says so, naming the id and the store.
func TestResumeOfAConversationGoneStartsFresh(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	argv, id, note := resumeForm(&Manifest{Cwd: "/p", RestartState: RestartState{ResumeID: "gone-id"}}, []string{"claude"}, []string{"HOME=" + home})
	if !slices.Equal(argv, []string{"claude"}) || id != "" || !strings.Contains(note, "gone-id is no longer in") || !strings.Contains(note, "started fresh") {
		t.Fatalf("got %q, %q, %q", argv, id, note)
	}
}

// TestRestartRunsTheResumeForm: a program named claude is restarted as
// `claude --resume ID` on the newest conversation of its HOME's store,
// recorded in the manifest and in the restarted record.
func TestRestartRunsTheResumeForm(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	bin, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	writeAt(t, filepath.Join(bin, "claude"), "#!/bin/sh\necho \"args:$*\"\nexec cat\n", time.Now())
	os.Chmod(filepath.Join(bin, "claude"), 0o755)
	env := []string{"HOME=" + home, "PATH=" + bin + ":/usr/bin:/bin"}
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "cc", Argv: []string{"claude"}, Cwd: cwd, Env: env}); err != nil {
		t.Fatal(err)
	}
	writeAt(t, filepath.Join(home, ".claude", "projects", claudeSlug(cwd), "conv-1.jsonl"), "{}\n", time.Now())
	info, err := m.Restart(ctx, RestartRequest{Name: "cc", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Manifest.Argv, []string{"claude", "--resume", "conv-1"}) || info.Manifest.ResumeID != "conv-1" ||
		!slices.Equal(info.Manifest.Command, []string{"claude"}) || info.Manifest.Agent != AgentClaude {
		t.Fatalf("manifest after restart: argv %q command %q resume %q agent %q", info.Manifest.Argv, info.Manifest.Command, info.Manifest.ResumeID, info.Manifest.Agent)
	}
	await(t, 10*time.Second, "the resumed program's output", func() bool {
		return strings.Contains(outputAfter(logOf(t, m, "cc"), 0), "args:--resume conv-1")
	})
	// Restarted again, the resume form is made from the spawned command,
	// not stacked on the last one.
	info, err = m.Restart(ctx, RestartRequest{Name: "cc", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Manifest.Argv, []string{"claude", "--resume", "conv-1"}) {
		t.Fatalf("second restart runs %q", info.Manifest.Argv)
	}
	var notes []string
	for _, ev := range logOf(t, m, "cc") {
		if ev.Type == EventRestarted {
			notes = append(notes, ev.Text)
		}
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "resumed the claude conversation conv-1") {
		t.Fatalf("restarted records: %q", notes)
	}
}
