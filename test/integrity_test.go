package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedSpawnsAnswerSpawnFailedWithTheCause spawns programs that cannot
// start through the real agentctl and agentd: each answers spawn_failed
// (exit 14) naming the cause and the path, and the name is free again at
// once (nothing of the session is left).
func TestFailedSpawnsAnswerSpawnFailedWithTheCause(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing binary", []string{"spawn", "t1", "--", "/nonexistent/bin"}, "exec /nonexistent/bin: no such file or directory"},
		{"missing cwd", []string{"spawn", "t1", "--cwd", "/nonexistent/dir", "--", "true"}, "working directory /nonexistent/dir: no such file or directory"},
		{"not executable", []string{"spawn", "t1", "--", plain}, "exec " + plain + ": permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := h.agentctl("", tc.args...)
			if code != 14 {
				t.Fatalf("agentctl %s: exit %d, want 14 (spawn_failed)\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, out, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("agentctl %s: stderr %q, want it to contain %q", strings.Join(tc.args, " "), errOut, tc.want)
			}
			if _, err := os.Lstat(filepath.Join(h.state, "agentd", "sessions", "t1")); !os.IsNotExist(err) {
				t.Errorf("session directory after a failed spawn: %v, want none", err)
			}
			h.ctl(13, "status", "t1")
		})
	}
}
