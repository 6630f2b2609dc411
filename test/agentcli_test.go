package test

// The real agent CLIs under agentd, offline (see agentcli_harness_test.go):
// each at 80x24 and 120x40 through its states — the start-up dialog, the
// idle prompt, working on a turn, the turn answered with text, a tool call waiting for
// approval, the approval, the tool's effect on disk, the final text — with
// tmux running the same CLI with the same bytes as the oracle for the
// screen.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"

	"github.com/agentd/agentd/internal/fakemodel"
)

// writeFile writes a configuration file, making its directory.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeJSONFile writes v as JSON to path.
func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+"\n")
}

// claudeKey is the API key Claude Code is given; it asks about a key from
// the environment once, unless ~/.claude.json lists its last 20 characters
// as approved.
const claudeKey = "sk-ant-api03-fake-agentd-test-key-0123456789abcdef"

// agentCLIs are the CLIs, their offline configuration and their screens.
var agentCLIs = []agentCLI{
	{
		name: "claude",
		// The platform binary npm put beside the wrapper package; the
		// wrapper's postinstall (skipped by --ignore-scripts) only copies
		// it over a stub.
		argv: func(m string) []string {
			return []string{filepath.Join(m, "@anthropic-ai", "claude-code-linux-"+npmArch(), "claude")}
		},
		env: func(url string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + claudeKey,
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		},
		setup: func(t *testing.T, home, dir, url string) {
			// Onboarding done and the key approved; no
			// projects[dir].hasTrustDialogAccepted, so it asks to trust dir.
			writeJSONFile(t, filepath.Join(home, ".claude.json"), map[string]any{
				"hasCompletedOnboarding":  true,
				"hasSeenAutoDefaultNudge": true,
				"numStartups":             1,
				"customApiKeyResponses":   map[string]any{"approved": []string{claudeKey[len(claudeKey)-20:]}, "rejected": []string{}},
			})
			// "default": a command that changes something asks first.
			writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{
				"permissions": map[string]any{"defaultMode": "default"},
			})
		},
		tool: fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "touch approved.txt", "description": "Create approved.txt"}},
		// Its trust dialog opens on "No, exit".
		trust:       `Yes, I trust this folder`,
		trustKeys:   []string{"down", "enter"},
		trustSteps:  []string{`❯ Yes, I trust this folder`},
		idle:        `\? for shortcuts`,
		working:     `esc to interrupt`,
		permission:  `Do you want to proceed\?`,
		approveKeys: []string{"enter"},
	},
	{
		name: "codex",
		argv: func(m string) []string { return []string{filepath.Join(m, ".bin", "codex"), "--no-daemon"} },
		env:  func(url string) []string { return []string{"OPENAI_API_KEY=sk-fake-agentd-test"} },
		setup: func(t *testing.T, home, dir, url string) {
			// on-request: the model may ask to run a command outside the
			// sandbox, and the person is asked.
			writeFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-fake"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[model_providers.fake]
name = "Fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
`, url))
		},
		tool: fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "touch approved.txt",
			"sandbox_permissions": "require_escalated", "justification": "Create approved.txt?"}},
		trust:       `Trust this folder\?`,
		trustKeys:   []string{"enter"},
		idle:        `\? for shortcuts`,
		working:     `Working \(\d+s • esc to interrupt\)`,
		permission:  `Would you like to run the following command\?`,
		approveText: "y",
	},
	{
		name: "gemini",
		argv: func(m string) []string {
			return []string{"node", filepath.Join(m, "@google", "gemini-cli", "bundle", "gemini.js")}
		},
		env: func(url string) []string {
			return []string{"GEMINI_API_KEY=fake-agentd-test", "GOOGLE_GEMINI_BASE_URL=" + url}
		},
		setup: func(t *testing.T, home, dir, url string) {
			// Its hooks as README's Agent hooks says to add them by hand:
			// agentd cannot wire them for it.
			var hooks map[string]any
			b, err := session.HookSettings("gemini", bin.agentctl)
			if err != nil || json.Unmarshal(b, &hooks) != nil {
				t.Fatalf("gemini hook settings: %v", err)
			}
			writeJSONFile(t, filepath.Join(home, ".gemini", "settings.json"), map[string]any{
				"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"hooks":    hooks["hooks"],
			})
		},
		tool:        fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": "touch approved.txt", "description": "Create approved.txt"}},
		trust:       `Do you trust the files in this folder\?`,
		trustKeys:   []string{"enter"},
		trusted:     geminiTrusted,
		idle:        `Type your message`,
		working:     `\(esc to cancel, \d+s\)`,
		permission:  `Allow execution of`,
		approveKeys: []string{"enter"},
	},
}

// geminiTrusted says whether Gemini CLI has left its trust dialog: either
// its new process has drawn its prompt below "restarting to apply the
// trust changes", or it closed the dialog without a restart (the dialog and
// that line gone, the prompt there). While it restarts, the dialog stays.
func geminiTrusted(screen string) bool {
	const restarting, prompt = "restarting to apply the trust changes", "Type your message"
	if i := strings.Index(screen, restarting); i >= 0 {
		return strings.Contains(screen[i:], prompt)
	}
	return strings.Contains(screen, prompt) && !strings.Contains(screen, "Do you trust the files in this folder?")
}

// The conversation every CLI plays.
const (
	helloPrompt = "fm-say-hello"
	helloReply  = "Hello from the fake model."
	toolPrompt  = "fm-make-file"
	toolReply   = "The file approved.txt now exists."
)

func cliScript(tool fakemodel.ToolCall) fakemodel.Script {
	return fakemodel.Script{Turns: []fakemodel.Turn{
		// The reply holds its stream open a while, so the CLI is seen
		// working.
		{Prompt: helloPrompt, Steps: []fakemodel.Step{{Text: helloReply, Lead: 2 * time.Second, Delay: time.Second}}},
		{Prompt: toolPrompt, Steps: []fakemodel.Step{{Tool: &tool}, fakemodel.Text(toolReply)}},
	}}
}

// TestAgentCLIsReachEveryStateUnderAgentd drives each CLI through its
// states under agentd and, with the same bytes, in tmux.
func TestAgentCLIsReachEveryStateUnderAgentd(t *testing.T) {
	modules := agentCLIModules(t)
	const step = 60 * time.Second // generous: six CLIs start at once on two cores
	for _, cli := range agentCLIs {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s/%dx%d", cli.name, size[0], size[1]), func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				mark := func(state string) { t.Logf("%6.2fs %s", time.Since(start).Seconds(), state) }
				r := newCLIRig(t)
				w := r.spawnTwin(cli.name, cli, modules, size[0], size[1], cliScript(cli.tool))

				w.await(cli.trust, step)
				mark("start-up dialog")
				w.compare("start-up dialog")
				w.awaitState(wire.StateNeedsAttention, "trust", step)
				for i, k := range cli.trustKeys {
					w.send("", k)
					if i < len(cli.trustSteps) {
						w.await(cli.trustSteps[i], step)
					}
				}

				if cli.trusted != nil {
					w.awaitScreen("the CLI trusting the folder", cli.trusted, step)
				}
				w.await(cli.idle, step)
				// Gemini CLI, trusted, sometimes restarts itself and asks
				// again before its trust is on disk: a person answers
				// again, on whichever side asks.
				trustRE := regexp.MustCompile(cli.trust)
				for i := 0; i < 3 && w.awaitStateUnless(wire.StateWaiting, wire.StateNeedsAttention, step); i++ {
					// The state follows the screen within a moment: ask again
					// only while the dialog is what agentd still reports.
					if !w.stillAsks(trustRE, 3*time.Second) {
						continue
					}
					theirs := trustRE.MatchString(w.theirScreen())
					t.Logf("%s asked to trust the folder again (tmux's side too: %v)", cli.name, theirs)
					for _, k := range cli.trustKeys {
						w.r.h.ctl(0, "send", w.name, "--keys", k)
						if theirs {
							w.sendTheirs("", k)
						}
					}
					w.await(cli.idle, step)
				}
				mark("idle prompt")
				w.compare("idle")
				w.awaitState(wire.StateWaiting, "", step)

				w.submit(helloPrompt, cli.working, step, regexp.QuoteMeta(helloReply))
				mark("working")
				w.awaitStateSeen(wire.StateWorking, step)
				w.await(regexp.QuoteMeta(helloReply), step)
				w.await(cli.idle, step)
				mark("text turn answered")
				// The turn is over for agentd too before the next prompt, as a
				// person would wait: Codex shows no end of a turn that
				// streamed text, its notify hook tells it, and a prompt
				// typed before Codex has finished the turn takes its notify
				// away.
				w.awaitState(wire.StateWaiting, "", step)
				w.compare("text turn")

				w.submit(toolPrompt, cli.permission, step)
				w.await(cli.permission, step)
				mark("permission prompt")
				w.compare("permission prompt")
				d := w.awaitState(wire.StateNeedsApproval, "permission", step)
				for _, s := range []side{w.ours, w.theirs} {
					if _, err := os.Stat(filepath.Join(s.dir, "approved.txt")); err == nil {
						t.Fatalf("approved.txt exists in %s before the approval", s.dir)
					}
				}

				// Ours is approved through agentctl approve (the
				// keys are the CLI's own, from the screen), the tmux twin
				// with the keys a person would press. A stale prompt id
				// is refused first, nothing typed.
				if _, errOut, code := w.r.h.agentctl("", "approve", w.name, "--prompt", "0000000000000000"); code != 17 || !strings.Contains(errOut, "nothing was typed") {
					t.Errorf("approve with a stale prompt id: exit %d, %s", code, errOut)
				}
				if out := w.r.h.ctl(0, "approve", w.name, "--prompt", d.PromptID); !strings.Contains(out, w.name+":") {
					t.Errorf("approve said %q", out)
				}
				w.sendTheirs(cli.approveText, cli.approveKeys...)
				w.await(regexp.QuoteMeta(toolReply), step)
				w.await(cli.idle, step)
				mark("tool ran, final text")
				w.awaitState(wire.StateWaiting, "", step)
				if _, errOut, code := w.r.h.agentctl("", "approve", w.name); code != 17 || !strings.Contains(errOut, "asks nothing now") {
					t.Errorf("approve with nothing asked: exit %d, %s", code, errOut)
				}
				for _, s := range []side{w.ours, w.theirs} {
					if _, err := os.Stat(filepath.Join(s.dir, "approved.txt")); err != nil {
						t.Errorf("after the approval: %v", err)
					}
				}
				w.compare("final text")

				checkHooks(t, w)
				checkRequests(t, cli.name, w.ours.srv)
				t.Logf("%s %dx%d: the snapshot differed from the tmux twin in %d of 5 states (%s), from its own output played in tmux in %d (%s)",
					cli.name, size[0], size[1], len(w.diffs), strings.Join(w.diffs, ", "), len(w.replayDiffs), strings.Join(w.replayDiffs, ", "))
			})
		}
	}
}

// checkRequests asserts what the model saw: the tool's result came back
// to it, with the earlier turn resent, and logs every request.
func checkRequests(t *testing.T, cli string, srv *fakemodel.Server) {
	t.Helper()
	var lines []string
	var final *fakemodel.Request
	var reqs []fakemodel.Request
	// The fake model records a request once its answer is written, a
	// moment after the screen shows the answer: look until it is there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		reqs, lines, final = srv.Requests(), lines[:0], nil
		for i, r := range reqs {
			lines = append(lines, "  "+r.String())
			if r.Turn == 1 && r.ToolResults == 1 && r.HasTools {
				final = &reqs[i]
			}
		}
		if final != nil || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%s made %d requests to the fake model:\n%s", cli, len(reqs), strings.Join(lines, "\n"))
	if final == nil {
		t.Fatalf("%s: no request carried the tool's result", cli)
	}
	body := string(final.Body)
	for _, want := range []string{helloPrompt, helloReply, toolPrompt} {
		if !strings.Contains(body, want) {
			t.Errorf("%s: the request with the tool's result does not resend %q", cli, want)
		}
	}
	var call string
	for _, r := range reqs {
		if r.Turn == 1 && r.Step == 0 && r.CallID != "" {
			call = r.CallID
		}
	}
	if call == "" || (cli != "gemini" && !strings.Contains(body, call)) {
		// Gemini CLI pairs a result with its call by name, and may drop
		// the id.
		t.Errorf("%s: the tool result does not name the call %q the model made", cli, call)
	}
	if final.Step != 1 {
		t.Errorf("%s: the tool result was answered with step %d, want 1", cli, final.Step)
	}
}
