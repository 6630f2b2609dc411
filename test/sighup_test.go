package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPReloadsTheConfig: a SIGHUP (closing the terminal of a foreground
// agentd, or systemctl --user reload agentd) reloads the config and logs
// it, and the daemon keeps serving. The config is a symlink into another
// directory, as dotfile managers make it, and the edit is made there, where
// the daemon's watch on its config directory cannot see it: only the
// signal can bring it in.
func TestSIGHUPReloadsTheConfig(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	dots := t.TempDir()
	target := filepath.Join(dots, "agentd.toml")
	if err := os.WriteFile(target, []byte("allow_act = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.config, "agentd")
	os.MkdirAll(dir, 0o700)
	if err := os.Symlink(target, filepath.Join(dir, "config.toml")); err != nil {
		t.Fatal(err)
	}
	d := h.startDaemon(nil)
	batch := `[{"kind":"move","x":1,"y":1}]`
	if _, errOut, code := h.agentctl("", "act", batch); code != 22 {
		t.Fatalf("act with consent off: exit %d %q, want 22", code, errOut)
	}
	if err := os.WriteFile(target, []byte("allow_act = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "the reload on SIGHUP logged", func() bool {
		return strings.Contains(d.stderr.String(), "SIGHUP: reloading the config") &&
			strings.Contains(d.stderr.String(), `"applied":["allow_act"]`)
	})
	if d.exited() {
		t.Fatalf("agentd exited on SIGHUP: %v\n%s", d.err, d.stderr)
	}
	// Consent on: act is no longer refused (no display here, so it is
	// screen_unavailable).
	if _, errOut, code := h.agentctl("", "act", batch); code != 24 {
		t.Fatalf("act after SIGHUP: exit %d %q, want 24 (consent reloaded)", code, errOut)
	}
	help, err := exec.Command(bin.agentd, "--help").Output()
	if err != nil || !strings.Contains(string(help), "on SIGHUP") {
		t.Errorf("agentd --help does not say SIGHUP reloads: %v\n%s", err, help)
	}
	// A second SIGHUP with a broken file keeps the running settings.
	os.WriteFile(target, []byte("allow_act = maybe\n"), 0o600)
	d.cmd.Process.Signal(syscall.SIGHUP)
	await(t, 5*time.Second, "the refused reload logged", func() bool {
		return strings.Contains(d.stderr.String(), "config not reloaded")
	})
	if _, _, code := h.agentctl("", "act", batch); code != 24 {
		t.Errorf("after a broken file and SIGHUP act exits %d, want the running consent kept (24)", code)
	}
}
