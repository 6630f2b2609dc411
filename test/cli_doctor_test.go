package test

import (
	"encoding/json"
	"os"
	"os/exec"
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

// TestCLIDoctorChecksXvnc: doctor says whether Xvnc is installed, naming
// its package, and whether the config's desktop_server can work: xvnc
// without Xvnc fails with the fix, auto with Xvnc alone needs no Xvfb, and
// with desktops off what is missing is skipped, not failed.
func TestCLIDoctorChecksXvnc(t *testing.T) {
	t.Parallel()
	xvnc, err := exec.LookPath("Xvnc")
	if err != nil {
		t.Skip("Xvnc is not installed")
	}
	// A PATH with agentctl and agentd and, in withXvnc, Xvnc alone: no
	// Xvfb, and no Xvnc in bin.dir.
	withXvnc := t.TempDir()
	if err := os.Symlink(xvnc, filepath.Join(withXvnc, "Xvnc")); err != nil {
		t.Fatal(err)
	}
	type check struct{ Status, Detail, Fix string }
	for _, tc := range []struct {
		name, config, path string
		want               map[string]string // check name: its status
		wantText           map[string]string // check name: a phrase of its detail or fix
	}{
		{"xvnc configured, not installed", "desktops = true\ndesktop_server = \"xvnc\"\n", bin.dir,
			map[string]string{"desktop vnc": "fail", "desktop server": "skipped"},
			map[string]string{"desktop vnc": "apt install tigervnc-standalone-server", "desktop server": "not needed"}},
		{"auto, neither installed", "desktops = true\n", bin.dir,
			map[string]string{"desktop vnc": "skipped", "desktop server": "fail"},
			map[string]string{"desktop vnc": "tigervnc-standalone-server", "desktop server": "apt install xvfb"}},
		{"auto, Xvnc alone", "desktops = true\n", bin.dir + ":" + withXvnc,
			map[string]string{"desktop vnc": "pass", "desktop server": "skipped"},
			map[string]string{"desktop vnc": filepath.Join(withXvnc, "Xvnc"), "desktop server": "desktops use Xvnc"}},
		{"xvfb configured, Xvnc alone", "desktops = true\ndesktop_server = \"xvfb\"\n", bin.dir + ":" + withXvnc,
			map[string]string{"desktop vnc": "pass", "desktop server": "fail"},
			map[string]string{"desktop vnc": "desktops use Xvfb unless", "desktop server": `desktop_server = "xvfb"`}},
		{"desktops off, neither installed", "", bin.dir,
			map[string]string{"desktop vnc": "skipped", "desktop server": "skipped"},
			map[string]string{"desktop server": "set desktops = true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHome(t)
			if tc.config != "" {
				os.MkdirAll(filepath.Join(h.config, "agentd"), 0o700)
				if err := os.WriteFile(filepath.Join(h.config, "agentd", "config.toml"), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"doctor", "--json"}
			out, errOut, _ := h.agentctlAt(t.TempDir(), []string{"PATH=" + tc.path}, args...)
			var r struct {
				Checks []struct{ Name, Status, Detail, Fix string }
			}
			if err := json.Unmarshal(oneEnvelope(t, args, out).Result, &r); err != nil {
				t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
			}
			got := map[string]check{}
			for _, c := range r.Checks {
				got[c.Name] = check{c.Status, c.Detail, c.Fix}
			}
			for name, status := range tc.want {
				c := got[name]
				if c.Status != status || !strings.Contains(c.Detail+" fix: "+c.Fix, tc.wantText[name]) {
					t.Errorf("%s check: %+v; want %s, saying %q", name, c, status, tc.wantText[name])
				}
				if c.Status == "fail" && c.Fix == "" {
					t.Errorf("%s check failed without a fix: %+v", name, c)
				}
			}
		})
	}
}
