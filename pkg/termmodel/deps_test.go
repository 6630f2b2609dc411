package termmodel

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeafPackages keeps the terminal model and the event log leaves: they
// import nothing of agentd, so whatever reads a screen or a log (the worker,
// the daemon, a test replaying a recorded stream) can use them alone.
func TestLeafPackages(t *testing.T) {
	for _, pkg := range []string{".", "../eventlog"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/agentd/agentd/") && !strings.HasSuffix(dep, "/termmodel") && !strings.HasSuffix(dep, "/eventlog") {
				t.Errorf("go list -deps %s: depends on %s", pkg, dep)
			}
		}
	}
}
