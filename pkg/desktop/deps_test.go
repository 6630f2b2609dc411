package desktop

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDesktopStandsAlone keeps the domain out of the daemon's hands: it
// imports nothing of the contract, the daemon, the sessions or the screen.
func TestDesktopStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"agentd/pkg/wire", "agentd/internal/rpc", "agentd/pkg/daemon", "agentd/pkg/session", "agentd/pkg/capture"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/desktop depends on %s", dep)
			}
		}
	}
}
