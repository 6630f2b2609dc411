package channel

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChannelStandsAlone keeps the domain out of the daemon's hands: it
// imports nothing of the contract (the daemon converts), the daemon, the
// sessions or the screen.
func TestChannelStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"agentd/pkg/wire", "agentd/internal/rpc", "agentd/pkg/daemon", "agentd/pkg/session", "agentd/pkg/capture"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/channel depends on %s", dep)
			}
		}
	}
}
