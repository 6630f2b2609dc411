package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstallPutsManPages installs into a temporary prefix: a man page
// for agentctl and each of its commands, made from its --help tree, that
// man renders; uninstall removes them.
func TestMakeInstallPutsManPages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	make := func(target string) {
		t.Helper()
		// HOME is left alone: it holds the Go build cache.
		cmd := exec.Command("make", "-s", "-C", "..", target, "PREFIX="+prefix, "UNITDIR="+filepath.Join(dir, "units"), "BIN="+filepath.Join(dir, "build"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install")
	man1 := filepath.Join(prefix, "share", "man", "man1")
	for _, page := range []string{"agentctl.1", "agentctl-spawn.1", "agentctl-channel-push.1", "agentctl-doctor.1", "agentctl-completion-bash.1"} {
		b, err := os.ReadFile(filepath.Join(man1, page))
		if err != nil {
			t.Errorf("make install: %v", err)
			continue
		}
		if !strings.Contains(string(b), ".SH NAME") || !strings.Contains(string(b), ".SH SYNOPSIS") {
			t.Errorf("%s is not a man page:\n%.300s", page, b)
		}
	}
	top, _ := os.ReadFile(filepath.Join(man1, "agentctl.1"))
	if !strings.Contains(string(top), "unreachable") {
		t.Errorf("agentctl.1 lacks the exit statuses")
	}
	if _, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command("man", "-l", filepath.Join(man1, "agentctl-spawn.1"))
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "COLUMNS=100")
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "agentctl-spawn - start a program in a new session") || !strings.Contains(string(out), "--cwd") {
			t.Errorf("man -l agentctl-spawn.1: %v\n%s", err, out)
		}
	}
	make("uninstall")
	if left, _ := filepath.Glob(filepath.Join(man1, "agentctl*")); len(left) > 0 {
		t.Errorf("uninstall left %v", left)
	}
}
