package test

import (
	"os/exec"
	"testing"
)

// tmuxFor returns a function that runs tmux commands on a tmux server
// private to h (its socket in h's runtime directory), and kills that
// server when the test ends. It skips the test without tmux.
func tmuxFor(t *testing.T, h *home) func(args ...string) string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	sock := h.runtime + "/tmux"
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tmux, append([]string{"-S", sock}, args...)...)
		cmd.Env = h.env("TERM=xterm-256color")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
}
