package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/pkg/agentstate"
)

// An agent CLI's hooks (issue 27): the CLI runs `agentctl hook EVENT` (its
// hook command, or Codex's notify program), which reports the hook's JSON
// to agentd with the session's secret (TokenEnv); Manager.Hook checks the
// secret, and the session's worker reads the payload (agentstate.FromHook),
// feeds its Tracker and records the change of state it causes (a "state"
// record of reason "hook"). What the hooks tell of the CLI's own session
// (its id and transcript) goes into the manifest, where a restart finds
// the conversation to resume (resume.go).
//
// The hooks are wired by an overlay agentd owns, never by editing the
// person's configuration: the worker adds it to the command it runs (not
// to the command recorded, so a restart adds it afresh):
//
//	Claude Code  --settings <session dir>/hooks-claude.json after the
//	             program, a settings file with one hook per event; Claude
//	             Code merges it with the person's settings
//	Codex        -c notify=[agentctl, hook, --agent, codex, notify] after
//	             the program: Codex runs it at the end of each turn with
//	             the event's JSON as its last argument. Codex's own hooks
//	             (hooks.json, features.codex_hooks) are not wired: Codex
//	             asks the person to review new hooks in a dialog at start
//	             and runs none until they are trusted, which an overlay
//	             must not add to every session. A config.toml that sets
//	             notify itself is left alone (-c would replace it).
//	Gemini CLI   none: it reads hooks only from its settings files, and
//	             the one layer a variable can point elsewhere (system
//	             settings and system defaults, GEMINI_CLI_SYSTEM_*_PATH)
//	             is skipped unless the file and every directory above it
//	             are root's and writable by nobody else, which no file of
//	             a user's agentd is. The person adds the hooks to
//	             ~/.gemini/settings.json (HookSettings prints them; README,
//	             Agent hooks); they report only inside an agentd session,
//	             and Gemini CLI runs them only in a trusted folder.
//
// Decision: the overlay goes after the program word only when the program
// is the CLI itself or a script runner running it (agentIndex, as the
// restart's resume form): behind a wrapper (env, npx, unshare) an option
// could land on the wrapper. Those sessions report through the screen
// alone, and status and doctor say why.

// HookEvents are the events the overlay registers for each agent CLI.
var HookEvents = map[string][]string{
	AgentClaude: {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
		"PostToolUseFailure", "PermissionDenied", "Notification", "Stop", "StopFailure", "SessionEnd"},
	AgentCodex:  {"notify"},
	AgentGemini: {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification", "AfterAgent", "SessionEnd"},
}

// HookReport says whether a session's agent CLI reports through its
// hooks.
type HookReport struct {
	// Wired says the overlay is in the command that runs; How says which
	// (a settings file, Codex's notify), Why why not.
	Wired bool   `json:"wired"`
	How   string `json:"how,omitempty"`
	Why   string `json:"why,omitempty"`
	// Count is the hook calls taken since the program started, Last when
	// the last came.
	Count uint64    `json:"count,omitempty"`
	Last  time.Time `json:"last,omitzero"`
}

// hookOverlay is how the worker wires agent's hooks into its command: the
// argv and environment to run, and the report. agentctl is the absolute
// path of the agentctl that hooks run ("" when hooks are off, why says
// why). dir is the session's directory, which holds the settings files.
func hookOverlay(agent string, argv, env []string, agentctl, why, dir string) ([]string, []string, HookReport) {
	if agent == "" {
		return argv, env, HookReport{}
	}
	if agentctl == "" {
		return argv, env, HookReport{Why: why}
	}
	i, direct := agentIndex(argv)
	settings := func(name string) (string, error) {
		b, err := HookSettings(agent, agentctl)
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, name)
		return p, writeFileAtomic(p, b)
	}
	switch agent {
	case AgentClaude:
		if direct != agent {
			return argv, env, HookReport{Why: "the command runs Claude Code through another program; add the hooks by hand (README, Agent hooks)"}
		}
		if slices.ContainsFunc(argv[i+1:], func(a string) bool { return a == "--settings" || strings.HasPrefix(a, "--settings=") }) {
			return argv, env, HookReport{Why: "the command gives its own --settings; add the hooks to that file by hand (README, Agent hooks)"}
		}
		p, err := settings("hooks-claude.json")
		if err != nil {
			return argv, env, HookReport{Why: "cannot write the hooks' settings file: " + err.Error()}
		}
		out := slices.Concat(argv[:i+1], []string{"--settings", p}, argv[i+1:])
		return out, env, HookReport{Wired: true, How: "claude --settings " + p}
	case AgentCodex:
		if direct != agent {
			return argv, env, HookReport{Why: "the command runs Codex through another program; add notify by hand (README, Agent hooks)"}
		}
		if codexSetsNotify(argv[i+1:], env) {
			return argv, env, HookReport{Why: "Codex's config already sets notify, which agentd leaves alone; add agentctl hook to it by hand (README, Agent hooks)"}
		}
		n, _ := json.Marshal([]string{agentctl, "hook", "--agent", agent, "notify"})
		out := slices.Concat(argv[:i+1], []string{"-c", "notify=" + string(n)}, argv[i+1:])
		return out, env, HookReport{Wired: true, How: "codex -c notify (turn ends only: Codex's hooks need a review at start)"}
	case AgentGemini:
		return argv, env, HookReport{Why: "Gemini CLI reads hooks only from its own settings files; add them to ~/.gemini/settings.json by hand (README, Agent hooks)"}
	}
	return argv, env, HookReport{Why: "agentd wires no hooks for " + agent}
}

// HookSettings is the "hooks" settings that run agentctl (its absolute
// path) for each of agent's HookEvents, as JSON: Claude Code's --settings
// file, and the lines a person adds to Gemini CLI's settings.json.
func HookSettings(agent, agentctl string) ([]byte, error) {
	hooks := map[string]any{}
	for _, ev := range HookEvents[agent] {
		cmd := shellQuote(agentctl) + " hook --agent " + agent + " " + ev
		hooks[ev] = []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": hookTimeout(agent)}}}}
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	return append(b, '\n'), err
}

// hookTimeout is the timeout the settings give each hook, in the CLI's
// unit (Claude Code: seconds, Gemini CLI: milliseconds): agentctl hook
// ends in 2 s whatever agentd does.
func hookTimeout(agent string) int {
	if agent == AgentGemini {
		return 5000
	}
	return 5
}

var codexNotifyKey = regexp.MustCompile(`(?m)^\s*notify\s*=`)

// codexSetsNotify says whether Codex would run a notify program of the
// person's: given on its command line, or in its config.toml.
func codexSetsNotify(args, env []string) bool {
	for j, a := range args {
		if (a == "-c" || a == "--config") && j+1 < len(args) && strings.HasPrefix(strings.TrimSpace(args[j+1]), "notify") {
			return true
		}
	}
	dir := envValue(env, "CODEX_HOME")
	if dir == "" {
		home := envValue(env, "HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".codex")
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	if err != nil {
		return false
	}
	// The key at the top level only: a notify inside a table is another
	// setting.
	top, _, _ := strings.Cut(string(b), "\n[")
	return codexNotifyKey.MatchString(top)
}

// shellQuote quotes s for sh: the CLIs run a hook's command through a
// shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFileAtomic writes a file of the session's (0600) by rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// hooksFor says which agentctl a session's hooks run ("" for none) and
// why none.
func (m *Manager) hooksFor(agent string, off bool) (string, string) {
	switch {
	case agent == "":
		return "", ""
	case off:
		return "", "spawned with hooks off (spawn --hooks=false, or hooks = false in config.toml)"
	case m.opts.HookCommand == "":
		return "", "agentd found no agentctl beside itself or in PATH to run as the hook"
	}
	return m.opts.HookCommand, ""
}

// HookRequest is one hook call of an agent CLI, as agentctl hook reports
// it: the session it runs in, that session's secret (TokenEnv), the event
// it was registered for and its payload.
type HookRequest struct {
	Name    string
	Token   string
	Event   string
	Payload []byte
}

// HookResult is what a hook did to the session's state.
type HookResult struct {
	Name string `json:"name"`
	// Event is the event as the CLI names it (Codex's notify: its type).
	Event string `json:"event"`
	// State is the session's state after the hook, Changed whether the
	// hook changed it.
	State   string `json:"state"`
	Changed bool   `json:"changed"`
}

// hookParams is a hook on the worker protocol.
type hookParams struct {
	Event   string `json:"event"`
	Payload []byte `json:"payload"`
}

// Hook takes an agent CLI's hook call for session req.Name. Only a process
// that holds the session's secret may report for it: no token, a wrong
// one, or another session's is ErrDenied and nothing changes. A payload
// the session's CLI does not send (not JSON, over
// agentstate.MaxHookPayload, an unknown event) is ErrInvalid, the state
// untouched; a session that runs no agent CLI is ErrInvalidStatus.
func (m *Manager) Hook(ctx context.Context, req HookRequest) (*HookResult, error) {
	if req.Name == "" {
		return nil, errorf(ErrDenied, "a hook came from outside any session (no AGENTD_SESSION): agentctl hook reports only for the agentd session it runs in")
	}
	if err := ValidateName(req.Name); err != nil {
		return nil, err
	}
	if req.Token == "" {
		return nil, errorf(ErrDenied, "a hook for session %q came without the session's token (%s): agentctl hook reports only from inside the session, whose program has it", req.Name, TokenEnv)
	}
	if len(req.Payload) > agentstate.MaxHookPayload {
		return nil, errorf(ErrInvalid, "%v: %d bytes, the limit is %d", agentstate.ErrHookTooLarge, len(req.Payload), agentstate.MaxHookPayload)
	}
	// The secret alone proves it, not the caller's ancestry: a process
	// of one session cannot report for another.
	h, why, err := m.runningHandle(ctx, req.Name, false) // worker.hook says whether the program runs
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errorf(ErrDenied, "hook for session %q refused: %s", req.Name, why)
	}
	if !tokenMatches(h, req.Token) {
		return nil, errorf(ErrDenied, "hook for session %q refused: the token given is not session %q's (%s): agentctl hook reports only for the session it runs in", req.Name, req.Name, TokenEnv)
	}
	return m.hookWorker(ctx, req.Name, hookParams{Event: req.Event, Payload: req.Payload})
}

// hook runs one hook call in the worker: the payload read as the session's
// CLI sends it, the tracker fed, a change of state recorded, and what the
// hook told of the CLI's conversation kept in the manifest.
func (w *worker) hook(ctx context.Context, p hookParams) (*HookResult, error) {
	now := time.Now()
	if err := w.requireRunning("hook"); err != nil {
		return nil, err
	}
	if w.agent == "" {
		return nil, errorf(ErrInvalidStatus, "session %q runs no agent CLI agentd takes hooks from (spawn --agent claude|codex|gemini says which one it is)", w.spec.Name)
	}
	e, err := agentstate.FromHook(w.agent, p.Event, p.Payload)
	if err != nil {
		return nil, errorf(ErrInvalid, "hook %s of session %q: %v", p.Event, w.spec.Name, err)
	}
	side := w.sideThread(ctx, e)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooks.Count++
	w.hooks.Last = now
	if side {
		w.publishLocked()
		s, _, _ := w.tracker.State()
		return &HookResult{Name: w.spec.Name, Event: e.Name, State: string(s)}, nil
	}
	tr, changed := w.tracker.Hook(now, e)
	if changed {
		w.recordStateLocked(tr)
	}
	if id, path, _ := w.tracker.Conversation(); id != w.man.ConversationID || path != w.man.TranscriptPath {
		w.man.ConversationID, w.man.TranscriptPath = id, path
		if err := writeManifest(w.spec.SessionDir, &w.man); err != nil {
			w.log.Error().Err(err).Msg("write manifest")
		}
	}
	if !changed {
		w.publishLocked()
	}
	s, _, _ := w.tracker.State()
	return &HookResult{Name: w.spec.Name, Event: e.Name, State: string(s), Changed: changed}, nil
}

// codexRolloutWait bounds how long a Codex notify of a thread not yet
// known waits for the thread's rollout to reach the disk: Codex writes it
// from a task of its own, and may run the notify program first.
const codexRolloutWait = time.Second

// sideThread says whether a Codex notify comes from a thread that is not
// the session's conversation, before the Tracker has learned which one is:
// Codex titles a conversation in a thread of its own, whose
// agent-turn-complete can come first, mid-turn. The conversation has a
// rollout in Codex's store (looked for up to codexRolloutWait, w.mu not
// held); the title's thread has none.
func (w *worker) sideThread(ctx context.Context, e agentstate.Event) bool {
	if w.agent != agentstate.Codex || e.SessionID == "" {
		return false
	}
	w.mu.Lock()
	known, _, _ := w.tracker.Conversation()
	w.mu.Unlock()
	if known != "" {
		return false // the Tracker drops other ids itself
	}
	home := envValue(w.spec.Env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	store := codexStore(home, w.spec.Env)
	deadline := time.Now().Add(codexRolloutWait)
	for codexRolloutOf(store, e.SessionID) == "" {
		if time.Now().After(deadline) {
			return true
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(25 * time.Millisecond):
		}
	}
	return false
}
