package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestSpawnRefusesAnUnknownRestartPolicy: a restart policy none of
// no, on-reboot and always is the caller's mistake, named with the three.
func TestSpawnRefusesAnUnknownRestartPolicy(t *testing.T) {
	c := nullDaemon(t)
	_, err := c.Spawn(context.Background(), wire.SpawnParams{Name: "w1", Argv: []string{"cat"}, Restart: "sometimes"})
	if !errors.Is(err, wire.ErrInvalidParams) || !strings.Contains(err.Error(), "no, on-reboot or always") {
		t.Fatalf("spawn with restart sometimes: %v; want invalid_params naming the policies", err)
	}
	for _, p := range wire.RestartPolicies {
		if _, err := c.Spawn(context.Background(), wire.SpawnParams{Name: "w1", Argv: []string{"cat"}, Restart: p}); err != nil {
			t.Errorf("spawn with restart %s: %v", p, err)
		}
	}
	if _, err := c.Restart(context.Background(), wire.RestartParams{Name: "w1", Force: true}); err != nil {
		t.Errorf("restart: %v", err)
	}
}
