package mcpserver

import (
	"strings"
	"testing"
)

// TestSessionAddresses: agentd://sessions/NAME names a session; anything
// else is refused with the addresses that are served.
func TestSessionAddresses(t *testing.T) {
	if name, err := sessionOf("agentd://sessions/fix-1.2_a"); err != nil || name != "fix-1.2_a" {
		t.Errorf("a session's address: %q, %v", name, err)
	}
	for _, bad := range []string{"agentd://nope", "agentd://sessions/", "agentd://sessions/a b", "agentd://sessions/../x", "file:///etc/passwd", ""} {
		if _, err := sessionOf(bad); err == nil || !strings.Contains(err.Error(), "agentd://sessions or agentd://sessions/NAME") {
			t.Errorf("%q: %v, want a refusal naming the addresses", bad, err)
		}
	}
}
