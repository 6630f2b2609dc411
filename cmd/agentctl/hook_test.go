package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHookNeverFailsInTheCLIsEyes: whatever its command line, agentctl
// hook exits 0 and prints nothing on stdout ({} for Gemini CLI), saying on
// stderr what went wrong: a hook's status and output are decisions to the
// agent CLI that runs it.
func TestHookNeverFailsInTheCLIsEyes(t *testing.T) {
	t.Setenv("AGENTD_SESSION", "")
	for _, tc := range []struct {
		args      []string
		stdout    string
		stderrHas string
	}{
		{[]string{"hook"}, "", "no event"},
		{[]string{"hook", "--bogus", "Stop"}, "", "unknown flag --bogus"},
		{[]string{"hook", "--agent", "cursor", "Stop"}, "", `--agent "cursor" is not an agent CLI`},
		{[]string{"hook", "--agent", "claude", "Stop"}, "", "not inside an agentd session"},
		{[]string{"--json", "--socket", "/nowhere.sock", "hook", "--agent=gemini", "AfterAgent"}, "{}\n", "not inside an agentd session"},
		{[]string{"hook", "--agent", "codex", "notify", `{"type":"agent-turn-complete"}`}, "", "not inside an agentd session"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(`{"hook_event_name":"Stop"}`), &out, &errb)
		if code != 0 || out.String() != tc.stdout || !strings.Contains(errb.String(), tc.stderrHas) {
			t.Errorf("agentctl %q: exit %d, stdout %q, stderr %q; want 0, %q, and %q", tc.args, code, out.String(), errb.String(), tc.stdout, tc.stderrHas)
		}
	}
}

// TestHookArgsTakeCodexsPayloadArgument: Codex's notify program gets the
// event's JSON as its last argument, and stdin is then not read.
func TestHookArgsTakeCodexsPayloadArgument(t *testing.T) {
	t.Parallel()
	h, err := parseHookArgs([]string{"--socket", "/s.sock", "hook", "--agent", "codex", "notify", `{"type":"agent-turn-complete"}`})
	if err != nil || h.socket != "/s.sock" || h.agent != "codex" || h.event != "notify" || h.payload == nil || *h.payload != `{"type":"agent-turn-complete"}` {
		t.Fatalf("parseHookArgs = %+v, %v", h, err)
	}
	h, err = parseHookArgs([]string{"hook", "Stop"})
	if err != nil || h.event != "Stop" || h.payload != nil {
		t.Fatalf("parseHookArgs(hook Stop) = %+v, %v", h, err)
	}
	if !hookWanted([]string{"--json", "hook", "Stop"}) || hookWanted([]string{"hook", "--help"}) || hookWanted([]string{"spawn", "hook"}) {
		t.Error("hookWanted: hook runs outside the command tree, its help inside")
	}
}
