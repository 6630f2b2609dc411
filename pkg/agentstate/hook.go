package agentstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxHookPayload bounds a hook's input: the CLIs send a few KiB (a tool's
// input and response can be larger), and agentctl hook reads at most this.
const MaxHookPayload = 1 << 20

// The errors FromHook returns, wrapped with the detail; callers match them
// with errors.Is.
var (
	ErrHookTooLarge    = errors.New("hook payload too large")
	ErrHookNotJSON     = errors.New("hook payload is not a JSON object")
	ErrHookUnknown     = errors.New("unknown hook event")
	ErrHookMismatch    = errors.New("hook payload is for another event")
	ErrHookNoAgent     = errors.New("no agent CLI to take hooks from")
	ErrHookEmptyEvent  = errors.New("hook event name is empty")
	ErrHookUnknownType = errors.New("unknown notify type")
)

// Event is what one hook call tells: the state it implies and the facts
// it carries.
type Event struct {
	Agent Agent `json:"agent"`
	// Name is the event as the CLI names it (PermissionRequest,
	// AfterAgent, agent-turn-complete).
	Name string `json:"name"`
	// State is the state the event implies, Unknown when it implies none
	// (SessionStart, SessionEnd: facts only).
	State State `json:"state"`
	// Detail is what a NeedsApproval or NeedsAttention event is about:
	// the tool and its command or file, a notification's message. It has
	// no choices and no prompt id: only the screen shows those.
	Detail Detail `json:"detail,omitempty"`
	// SessionID and TranscriptPath are the CLI's own conversation id and
	// transcript file (Codex's notify gives the thread id and no path):
	// what resuming the conversation after a reboot needs.
	SessionID      string `json:"session_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	// Ended says the CLI's session ended (SessionEnd).
	Ended bool `json:"ended,omitempty"`
}

// hookPayload is the union of the fields the three CLIs send that this
// package reads; each names its own.
type hookPayload struct {
	HookEventName    string          `json:"hook_event_name"`
	SessionID        string          `json:"session_id"`
	TranscriptPath   *string         `json:"transcript_path"`
	Cwd              string          `json:"cwd"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	Message          string          `json:"message"`
	NotificationType string          `json:"notification_type"`
	Details          json.RawMessage `json:"details"`
	Error            json.RawMessage `json:"error"`
	ErrorDetails     string          `json:"error_details"`
	LastAssistant    string          `json:"last_assistant_message"`
	// Codex's notify program.
	Type     string `json:"type"`
	ThreadID string `json:"thread-id"`
}

// claudeHooks maps Claude Code's hook events to the state each implies.
// Stop fires when a turn ends by itself, not when the person interrupts
// it (Esc at a permission prompt, Ctrl-C): the screen tells those.
var claudeHooks = map[string]State{
	"SessionStart": Unknown, "SessionEnd": Unknown, "Setup": Unknown,
	"UserPromptSubmit": Working, "UserPromptExpansion": Working,
	"PreToolUse": Working, "PostToolUse": Working, "PostToolUseFailure": Working, "PostToolBatch": Working,
	"PermissionDenied": Working, "SubagentStart": Working, "SubagentStop": Unknown,
	"PreCompact": Working, "PostCompact": Unknown,
	"PermissionRequest": NeedsApproval, "Elicitation": NeedsApproval, "ElicitationResult": Working,
	"Notification": Unknown, // by its notification_type
	"Stop":         Waiting, "StopFailure": NeedsAttention,
	"TeammateIdle": Unknown, "TaskCreated": Unknown, "TaskCompleted": Unknown,
	"ConfigChange": Unknown, "InstructionsLoaded": Unknown, "CwdChanged": Unknown, "FileChanged": Unknown,
	"WorktreeCreate": Unknown, "WorktreeRemove": Unknown, "DirectoryAdded": Unknown,
	"PreModelSwitch": Unknown, "PostModelSwitch": Unknown, "MessageDisplay": Unknown,
}

// codexHooks maps Codex's hooks (hooks.json, features.codex_hooks) and
// its notify program's types to states.
var codexHooks = map[string]State{
	"SessionStart": Unknown, "SessionEnd": Unknown,
	"UserPromptSubmit": Working, "PreToolUse": Working, "PostToolUse": Working,
	"PreCompact": Working, "PostCompact": Unknown, "SubagentStart": Working, "SubagentStop": Unknown,
	"PermissionRequest": NeedsApproval, "Stop": Waiting,
	"agent-turn-complete": Waiting, "approval-requested": NeedsApproval,
}

// geminiHooks maps Gemini CLI's hook events to states.
var geminiHooks = map[string]State{
	"SessionStart": Unknown, "SessionEnd": Unknown,
	"BeforeAgent": Working, "BeforeModel": Working, "AfterModel": Working, "BeforeToolSelection": Working,
	"BeforeTool": Working, "AfterTool": Working, "PreCompress": Working,
	"AfterAgent":   Waiting,
	"Notification": Unknown, // by its notification_type
}

// FromHook reads one hook call of agent's: event is the name the hook was
// registered under (agentctl hook EVENT; "notify" for Codex's notify
// program, whose payload's type names the event), payload the JSON the
// CLI gave it. A payload over MaxHookPayload, one that is not a JSON
// object, an event the CLI does not have, or a payload whose
// hook_event_name names another event is refused with an error that
// wraps ErrHookTooLarge, ErrHookNotJSON, ErrHookUnknown or
// ErrHookMismatch.
func FromHook(agent Agent, event string, payload []byte) (Event, error) {
	if len(payload) > MaxHookPayload {
		return Event{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrHookTooLarge, len(payload), MaxHookPayload)
	}
	var table map[string]State
	switch agent {
	case Claude:
		table = claudeHooks
	case Codex:
		table = codexHooks
	case Gemini:
		table = geminiHooks
	default:
		return Event{}, fmt.Errorf("%w: the session runs %q; spawn it with --agent claude, codex or gemini", ErrHookNoAgent, agent)
	}
	if strings.TrimSpace(event) == "" {
		return Event{}, fmt.Errorf("%w: pass the event the hook is registered for (agentctl hook EVENT)", ErrHookEmptyEvent)
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, fmt.Errorf("%w: the hook's stdin must be the JSON the CLI gives it (%s)", ErrHookNotJSON, preview(trimmed))
	}
	var p hookPayload
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrHookNotJSON, err)
	}
	name := event
	if agent == Codex && (event == "notify" || event == "Notify") {
		if p.Type == "" {
			return Event{}, fmt.Errorf("%w: Codex's notify payload has no type", ErrHookUnknownType)
		}
		name = p.Type
	}
	st, ok := table[name]
	if !ok {
		return Event{}, fmt.Errorf("%w %q for %s: known events are %s", ErrHookUnknown, name, agent, strings.Join(sortedKeys(table), ", "))
	}
	if p.HookEventName != "" && p.HookEventName != name {
		return Event{}, fmt.Errorf("%w: registered as %s, the payload says %s", ErrHookMismatch, name, p.HookEventName)
	}
	e := Event{Agent: agent, Name: name, State: st, SessionID: p.SessionID, Cwd: p.Cwd}
	if p.TranscriptPath != nil {
		e.TranscriptPath = *p.TranscriptPath
	}
	if e.SessionID == "" {
		e.SessionID = p.ThreadID
	}
	switch name {
	case "SessionEnd":
		e.Ended = true
	case "PermissionRequest", "approval-requested":
		e.Detail = Detail{Kind: KindPermission, Tool: p.ToolName, Subject: toolSubject(p.ToolInput)}
		if p.ToolName == "AskUserQuestion" {
			// Claude Code asks the model's question through its
			// permission flow.
			e.Detail = Detail{Kind: KindQuestion, Tool: p.ToolName, Subject: askedQuestions(p.ToolInput)}
		}
	case "Elicitation":
		e.Detail = Detail{Kind: KindQuestion, Message: p.Message}
	case "StopFailure":
		// error is a code (authentication_failed, rate_limit, …), the
		// last assistant message the banner the person sees.
		code := errorText(p.Error)
		e.Detail = Detail{Kind: KindError, Message: firstNonEmpty(p.LastAssistant, p.ErrorDetails, code)}
		if strings.Contains(code, "limit") || strings.Contains(code, "quota") || strings.Contains(code, "billing") ||
			claudeLimit.MatchString(e.Detail.Message) {
			e.Detail.Kind = KindUsageLimit
		}
	case "Notification":
		e.State, e.Detail = notification(agent, p)
	}
	return e, nil
}

// notification reads a Notification hook by its type: Claude Code's
// permission_prompt, idle_prompt, elicitation_dialog, auth_success;
// Gemini CLI's ToolPermission.
func notification(agent Agent, p hookPayload) (State, Detail) {
	switch p.NotificationType {
	case "permission_prompt", "ToolPermission":
		d := Detail{Kind: KindPermission, Message: p.Message}
		if agent == Gemini && len(p.Details) > 0 {
			var det struct {
				Type    string `json:"type"`
				Title   string `json:"title"`
				Command string `json:"command"`
				RootCmd string `json:"rootCommand"`
				File    string `json:"fileName"`
				URL     string `json:"url"`
			}
			if json.Unmarshal(p.Details, &det) == nil {
				d.Tool = firstNonEmpty(det.Title, det.Type)
				d.Subject = firstNonEmpty(det.Command, det.File, det.URL, det.RootCmd)
			}
		}
		return NeedsApproval, d
	case "elicitation_dialog":
		return NeedsApproval, Detail{Kind: KindQuestion, Message: p.Message}
	case "idle_prompt":
		return Waiting, Detail{}
	}
	return Unknown, Detail{}
}

// toolSubject is what a tool call acts on: the command, the file, the URL
// or the pattern, from the tool's input as the three CLIs name them.
func toolSubject(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd", "file_path", "path", "url", "pattern", "query"} {
		switch v := in[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case []any:
			var parts []string
			for _, x := range v {
				parts = append(parts, fmt.Sprint(x))
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}

// askedQuestions is the text of AskUserQuestion's questions.
func askedQuestions(raw json.RawMessage) string {
	var in struct {
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	var qs []string
	for _, q := range in.Questions {
		qs = append(qs, q.Question)
	}
	return strings.Join(qs, " ")
}

func errorText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// preview is the start of a bad payload, for an error message.
func preview(b []byte) string {
	if len(b) == 0 {
		return "it is empty"
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return fmt.Sprintf("it starts %q", b)
}

func sortedKeys(m map[string]State) []string {
	return slices.Sorted(maps.Keys(m))
}
