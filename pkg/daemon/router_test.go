package daemon

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestEveryContractMethodIsRouted ties the route table to wire.Methods: a
// method the contract names but the daemon does not serve, or a route the
// contract does not name, fails here rather than in a client.
func TestEveryContractMethodIsRouted(t *testing.T) {
	d := New(Config{SocketPath: filepath.Join(t.TempDir(), "s.sock"), StateDir: filepath.Join(t.TempDir(), "state")})
	served := d.router.methods()
	for _, m := range wire.Methods {
		if !slices.Contains(served, m) {
			t.Errorf("wire.Methods lists %s, but the daemon has no route for it", m)
		}
	}
	for _, m := range served {
		if !slices.Contains(wire.Methods, m) {
			t.Errorf("the daemon routes %s, but wire.Methods does not list it", m)
		}
	}
	seen := map[string]bool{}
	for _, m := range wire.Methods {
		if seen[m] {
			t.Errorf("wire.Methods lists %s twice", m)
		}
		seen[m] = true
	}
}
