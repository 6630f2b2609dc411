package notify

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingOfAgentdButErrkind keeps the transport apart from what
// it serves: no session, daemon or wire code reaches it, so the daemon
// decides what a notification means.
func TestImportsNothingOfAgentdButErrkind(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/agentd/agentd/") &&
			dep != "github.com/agentd/agentd/internal/notify" && dep != "github.com/agentd/agentd/internal/errkind" {
			t.Errorf("internal/notify depends on %s", dep)
		}
	}
}
