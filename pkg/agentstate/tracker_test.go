package agentstate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reading is one input to a Tracker in a table: a hook event or a screen
// classification, ms after the start.
type reading struct {
	ms     int
	hook   string // a Claude Code hook event, or ""
	screen State
	prompt string // the screen's prompt id
}

// TestTrackerFusesHooksAndScreen runs the fusion rule on sequences the
// real CLIs produce.
func TestTrackerFusesHooksAndScreen(t *testing.T) {
	t.Parallel()
	perm := `{"session_id":"s","transcript_path":"/t","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"touch a"}}`
	for _, tc := range []struct {
		name  string
		in    []reading
		want  string // the transitions, "from>to@ms/source" joined by spaces
		final State
	}{
		{"a permission hook then the menu on screen is one needs_approval",
			[]reading{{0, "UserPromptSubmit", "", ""}, {40, "", Working, ""}, {900, "PermissionRequest", "", ""}, {950, "", NeedsApproval, "p1"}, {1200, "", NeedsApproval, "p1"}},
			"unknown>working@0/hook working>needs_approval@900/hook needs_approval>needs_approval@950/screen", NeedsApproval},
		{"the menu on screen before its hook is one needs_approval too",
			[]reading{{0, "", Waiting, ""}, {100, "UserPromptSubmit", "", ""}, {900, "", NeedsApproval, "p1"}, {950, "PermissionRequest", "", ""}},
			"unknown>waiting@0/screen waiting>working@100/hook working>needs_approval@900/screen", NeedsApproval},
		{"a stop hook then the screen idle is waiting once",
			[]reading{{0, "UserPromptSubmit", "", ""}, {3000, "Stop", "", ""}, {3010, "", Working, ""}, {3100, "", Waiting, ""}},
			"unknown>working@0/hook working>waiting@3000/hook", Waiting},
		{"the screen still idle just after the prompt hook does not flip back",
			[]reading{{0, "", Waiting, ""}, {100, "UserPromptSubmit", "", ""}, {120, "", Waiting, ""}, {300, "", Working, ""}},
			"unknown>waiting@0/screen waiting>working@100/hook", Working},
		{"esc at the prompt fires no stop hook: the screen says waiting after the grace",
			[]reading{{0, "PermissionRequest", "", ""}, {50, "", NeedsApproval, "p1"}, {5000, "", Waiting, ""}},
			"unknown>needs_approval@0/hook needs_approval>needs_approval@50/screen needs_approval>waiting@5000/screen", Waiting},
		{"a dialog on screen wins over a fresh hook",
			[]reading{{0, "Stop", "", ""}, {100, "", NeedsAttention, "e1"}},
			"unknown>waiting@0/hook waiting>needs_attention@100/screen", NeedsAttention},
		{"a second prompt while one is shown is a new needs_approval",
			[]reading{{0, "", NeedsApproval, "p1"}, {500, "", NeedsApproval, "p1"}, {900, "", NeedsApproval, "p2"}},
			"unknown>needs_approval@0/screen needs_approval>needs_approval@900/screen", NeedsApproval},
		{"unknown screens change nothing",
			[]reading{{0, "", Waiting, ""}, {10, "", Unknown, ""}, {20, "SessionStart", "", ""}},
			"unknown>waiting@0/screen", Waiting},
		{"a turn-end hook after an error banner on screen keeps needs_attention, once",
			[]reading{{0, "UserPromptSubmit", "", ""}, {800, "", NeedsAttention, "e1"}, {820, "Stop", "", ""}, {900, "", NeedsAttention, "e1"}, {5000, "", Waiting, ""}},
			"unknown>working@0/hook working>needs_attention@800/screen needs_attention>waiting@5000/screen", Waiting},
		{"after the grace the screen corrects a hook that missed the change",
			[]reading{{0, "UserPromptSubmit", "", ""}, {10000, "", Waiting, ""}},
			"unknown>working@0/hook working>waiting@10000/screen", Waiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			tr := NewTracker(t0)
			var got, moves []string
			for _, r := range tc.in {
				at := t0.Add(time.Duration(r.ms) * time.Millisecond)
				var x Transition
				var ok bool
				if r.hook != "" {
					payload := fmt.Sprintf(`{"session_id":"s","transcript_path":"/t","hook_event_name":%q}`, r.hook)
					if r.hook == "PermissionRequest" {
						payload = perm
					}
					e, err := FromHook(Claude, r.hook, []byte(payload))
					if err != nil {
						t.Fatal(err)
					}
					x, ok = tr.Hook(at, e)
				} else {
					d := Detail{}
					if r.screen.Asks() {
						d = Detail{Kind: KindPermission, Tool: "Bash command", Subject: "touch a", PromptID: r.prompt,
							Choices: []Choice{{Label: "Yes", Role: RoleApprove, Keys: []string{"enter"}}}}
					}
					x, ok = tr.Screen(at, r.screen, d)
				}
				if ok {
					got = append(got, fmt.Sprintf("%s>%s@%d/%s", x.From, x.To, x.At.Sub(t0).Milliseconds(), x.Source))
					if !x.Again {
						moves = append(moves, got[len(got)-1])
					}
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("transitions:\n got %s\nwant %s", g, tc.want)
			}
			st, d, since := tr.State()
			if st != tc.final {
				t.Errorf("final state %s, want %s", st, tc.final)
			}
			// since is the last move's (a wait told again keeps it).
			if len(moves) > 0 {
				last := moves[len(moves)-1]
				ms := last[strings.Index(last, "@")+1 : strings.Index(last, "/")]
				if fmt.Sprint(since.Sub(t0).Milliseconds()) != ms {
					t.Errorf("since %v, want the last transition's time (%s ms)", since.Sub(t0), ms)
				}
			}
			if st == NeedsApproval && (d.PromptID == "" || len(d.Choices) == 0 || d.Subject == "") {
				t.Errorf("needs_approval detail %+v: want the screen's prompt id and choices with the subject", d)
			}
		})
	}
}

// TestTrackerKeepsTheConversation: the hooks' session id and transcript
// path are kept for resuming, and SessionEnd marks the end.
func TestTrackerKeepsTheConversation(t *testing.T) {
	t.Parallel()
	tr := NewTracker(time.Unix(0, 0))
	for _, p := range []string{
		`{"session_id":"abc","transcript_path":"/h/.claude/projects/p/abc.jsonl","hook_event_name":"SessionStart","source":"startup"}`,
		`{"session_id":"abc","hook_event_name":"SessionEnd","reason":"exit"}`,
	} {
		var ev struct {
			Name string `json:"hook_event_name"`
		}
		ev.Name = strings.Split(strings.Split(p, `"hook_event_name":"`)[1], `"`)[0]
		e, err := FromHook(Claude, ev.Name, []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tr.Hook(time.Unix(1, 0), e); ok {
			t.Errorf("%s changed the state", ev.Name)
		}
	}
	id, path, ended := tr.Conversation()
	if id != "abc" || path != "/h/.claude/projects/p/abc.jsonl" || !ended {
		t.Errorf("Conversation() = %q %q %v, want abc, the transcript, ended", id, path, ended)
	}
}

// TestTrackerDropsOtherThreadsHooks: Codex's notify fires for its side
// threads (a conversation's title) too; only the session's own thread,
// learned from SessionStart, moves the state.
func TestTrackerDropsOtherThreadsHooks(t *testing.T) {
	t.Parallel()
	tr := NewTracker(time.Unix(0, 0))
	feed := func(sec int, event, payload string) bool {
		e, err := FromHook(Codex, event, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		_, ok := tr.Hook(time.Unix(int64(sec), 0), e)
		return ok
	}
	feed(1, "SessionStart", `{"session_id":"main","transcript_path":"/r.jsonl","hook_event_name":"SessionStart","source":"startup"}`)
	if !feed(2, "UserPromptSubmit", `{"session_id":"main","hook_event_name":"UserPromptSubmit","prompt":"p"}`) {
		t.Fatal("UserPromptSubmit did not move to working")
	}
	if feed(3, "notify", `{"type":"agent-turn-complete","thread-id":"title-thread","input-messages":["Generate a concise, single-line task title"],"last-assistant-message":null}`) {
		t.Error("a side thread's agent-turn-complete moved the session's state")
	}
	if st, _, _ := tr.State(); st != Working {
		t.Errorf("state %s after the side thread's notify, want working", st)
	}
	if !feed(4, "notify", `{"type":"agent-turn-complete","thread-id":"main","last-assistant-message":"done"}`) {
		t.Error("the session's own agent-turn-complete did not move it")
	}
	if id, path, _ := tr.Conversation(); id != "main" || path != "/r.jsonl" {
		t.Errorf("Conversation() = %q %q, want main /r.jsonl", id, path)
	}
}

// TestTrackerOnRealTimelines replays what the real CLIs did, in the order
// it happened (testdata/timelines: each screen saved and each hook's
// input, with their times, from test/agentstate_capture_test.go): after
// every screen the Tracker must be in that screen's state, and each
// prompt the CLI showed is one needs_approval, however many hooks and
// readings saw it.
func TestTrackerOnRealTimelines(t *testing.T) {
	files, _ := filepath.Glob("testdata/timelines/*.txt")
	if len(files) == 0 {
		t.Fatal("no timelines in testdata/timelines: run test/agentstate_capture_test.go with AGENTSTATE_CAPTURE")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			agent := Agent(strings.SplitN(name, "-", 2)[0])
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var tr *Tracker
			var log []string
			prompts, approvals := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var ns int64
				var kind, file string
				if _, err := fmt.Sscanf(line, "%d %s %s", &ns, &kind, &file); err != nil {
					t.Fatalf("%s: %q: %v", f, line, err)
				}
				at := time.Unix(0, ns)
				if tr == nil {
					tr = NewTracker(at)
				}
				var x Transition
				var moved bool
				switch kind {
				case "hook":
					payload, err := os.ReadFile(filepath.Join("testdata/hooks", file))
					if err != nil {
						t.Fatal(err)
					}
					event := strings.SplitN(strings.TrimSuffix(file, ".json"), "-", 4)[3]
					e, err := FromHook(agent, event, payload)
					if err != nil {
						t.Fatalf("%s: %v", file, err)
					}
					x, moved = tr.Hook(at, e)
				case "screen":
					text, err := os.ReadFile(filepath.Join("testdata/screens", file))
					if err != nil {
						t.Fatal(err)
					}
					scr, err := ParseScreen(string(text))
					if err != nil {
						t.Fatal(err)
					}
					st, d := Classify(agent, scr)
					x, moved = tr.Screen(at, st, d)
					state := strings.SplitN(strings.TrimSuffix(file, ".txt"), "-", 3)[2]
					want := wantByState[state].state
					if a, ok := ambiguous[strings.TrimSuffix(file, ".txt")]; ok {
						want = a
					}
					if state == "permission" || state == "permission-deny" || state == "question" {
						prompts++
					}
					if got, _, _ := tr.State(); want != Unknown && got != want {
						t.Errorf("after %s the tracker says %s, want %s\n%s", file, got, want, strings.Join(log, "\n"))
					}
				}
				if moved {
					log = append(log, fmt.Sprintf("  %s %s>%s (%s %s)", at.Format("15:04:05.000"), x.From, x.To, x.Source, file))
					switch {
					case x.Again:
						// The hook's prompt told again with the
						// screen's prompt id: the same wait.
						if x.Detail.PromptID == "" {
							t.Errorf("a wait told again without a prompt id: %+v", x)
						}
					case x.To == NeedsApproval:
						approvals++
					}
				}
			}
			if approvals != prompts {
				t.Errorf("%d needs_approval transitions for %d prompts shown:\n%s", approvals, prompts, strings.Join(log, "\n"))
			}
			t.Logf("transitions:\n%s", strings.Join(log, "\n"))
		})
	}
}

// TestTrackerTellsAHooksPromptAgainWithItsID: a needs_approval a hook told
// (no prompt id: the CLI has not drawn the prompt yet) is told again once
// the screen shows its choices, with the prompt id, the same since; a
// screen that merely agrees again tells nothing.
func TestTrackerTellsAHooksPromptAgainWithItsID(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	tr := NewTracker(t0)
	tr.Hook(t0, Event{Name: "UserPromptSubmit", State: Working})
	x, ok := tr.Hook(t0.Add(time.Second), Event{Name: "PermissionRequest", State: NeedsApproval, Detail: Detail{Kind: "permission", Tool: "Bash", Subject: "touch a"}})
	if !ok || x.To != NeedsApproval || x.Detail.PromptID != "" {
		t.Fatalf("the hook's prompt: %+v %v", x, ok)
	}
	d := Detail{Kind: "permission", Choices: []Choice{{Label: "Yes"}}, PromptID: "p1"}
	x, ok = tr.Screen(t0.Add(1100*time.Millisecond), NeedsApproval, d)
	if !ok || !x.Again || x.From != NeedsApproval || x.To != NeedsApproval || x.Detail.PromptID != "p1" || x.Detail.Subject != "touch a" || x.Source != SourceScreen {
		t.Fatalf("the screen's prompt after the hook's: %+v %v, want the same wait told again with p1 and the hook's subject", x, ok)
	}
	if _, _, since := tr.State(); !since.Equal(t0.Add(time.Second)) {
		t.Errorf("since %v, want the hook's %v", since, t0.Add(time.Second))
	}
	if x, ok = tr.Screen(t0.Add(1200*time.Millisecond), NeedsApproval, d); ok {
		t.Errorf("the same prompt seen again told %+v", x)
	}
}
