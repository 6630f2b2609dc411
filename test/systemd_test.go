package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMakeInstallWritesVerifiableUnits installs into a temporary prefix and
// HOME and checks the units point at the installed binary and pass
// systemd-analyze verify; uninstall removes exactly what install wrote.
func TestMakeInstallWritesVerifiableUnits(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd)")
	}
	home := t.TempDir()
	prefix := filepath.Join(home, "prefix")
	make := func(target string) {
		cmd := exec.Command("make", "-s", "-C", "..", target, "PREFIX="+prefix, "HOME="+home, "BIN="+filepath.Join(home, "build"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install")
	// A PREFIX other than ~/.local takes the units beside it, where systemd
	// looks for user units of that prefix.
	units := filepath.Join(prefix, "lib", "systemd", "user")
	service, err := os.ReadFile(filepath.Join(units, "agentd.service"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(prefix, "bin", "agentd")
	if !strings.Contains(string(service), "ExecStart="+bin+" ") {
		t.Errorf("agentd.service does not run %s:\n%s", bin, service)
	}
	for _, want := range []string{"Type=notify", "KillMode=process", "ExecReload=", "WatchdogSec=", "Restart=on-failure"} {
		if !strings.Contains(string(service), want) {
			t.Errorf("agentd.service lacks %s", want)
		}
	}
	// The daemon's unit holds no sandboxing its children would inherit.
	for _, line := range strings.Split(string(service), "\n") {
		if strings.HasPrefix(line, "NoNewPrivileges=") || strings.HasPrefix(line, "RestrictAddressFamilies=") || strings.HasPrefix(line, "RestrictNamespaces=") {
			t.Errorf("agentd.service sets %s", line)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Errorf("binary not installed: %v", err)
	}
	rt := testhome.ShortDir(t)
	cmd := exec.Command(analyze, "--user", "verify", filepath.Join(units, "agentd.socket"), filepath.Join(units, "agentd.service"))
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	make("uninstall")
	for _, p := range []string{bin, filepath.Join(prefix, "bin", "agentctl"), filepath.Join(units, "agentd.service"), filepath.Join(units, "agentd.socket")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s", p)
		}
	}
}
