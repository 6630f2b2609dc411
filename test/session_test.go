package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// ctl runs agentctl and fails the test unless it exits with want.
func (h *home) ctl(want int, args ...string) string {
	h.t.Helper()
	out, errOut, code := h.agentctl("", args...)
	if code != want {
		h.t.Fatalf("agentctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

func (h *home) client() *wire.Client {
	h.t.Helper()
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// stopAll stops every session so no program outlives the test.
func (h *home) stopAll() {
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		return
	}
	defer c.Close()
	l, err := c.List(context.Background(), wire.ListParams{})
	if err != nil {
		return
	}
	for _, s := range l.Sessions {
		c.Stop(context.Background(), wire.StopParams{Name: s.Name, GraceMS: 500})
	}
}

func TestSessionLifecycleThroughAgentctl(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "py", "--size", "100x30", "--", "python3", "-i", "-q")
	if out := h.ctl(0, "--timeout", "20s", "ask", "py", "print(6*7)"); !strings.Contains(out, "42") {
		t.Errorf("ask print(6*7) answered %q, want 42", out)
	}
	var st wire.SessionStatus
	json.Unmarshal([]byte(h.ctl(0, "--json", "status", "py")), &struct{ Result *wire.SessionStatus }{&st})
	if st.Status != "running" || st.Cols != 100 || st.Rows != 30 || st.Asks != 1 || st.ProgramPID == 0 {
		t.Errorf("status = %+v, want running 100x30 with one ask answered", st)
	}
	h.ctl(0, "send", "py", "--keys", "ctrl+d")
	h.ctl(0, "--timeout", "10s", "wait", "py", "--exit")
	if out := h.ctl(0, "list"); !strings.Contains(out, "exited") || !strings.Contains(out, "clean_exit") {
		t.Errorf("list after exit:\n%s\nwant py exited clean_exit", out)
	}
	if out := h.ctl(0, "logs", "py"); !strings.Contains(out, "42") {
		t.Errorf("logs %q do not hold the answer", out)
	}
	h.ctl(0, "rm", "py")
	h.ctl(13, "status", "py")
}

func TestSessionBadInputExitCodes(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "live", "--", "sh")
	h.ctl(0, "spawn", "done", "--", "true")
	h.ctl(0, "--timeout", "10s", "wait", "done", "--exit")
	long := strings.Repeat("x", 65*1024)
	cases := []struct {
		name string
		args []string
		exit int
	}{
		{"slash in name", []string{"spawn", "a/b", "--", "sh"}, 2},
		{"dot-dot name", []string{"spawn", "..", "--", "sh"}, 2},
		{"space in name", []string{"spawn", "a b", "--", "sh"}, 2},
		{"200-character name", []string{"spawn", strings.Repeat("a", 200), "--", "sh"}, 2},
		{"missing binary", []string{"spawn", "nobin", "--", "/nonexistent/program"}, 14},
		{"missing cwd", []string{"spawn", "nocwd", "--cwd", "/nonexistent/dir", "--", "sh"}, 14},
		{"env key with =", []string{"spawn", "envkey", "--env", "=x", "--", "sh"}, 2},
		{"huge size", []string{"spawn", "huge", "--size", "100000x100000", "--", "sh"}, 2},
		{"taken name", []string{"spawn", "live", "--", "sh"}, 16},
		{"text over 64 KiB", []string{"ask", "live", long}, 2},
		{"invalid until", []string{"ask", "live", "x", "--until", "("}, 2},
		{"ask an ended session", []string{"ask", "done", "hi"}, 17},
		{"send to an ended session", []string{"send", "done", "hi"}, 17},
		{"resize an ended session", []string{"resize", "done", "80x24"}, 17},
		{"rm a running session", []string{"rm", "live"}, 17},
		{"unknown session", []string{"status", "ghost"}, 13},
		{"unknown key", []string{"send", "live", "--keys", "hyper+q"}, 2},
	}
	for _, tc := range cases {
		out, errOut, code := h.agentctl("", tc.args...)
		if code != tc.exit {
			t.Errorf("%s: agentctl %.60q exited %d, want %d\nstdout: %s\nstderr: %s", tc.name, strings.Join(tc.args, " "), code, tc.exit, out, errOut)
		} else if code != 0 && !strings.HasPrefix(errOut, "agentctl: ") {
			t.Errorf("%s: error %q is not one agentctl: line", tc.name, errOut)
		}
	}
	// The daemon is still serving and the live session still running.
	if out := h.ctl(0, "list", "--status", "running"); !strings.Contains(out, "live") {
		t.Errorf("after bad input, list shows:\n%s", out)
	}
}

func TestTwoSpawnsOfOneNameExactlyOneWins(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	c := h.client()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Spawn(context.Background(), wire.SpawnParams{Name: "race", Argv: []string{"sh"}})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errorsIsCode(err, wire.CodeAgentExists):
			t.Errorf("losing spawn: %v, want agent_exists", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d spawns of one name won, want exactly 1", wins)
	}
}

func errorsIsCode(err error, code wire.Code) bool {
	we, ok := err.(*wire.Error)
	return ok && we.Code == code
}

func TestSessionsSurviveDaemonKill9(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "py", "--", "python3", "-i", "-q")
	h.ctl(0, "spawn", "tick", "--", "sh", "-c", "while :; do echo tick $(date +%s%N); sleep 0.05; done")
	h.ctl(0, "--timeout", "20s", "ask", "py", "1+1")

	// An ask in flight when the daemon dies gets an error, not an answer.
	inflight := make(chan int, 1)
	go func() {
		_, _, code := h.agentctl("", "ask", "py", "import time; time.sleep(3); print('late')")
		inflight <- code
	}()
	await(t, 10*time.Second, "ask in flight", func() bool {
		out, _, _ := h.agentctl("", "snapshot", "py")
		return strings.Contains(out, "time.sleep(3)")
	})
	d.cmd.Process.Kill()
	d.wait(5 * time.Second)
	killedAt := time.Now()
	if code := <-inflight; code == 0 {
		t.Error("an ask in flight when the daemon was killed reported success")
	}
	time.Sleep(300 * time.Millisecond) // the daemon stays down a while: output goes on meanwhile
	restartAt := time.Now()
	h.startDaemon(nil)

	// Every session is running again, and asks work.
	await(t, 5*time.Second, "sessions re-attached", func() bool {
		out, _, _ := h.agentctl("", "list", "--status", "running")
		return strings.Contains(out, "py") && strings.Contains(out, "tick")
	})
	if out := h.ctl(0, "--timeout", "20s", "ask", "py", "print(6*7)"); !strings.Contains(out, "42") {
		t.Errorf("ask after restart answered %q, want 42", out)
	}
	// Output produced while the daemon was down is in the log.
	out := h.ctl(0, "logs", "tick")
	found := false
	for _, line := range strings.Split(out, "\n") {
		var ns int64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "tick %d", &ns); err == nil {
			at := time.Unix(0, ns)
			if at.After(killedAt) && at.Before(restartAt) {
				found = true
				break
			}
		}
	}
	if !found {
		t.Errorf("no tick printed between the kill (%s) and the restart (%s) is in the log", killedAt.Format(time.StampMicro), restartAt.Format(time.StampMicro))
	}
}

func TestAttachFromTmux(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	run := tmuxFor(t, h)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "sh1", "--env", "PS1=$ ", "--", "sh")
	run("new-session", "-d", "-x", "100", "-y", "30", bin.agentctl+" attach sh1; sleep 60")
	pane := func() string { return withoutBanner(run("capture-pane", "-p")) }
	// The repaint clears the pane and shows the shell's prompt; the
	// banner naming the detach key is drawn again on the last row.
	await(t, 10*time.Second, "the session's prompt in the pane", func() bool {
		p := strings.TrimSpace(pane())
		return strings.HasSuffix(p, "$") || strings.HasSuffix(p, "#")
	})
	if rows := strings.Split(strings.TrimRight(run("capture-pane", "-p"), "\n"), "\n"); len(rows) != 30 || rows[29] != "[attached to sh1; Ctrl-] detaches]" {
		t.Errorf("the pane's last row is not the banner after the repaint: %q", rows[len(rows)-1])
	}
	run("send-keys", "echo typed-$((6*7))", "Enter")
	await(t, 10*time.Second, "the command's output in the pane", func() bool { return strings.Contains(pane(), "typed-42") })
	// The session saw it too, and the window size followed the pane.
	if out := h.ctl(0, "snapshot", "sh1"); !strings.Contains(out, "typed-42") {
		t.Errorf("session screen lacks the typed command:\n%s", out)
	}
	var st wire.SessionStatus
	json.Unmarshal([]byte(h.ctl(0, "--json", "status", "sh1")), &struct{ Result *wire.SessionStatus }{&st})
	if st.Cols != 100 || st.Rows != 30 {
		t.Errorf("session size %dx%d, want the pane's 100x30", st.Cols, st.Rows)
	}
	// Ctrl-] detaches and leaves the session running.
	run("send-keys", "C-]")
	await(t, 10*time.Second, "detached", func() bool { return strings.Contains(pane(), "detached from sh1") })
	if out := h.ctl(0, "list", "--status", "running"); !strings.Contains(out, "sh1") {
		t.Errorf("session not running after detach:\n%s", out)
	}
	// Another detach sequence, as docker's --detach-keys: Ctrl-] is then
	// a key for the program.
	run("new-session", "-d", "-s", "two", "-x", "100", "-y", "30", bin.agentctl+" attach sh1 --detach-keys ctrl-p,ctrl-q; sleep 60")
	pane2 := func() string { return run("capture-pane", "-p", "-t", "two") }
	await(t, 10*time.Second, "the banner naming the keys", func() bool { return strings.Contains(pane2(), "Ctrl-P Ctrl-Q detaches") })
	run("send-keys", "-t", "two", "C-]")
	run("send-keys", "-t", "two", "C-p", "C-q")
	await(t, 10*time.Second, "detached with ctrl-p,ctrl-q", func() bool { return strings.Contains(pane2(), "detached from sh1") })
}

// withoutBanner is a pane without attach's banner row.
func withoutBanner(pane string) string {
	var rows []string
	for _, r := range strings.Split(pane, "\n") {
		if !strings.HasPrefix(r, "[attached to ") {
			rows = append(rows, r)
		}
	}
	return strings.Join(rows, "\n")
}
