package rfbproxy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProxyStandsAlone keeps the proxy free of agentd.
func TestProxyStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/agentd/agentd/") && dep != "github.com/agentd/agentd/internal/rfbproxy" {
			t.Errorf("internal/rfbproxy depends on %s", dep)
		}
	}
}
