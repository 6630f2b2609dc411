package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstallStagesUnderDESTDIR: a packager's install (issue 24 item
// 9) puts everything under DESTDIR while the unit names the final path;
// it installs man pages for agentd and its config file and the
// completions for bash, zsh and fish; uninstall removes them all.
func TestMakeInstallStagesUnderDESTDIR(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	make := func(target string) {
		t.Helper()
		cmd := exec.Command("make", "-s", "-C", "..", target, "DESTDIR="+dest, "PREFIX=/usr/local", "BIN="+filepath.Join(dir, "build"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install")
	files := []string{"bin/agentd", "bin/agentctl", "share/man/man1/agentd.1", "share/man/man5/agentd-config.5", "share/man/man1/agentctl-run.1",
		"share/bash-completion/completions/agentctl", "share/zsh/site-functions/_agentctl", "share/fish/vendor_completions.d/agentctl.fish",
		"lib/systemd/user/agentd.service"}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dest, "usr/local", f)); err != nil {
			t.Errorf("make install DESTDIR: %v", err)
		}
	}
	service, _ := os.ReadFile(filepath.Join(dest, "usr/local/lib/systemd/user/agentd.service"))
	if !strings.Contains(string(service), "ExecStart=/usr/local/bin/agentd ") {
		t.Errorf("the staged unit does not run the final /usr/local/bin/agentd:\n%s", service)
	}
	page, _ := os.ReadFile(filepath.Join(dest, "usr/local/share/man/man5/agentd-config.5"))
	if !strings.Contains(string(page), "max_connections") || strings.Contains(string(page), os.Getenv("HOME")) {
		t.Errorf("agentd-config.5 lacks the keys, or names the builder's home:\n%.400s", page)
	}
	if _, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command("man", "-l", filepath.Join(dest, "usr/local/share/man/man1/agentd.1"))
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat")
		if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "-check-config") || !strings.Contains(string(out), "~/.config/agentd/config.toml") {
			t.Errorf("man -l agentd.1: %v\n%s", err, out)
		}
	}
	make("uninstall")
	var left []string
	filepath.Walk(dest, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("uninstall left %v", left)
	}
}
