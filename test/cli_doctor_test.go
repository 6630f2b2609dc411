package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIDoctorTakesAnMCPServerWithoutTheBridgeAsASetup: a project whose
// .mcp.json runs agentctl mcp (the README's Models section) and not the
// channel bridge is a setup of its own, not a failure; a command path that
// does not exist is said to be missing, not off $PATH.
func TestCLIDoctorTakesAnMCPServerWithoutTheBridgeAsASetup(t *testing.T) {
	t.Parallel()
	h := newHome(t) // the daemon check fails; the .mcp.json checks need none
	checks := func(mcpJSON string) map[string]struct{ Status, Detail, Fix string } {
		t.Helper()
		project := t.TempDir()
		os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(mcpJSON), 0o600)
		args := []string{"doctor", "--json"}
		out, _, _ := h.agentctlAt(project, []string{"PATH=" + bin.dir + ":" + os.Getenv("PATH")}, args...)
		var r struct {
			Checks []struct{ Name, Status, Detail, Fix string }
		}
		json.Unmarshal(oneEnvelope(t, args, out).Result, &r)
		got := map[string]struct{ Status, Detail, Fix string }{}
		for _, c := range r.Checks {
			got[c.Name] = struct{ Status, Detail, Fix string }{c.Status, c.Detail, c.Fix}
		}
		return got
	}

	got := checks(`{"mcpServers":{"agentd":{"command":"agentctl","args":["mcp"]}}}`)
	if c := got["claude code bridge"]; c.Status != "skipped" || !strings.Contains(c.Detail, "agentctl mcp") {
		t.Errorf("bridge check with only agentctl mcp: %+v; want skipped, saying why", c)
	}
	if c := got["mcp server"]; c.Status != "pass" || !strings.Contains(c.Detail, filepath.Join(bin.dir, "agentctl")+" mcp") {
		t.Errorf("mcp server check: %+v; want pass naming %s", c, filepath.Join(bin.dir, "agentctl"))
	}

	got = checks(`{"mcpServers":{"agentd":{"command":"/nonexistent/agentctl","args":["channel","mcp"]}}}`)
	if c := got["claude code bridge"]; c.Status != "fail" || !strings.Contains(c.Detail, "/nonexistent/agentctl, which does not exist") || strings.Contains(c.Detail, "$PATH") || c.Fix == "" {
		t.Errorf("bridge check with a missing command: %+v; want fail saying the file does not exist, with a fix", c)
	}
	got = checks(`{"mcpServers":{"agentd":{"command":"/nonexistent/agentctl","args":["mcp"]}}}`)
	if c := got["mcp server"]; c.Status != "fail" || !strings.Contains(c.Detail, "does not exist") {
		t.Errorf("mcp server check with a missing command: %+v; want fail saying the file does not exist", c)
	}
}
