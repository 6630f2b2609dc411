package agentstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFromHookRealPayloads reads every hook input captured from the real
// CLIs (testdata/hooks/CLI-SIZE-NN-EVENT.json): each is understood, implies
// the state its event stands for, and keeps the CLI's session id (and,
// where the CLI gives one, its transcript path).
func TestFromHookRealPayloads(t *testing.T) {
	files, _ := filepath.Glob("testdata/hooks/*.json")
	if len(files) == 0 {
		t.Fatal("no hook payloads in testdata/hooks: run test/agentstate_capture_test.go with AGENTSTATE_CAPTURE")
	}
	want := map[string]State{
		"SessionStart": Unknown, "SessionEnd": Unknown, "UserPromptSubmit": Working, "PreToolUse": Working,
		"PostToolUse": Working, "PermissionRequest": NeedsApproval, "Stop": Waiting, "StopFailure": NeedsAttention,
		"BeforeAgent": Working, "AfterAgent": Waiting, "BeforeTool": Working, "AfterTool": Working,
		"notify": Waiting, // Codex notifies agent-turn-complete
	}
	agents := map[Agent]int{}
	for _, f := range files {
		parts := strings.SplitN(strings.TrimSuffix(filepath.Base(f), ".json"), "-", 4)
		if len(parts) != 4 {
			t.Fatalf("%s: want CLI-SIZE-NN-EVENT.json", f)
		}
		agent, event := Agent(parts[0]), parts[3]
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		e, err := FromHook(agent, event, b)
		if err != nil {
			t.Errorf("FromHook(%s, %s, %s): %v", agent, event, f, err)
			continue
		}
		agents[agent]++
		if w, ok := want[event]; ok && e.State != w {
			t.Errorf("%s: state %s, want %s", f, e.State, w)
		}
		if event == "Notification" && e.State != NeedsApproval && e.State != Waiting && e.State != Unknown {
			t.Errorf("%s: a notification gave %s", f, e.State)
		}
		if e.SessionID == "" {
			t.Errorf("%s: no session id in %+v", f, e)
		}
		if agent != Codex && e.TranscriptPath == "" {
			t.Errorf("%s: no transcript path in %+v", f, e)
		}
		if e.State == NeedsAttention && e.Detail.Message == "" {
			t.Errorf("%s: %s without the banner's text: %+v", f, e.State, e.Detail)
		}
		if e.State == NeedsApproval && (e.Detail.Subject == "" && e.Detail.Message == "") {
			t.Errorf("%s: %s without what is asked: %+v", f, e.State, e.Detail)
		}
	}
	t.Logf("payloads read per agent: %v", agents)
}

// TestFromHookRefusesBadInput: a payload that is not JSON, too large, for
// an unknown event, for another event than registered, or for a session
// that runs no agent is refused with the sentinel that names the problem.
func TestFromHookRefusesBadInput(t *testing.T) {
	t.Parallel()
	huge := []byte(`{"session_id":"` + strings.Repeat("x", MaxHookPayload) + `"}`)
	for _, tc := range []struct {
		agent   Agent
		event   string
		payload string
		want    error
	}{
		{Claude, "Stop", "not json", ErrHookNotJSON},
		{Claude, "Stop", "", ErrHookNotJSON},
		{Claude, "Stop", `["a"]`, ErrHookNotJSON},
		{Claude, "Stop", `{"session_id": 3`, ErrHookNotJSON},
		{Claude, "Stop", string(huge), ErrHookTooLarge},
		{Claude, "BeforeTool", `{}`, ErrHookUnknown},
		{Gemini, "Stop", `{}`, ErrHookUnknown},
		{Codex, "notify", `{"type":"something-new"}`, ErrHookUnknown},
		{Codex, "notify", `{"thread-id":"t"}`, ErrHookUnknownType},
		{Claude, "Stop", `{"hook_event_name":"PreToolUse"}`, ErrHookMismatch},
		{None, "Stop", `{}`, ErrHookNoAgent},
		{Claude, " ", `{}`, ErrHookEmptyEvent},
	} {
		_, err := FromHook(tc.agent, tc.event, []byte(tc.payload))
		if !errors.Is(err, tc.want) {
			p := tc.payload
			if len(p) > 40 {
				p = p[:40] + "…"
			}
			t.Errorf("FromHook(%s, %q, %q): got %v, want %v", tc.agent, tc.event, p, err, tc.want)
		}
	}
}

// TestFromHookReadsWhatIsAsked: the facts beyond the state, from payloads
// in the shapes the CLIs document.
func TestFromHookReadsWhatIsAsked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent   Agent
		event   string
		payload string
		want    Event
	}{
		{Claude, "Notification", `{"session_id":"s","transcript_path":"/t.jsonl","hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`,
			Event{Agent: Claude, Name: "Notification", State: NeedsApproval, SessionID: "s", TranscriptPath: "/t.jsonl",
				Detail: Detail{Kind: KindPermission, Message: "Claude needs your permission to use Bash"}}},
		{Claude, "Notification", `{"session_id":"s","hook_event_name":"Notification","message":"Claude is waiting for your input","notification_type":"idle_prompt"}`,
			Event{Agent: Claude, Name: "Notification", State: Waiting, SessionID: "s"}},
		{Claude, "StopFailure", `{"session_id":"s","hook_event_name":"StopFailure","error":"rate_limit","error_details":"429 usage limit reached"}`,
			Event{Agent: Claude, Name: "StopFailure", State: NeedsAttention, SessionID: "s", Detail: Detail{Kind: KindUsageLimit, Message: "429 usage limit reached"}}},
		{Claude, "PermissionRequest", `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Edit","tool_input":{"file_path":"/p/a.go","old_string":"x"}}`,
			Event{Agent: Claude, Name: "PermissionRequest", State: NeedsApproval, SessionID: "s", Detail: Detail{Kind: KindPermission, Tool: "Edit", Subject: "/p/a.go"}}},
		{Claude, "SessionEnd", `{"session_id":"s","hook_event_name":"SessionEnd","reason":"exit"}`,
			Event{Agent: Claude, Name: "SessionEnd", State: Unknown, SessionID: "s", Ended: true}},
		{Codex, "notify", `{"type":"agent-turn-complete","thread-id":"019a","turn-id":"1","cwd":"/p","input-messages":["hi"],"last-assistant-message":"done"}`,
			Event{Agent: Codex, Name: "agent-turn-complete", State: Waiting, SessionID: "019a", Cwd: "/p"}},
		{Codex, "PermissionRequest", `{"session_id":"019a","transcript_path":null,"cwd":"/p","hook_event_name":"PermissionRequest","model":"m","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"touch a"},"turn_id":"1"}`,
			Event{Agent: Codex, Name: "PermissionRequest", State: NeedsApproval, SessionID: "019a", Cwd: "/p", Detail: Detail{Kind: KindPermission, Tool: "Bash", Subject: "touch a"}}},
		{Gemini, "Notification", `{"session_id":"g","transcript_path":"/g.json","hook_event_name":"Notification","notification_type":"ToolPermission","message":"Tool run_shell_command requires editing","details":{"type":"exec","title":"Confirm Shell Command","command":"touch a","rootCommand":"touch"}}`,
			Event{Agent: Gemini, Name: "Notification", State: NeedsApproval, SessionID: "g", TranscriptPath: "/g.json",
				Detail: Detail{Kind: KindPermission, Tool: "Confirm Shell Command", Subject: "touch a", Message: "Tool run_shell_command requires editing"}}},
		{Gemini, "AfterAgent", `{"session_id":"g","transcript_path":"/g.json","hook_event_name":"AfterAgent","prompt":"p","prompt_response":"r"}`,
			Event{Agent: Gemini, Name: "AfterAgent", State: Waiting, SessionID: "g", TranscriptPath: "/g.json"}},
	} {
		got, err := FromHook(tc.agent, tc.event, []byte(tc.payload))
		if err != nil {
			t.Errorf("FromHook(%s, %s, %s): %v", tc.agent, tc.event, tc.payload, err)
			continue
		}
		if !equalEvent(got, tc.want) {
			t.Errorf("FromHook(%s, %s, %s):\n got %+v\nwant %+v", tc.agent, tc.event, tc.payload, got, tc.want)
		}
	}
}

func equalEvent(a, b Event) bool {
	return a.Agent == b.Agent && a.Name == b.Name && a.State == b.State && a.SessionID == b.SessionID &&
		a.TranscriptPath == b.TranscriptPath && a.Cwd == b.Cwd && a.Ended == b.Ended &&
		a.Detail.Kind == b.Detail.Kind && a.Detail.Tool == b.Detail.Tool && a.Detail.Subject == b.Detail.Subject && a.Detail.Message == b.Detail.Message
}
