package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPRestart: the restart tool starts an ended session's program again
// and refuses a running one unless force, as `agentctl restart` does; its
// refusal names the tools that fix it, never a command the model cannot
// run; a read-only server refuses it as disabled and leaves the session
// alone.
func TestMCPRestart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "r1", "--", "sh")
	m := h.startMCP(t, true)
	first, _ := m.ok("status", map[string]any{"name": "r1"})

	// Running: refused, where the CLI refuses too, and the session untouched.
	_, cliErr, code := h.agentctl("", "restart", "r1")
	if code == 0 || !strings.Contains(cliErr, "running") {
		t.Fatalf("agentctl restart of a running session: exit %d %q, want a refusal", code, cliErr)
	}
	sc := m.refused("restart", map[string]any{"name": "r1"}, "invalid_status", "running", `the stop tool (name "r1")`, `the restart tool (name "r1", force true)`)
	if strings.Contains(sc["reason"].(string), "agentctl") {
		t.Errorf("restart's refusal %q tells the model to run agentctl", sc["reason"])
	}
	if now, _ := m.ok("status", map[string]any{"name": "r1"}); now["program_pid"] != first["program_pid"] || now["status"] != "running" {
		t.Errorf("after a refused restart: %v, want r1 running as pid %v", now, first["program_pid"])
	}

	// force stops and starts it again.
	sc, res := m.ok("restart", map[string]any{"name": "r1", "force": true})
	if sc["status"] != "running" || sc["restarts"] != 1.0 || sc["program_pid"] == first["program_pid"] {
		t.Errorf("restart force: %v, want r1 running again as a new pid, restart 1", sc)
	}
	if !strings.Contains(text(res), "r1 running") || !strings.Contains(text(res), "restart 1") {
		t.Errorf("restart's text %q", text(res))
	}

	// Ended: restarted without force.
	m.ok("stop", map[string]any{"name": "r1"})
	// The stopped worker unlinks its socket as it goes; a restart before
	// that loses the new worker's socket to it (pkg/session's race, which
	// `agentctl restart` right after `agentctl stop` meets as well).
	sock := filepath.Join(h.runtime, "agentd", "sessions", "r1.sock")
	await(t, 10*time.Second, "the stopped worker's socket gone", func() bool {
		_, err := os.Stat(sock)
		return os.IsNotExist(err)
	})
	sc, _ = m.ok("restart", map[string]any{"name": "r1"})
	if sc["status"] != "running" || sc["restarts"] != 2.0 {
		t.Errorf("restart of a stopped session: %v, want running, restart 2", sc)
	}
	m.ok("send", map[string]any{"name": "r1", "text": "echo back-$((6*7))\n"})
	m.ok("wait", map[string]any{"name": "r1", "text": "back-42", "timeout_ms": 10000})

	// A session that does not exist, and arguments that do not fit.
	m.refused("restart", map[string]any{"name": "nobody"}, "agent_not_found", "nobody", "the list tool shows the sessions")
	m.badArgs("restart", map[string]any{"name": "r1", "force": "yes"}, "force must be true or false")
	m.badArgs("restart", map[string]any{"name": "Not A Name"}, "name")
	m.badArgs("restart", map[string]any{}, `needs the argument "name"`)

	// Read-only: disabled, and nothing restarted.
	before, _ := m.ok("status", map[string]any{"name": "r1"})
	h.startMCP(t, false).refused("restart", map[string]any{"name": "r1", "force": true}, "disabled", "--yes", "agentctl mcp --yes")
	if after, _ := m.ok("status", map[string]any{"name": "r1"}); after["program_pid"] != before["program_pid"] || after["restarts"] != before["restarts"] {
		t.Errorf("a read-only server's restart changed r1: %v, then %v", before, after)
	}
}
