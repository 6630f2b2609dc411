package ttyready

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibraryAndUnix keeps the package a leaf: the
// standard library and golang.org/x/sys/unix, nothing else.
func TestImportsOnlyTheStandardLibraryAndUnix(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/agentd/agentd/internal/ttyready" && dep != "golang.org/x/sys/unix" {
			t.Errorf("internal/ttyready depends on %s", dep)
		}
	}
}
