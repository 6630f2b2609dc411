package view

import (
	"os/exec"
	"strings"
	"testing"
)

// TestViewStandsAlone keeps the view out of the daemon's internals: it
// sees sessions only through Sessions, rows as the contract's.
func TestViewStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"agentd/pkg/daemon", "agentd/pkg/session", "agentd/pkg/capture"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/view depends on %s", dep)
			}
		}
	}
}
