package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestZshCompletion presses Tab in a real interactive zsh (in tmux, with
// compinit and `agentctl completion zsh` loaded) and reads what it shows:
// the daemon's session names, completed as far as they agree and then
// listed when several match, completed in place when one does.
func TestZshCompletion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed (apt-get install zsh)")
	}
	h := newHome(t)
	h.startDaemon(nil)
	for _, n := range []string{"web-10", "web-2", "db"} {
		h.ctl(0, "spawn", n, "--", "cat")
	}
	tmux := tmuxFor(t, h)
	home := t.TempDir()
	rc := filepath.Join(home, "setup.zsh")
	os.WriteFile(rc, []byte("export PATH="+bin.dir+":$PATH HOME="+home+"\n"+
		"autoload -Uz compinit && compinit -u -d "+home+"/zcompdump\n"+
		"source <(agentctl completion zsh)\nPS1='zsh%% '\n"), 0o600)
	tmux("new-session", "-d", "-s", "z", "-x", "120", "-y", "30", "zsh", "-f")
	pane := func() string { return tmux("capture-pane", "-p", "-t", "z") }
	tmux("send-keys", "-t", "z", "source "+rc, "Enter")
	await(t, 20*time.Second, "zsh's prompt", func() bool { return strings.Contains(pane(), "zsh%") })

	// Two names match: Tab completes what they share, a second Tab lists
	// both (and not db).
	tmux("send-keys", "-t", "z", "-l", "agentctl status web")
	tmux("send-keys", "-t", "z", "Tab")
	await(t, 20*time.Second, "zsh completing web-", func() bool { return strings.Contains(pane(), "agentctl status web-") })
	tmux("send-keys", "-t", "z", "Tab")
	await(t, 20*time.Second, "zsh listing the sessions named web-*", func() bool {
		p := pane()
		return strings.Contains(p, "web-10") && strings.Contains(p, "web-2")
	})
	if p := pane(); strings.Contains(p, "db") {
		t.Errorf("Tab after 'status web' offers db:\n%s", p)
	}
	tmux("send-keys", "-t", "z", "C-u")
	tmux("send-keys", "-t", "z", "clear", "Enter")
	await(t, 20*time.Second, "a cleared screen", func() bool { return !strings.Contains(pane(), "web-10") })

	// One name matches: Tab completes it in the line.
	tmux("send-keys", "-t", "z", "-l", "agentctl --json ask d")
	tmux("send-keys", "-t", "z", "Tab")
	await(t, 20*time.Second, "zsh completing db", func() bool { return strings.Contains(pane(), "agentctl --json ask db") })
}
