package test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// fakeClaudeScreens is a program that draws Claude Code's screens,
// recorded from the real CLI (pkg/agentstate's testdata): it works, asks
// for approval at each line of input, and after the last waits and, two
// seconds on, exits 3 by itself.
const fakeClaudeScreens = `d=$1
show() { printf '\033[2J\033[H%s' "$(cat "$d/claude-80x24-$1.txt")"; }
show working; read x; show permission; read x; show answered; sleep 2; exit 3`

// eventsProc is a running `agentctl events -f` whose JSON lines are
// collected.
type eventsProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	got  []wire.StateChange
	done chan error
}

func (p *eventsProc) changes() []wire.StateChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]wire.StateChange(nil), p.got...)
}

// count is how many changes of session name match kind and state.
func (p *eventsProc) count(name, kind, state string) int {
	n := 0
	for _, c := range p.changes() {
		if c.Name == name && c.Kind == kind && c.State == state {
			n++
		}
	}
	return n
}

func startEvents(t *testing.T, h *home, args ...string) *eventsProc {
	t.Helper()
	cmd := exec.Command(bin.agentctl, append([]string{"events", "-f"}, args...)...)
	cmd.Env = h.env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &eventsProc{cmd: cmd, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var c wire.StateChange
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Errorf("events -f printed a line that is not a change: %q (%v)", sc.Text(), err)
				continue
			}
			p.mu.Lock()
			p.got = append(p.got, c)
			p.mu.Unlock()
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("events -f said: %s\nit printed: %+v", stderr.String(), p.changes())
		}
	})
	return p
}

func TestEventsFollowsStatesAcrossADaemonRestart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	screens, err := filepath.Abs("../pkg/agentstate/testdata/screens")
	if err != nil {
		t.Fatal(err)
	}
	h.ctl(0, "spawn", "a", "--agent", "claude", "--size", "80x24", "--", "sh", "-c", fakeClaudeScreens, "sh", screens)
	h.ctl(0, "wait", "a", "--state", "working", "--timeout", "10s")

	// Without -f: the state now, one JSON line a session (not a
	// terminal), and exit 0.
	out := h.ctl(0, "events")
	var now wire.StateChange
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &now); err != nil || now.Name != "a" || now.Kind != wire.ChangeCurrent || now.State != wire.StateWorking {
		t.Fatalf("agentctl events printed %q (%v), want a's current state working", out, err)
	}
	_, _, want := h.agentctl("", "status", "nosuch")
	if _, errOut, code := h.agentctl("", "events", "nosuch"); code != want || want == 0 || !strings.Contains(errOut, "nosuch") {
		t.Errorf("events of a session that does not exist: exit %d, %q; want status's exit %d naming it", code, errOut, want)
	}

	ev := startEvents(t, h)
	await(t, 10*time.Second, "the current state", func() bool { return ev.count("a", wire.ChangeCurrent, wire.StateWorking) == 1 })
	h.ctl(0, "send", "a", "--keys", "enter")
	await(t, 10*time.Second, "needs_approval", func() bool { return ev.count("a", wire.ChangeState, wire.StateNeedsApproval) == 1 })
	for _, c := range ev.changes() {
		if c.State == wire.StateNeedsApproval && (c.Prev != wire.StateWorking || c.Detail == nil || c.Detail.PromptID == "" || c.Seq == 0) {
			t.Errorf("needs_approval change %+v: want prev working, a prompt id and a seq", c)
		}
	}

	// The daemon stops; meanwhile the agent answers, waits and exits. The
	// follower connects again and gets each of those once.
	h.ctl(0, "send", "a", "--keys", "enter")
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	d = h.startDaemon(nil)
	await(t, 20*time.Second, "the exit recorded while the daemon was away", func() bool {
		return ev.count("a", wire.ChangeExited, "") == 1
	})
	if n := ev.count("a", wire.ChangeState, wire.StateWaiting); n != 1 {
		t.Errorf("waiting was printed %d times, want once", n)
	}
	for _, c := range ev.changes() {
		if c.Kind == wire.ChangeExited && (c.ExitCode == nil || *c.ExitCode != 3) {
			t.Errorf("exited change %+v, want exit code 3", c)
		}
	}
	select {
	case err := <-ev.done:
		t.Fatalf("events -f ended with the daemon's restart: %v", err)
	default:
	}

	// A daemon killed outright: the follower connects again too, and sees
	// a session spawned after that.
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "b", "--", "sleep", "60")
	await(t, 20*time.Second, "the spawn after a kill -9 of the daemon", func() bool { return ev.count("b", wire.ChangeSpawned, "") == 1 })

	// Ctrl-C is how a follow ends: exit 0, as logs -f.
	ev.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-ev.done:
		if err != nil {
			t.Errorf("events -f after Ctrl-C: %v, want exit 0 as logs -f", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("events -f did not end on Ctrl-C")
	}
}
