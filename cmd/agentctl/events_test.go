package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func TestEventsTableRowsSayWhatChanged(t *testing.T) {
	var b strings.Builder
	tw := &changeTable{w: &b}
	code := 3
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.Local)
	tw.row(wire.StateChange{Name: "fix", Kind: wire.ChangeState, TS: ts, State: wire.StateNeedsApproval, Prev: wire.StateWorking,
		Detail: &wire.StateDetail{Kind: "permission", Tool: "Bash command", Subject: "rm -rf build\x1b[2J", PromptID: "3f9c"}})
	tw.row(wire.StateChange{Name: "fix", Kind: wire.ChangeState, TS: ts, State: wire.StateWaiting, Prev: wire.StateWorking, TurnMS: 65_400})
	tw.row(wire.StateChange{Name: "fix", Kind: wire.ChangeExited, TS: ts, Termination: "nonzero_exit", ExitCode: &code})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("table:\n%s\nwant a header and three rows", b.String())
	}
	for i, want := range [][]string{
		{"fix", "state", "needs_approval", "permission: Bash command: rm -rf build", "prompt 3f9c; was working"},
		{"waiting", "was working; turn 1m5.4s"},
		{"exited", "nonzero_exit; exit 3"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[1+i], w) {
				t.Errorf("row %q lacks %q", lines[1+i], w)
			}
		}
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("a control character from the screen reached the terminal: %q", b.String())
	}
}
