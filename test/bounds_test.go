package test

import (
	"strings"
	"testing"
)

// TestMaxSessionsIsConfiguredAndNamed: max_sessions in the config bounds
// the live sessions, and the spawn past it is refused busy with an error
// naming the limit and the key.
func TestMaxSessionsIsConfiguredAndNamed(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("max_sessions = 2\n")
	h.startDaemon(nil)
	h.ctl(0, "spawn", "one", "--", "sleep", "60")
	h.ctl(0, "spawn", "two", "--", "sleep", "60")
	_, errOut, code := h.agentctl("", "spawn", "three", "--", "sleep", "60")
	if code == 0 {
		t.Fatalf("a third spawn past max_sessions = 2 succeeded")
	}
	if !strings.Contains(errOut, "busy") && !strings.Contains(errOut, "2 sessions") {
		t.Errorf("the refusal %q is not busy", errOut)
	}
	if !strings.Contains(errOut, "max_sessions") || !strings.Contains(errOut, "2 sessions") {
		t.Errorf("the refusal %q does not name the limit (2) and the key (max_sessions)", errOut)
	}
	// The daemon stays up and the sessions are untouched.
	if out := h.ctl(0, "list"); !strings.Contains(out, "one") || !strings.Contains(out, "two") || strings.Contains(out, "three") {
		t.Errorf("list after the refusal:\n%s", out)
	}
}
