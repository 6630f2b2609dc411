package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// listBound is how long agent.list may take while workers are stopped. It
// answers from memory in milliseconds (BenchmarkList256 measures it); the
// bound is generous so a busy machine cannot fail the test, and still far
// below the ten seconds a list took when it called every worker.
const listBound = 5 * time.Second

// TestStoppedWorkersAreUnresponsive stops five of six workers with SIGSTOP
// and checks what the issue asks of the daemon: list answers within a bound
// and shows them unresponsive with how long they have been silent, status
// says the same, calls are refused with the fix, a wait in flight on a
// worker that stops is failed rather than left hanging, stop without force
// is refused and stop --force ends the session, and a resumed worker is
// running again.
func TestStoppedWorkersAreUnresponsive(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	c := h.client()
	ctx := context.Background()
	workers := map[string]int{}
	programs := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("u%d", i)
		s, err := c.Spawn(ctx, wire.SpawnParams{Name: name, Argv: []string{"sleep", "3600"}})
		if err != nil {
			t.Fatal(err)
		}
		workers[name], programs[name] = s.WorkerPID, s.ProgramPID
	}
	// Registered after the daemon's cleanup, so it runs first: the
	// daemon's own stop at the end needs workers that answer.
	t.Cleanup(func() {
		for _, pid := range workers {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	stopped := []string{"u0", "u1", "u2", "u3", "u4"}
	for _, name := range stopped {
		if err := syscall.Kill(workers[name], syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}

	timedList := func() map[string]wire.SessionRow {
		t.Helper()
		start := time.Now()
		l, err := c.List(ctx, wire.ListParams{})
		if took := time.Since(start); took > listBound {
			t.Fatalf("list took %s with %d workers stopped, want under %s", took, len(stopped), listBound)
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]wire.SessionRow{}
		for _, r := range l.Sessions {
			rows[r.Name] = r
		}
		return rows
	}
	await(t, 30*time.Second, "the stopped workers listed unresponsive", func() bool {
		rows := timedList()
		for _, name := range stopped {
			if r := rows[name]; r.Status != wire.StatusUnresponsive || r.SilentMS <= 0 {
				return false
			}
		}
		return true
	})
	if r := timedList()["u5"]; r.Status != wire.StatusRunning {
		t.Errorf("u5, whose worker was not stopped, is listed %s (silent %d ms), want running", r.Status, r.SilentMS)
	}

	start := time.Now()
	st, err := c.Status(ctx, "u0")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > listBound {
		t.Errorf("status of a stopped worker's session took %s, want under %s", took, listBound)
	}
	if st.Status != wire.StatusUnresponsive || st.SilentMS <= 0 || strings.Join(st.Allows, ",") != "stop" ||
		!strings.Contains(st.Reason, "stop --force u0") || st.WorkerPID != workers["u0"] {
		t.Errorf("status of u0: status %s, silent_ms %d, allows %v, worker %d, reason %q; want unresponsive, > 0, [stop], %d, naming stop --force u0",
			st.Status, st.SilentMS, st.Allows, st.WorkerPID, st.Reason, workers["u0"])
	}

	err = c.Send(ctx, wire.SendParams{Name: "u1", Text: "hi"})
	if !errors.Is(err, wire.ErrInvalidStatus) || !strings.Contains(err.Error(), "unresponsive") || !strings.Contains(err.Error(), "agentctl stop --force u1") {
		t.Errorf("send to u1 with its worker stopped: %v; want invalid_status saying it is unresponsive and naming agentctl stop --force u1", err)
	}

	// A wait in flight when its worker stops is failed, not left to its
	// hour-long deadline. (Should the stop be seen before the wait reaches
	// the worker, it is refused with the same error.)
	waited := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, wire.WaitParams{Name: "u5", Until: "never printed", TimeoutMS: 3600_000})
		waited <- err
	}()
	if err := syscall.Kill(workers["u5"], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, wire.ErrInvalidStatus) || !strings.Contains(err.Error(), `"u5" is unresponsive`) || !strings.Contains(err.Error(), "stop --force u5") {
			t.Errorf("wait on u5 when its worker stopped: %v; want invalid_status naming u5 as unresponsive and the fix", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a wait on a stopped worker was still waiting after 60 s")
	}

	out := h.ctl(0, "list")
	if !strings.Contains(out, "unresponsive") {
		t.Errorf("agentctl list does not show unresponsive sessions:\n%s", out)
	}
	_, errOut, code := h.agentctl("", "stop", "u2")
	if code != 17 || !strings.Contains(errOut, "stop --force u2") {
		t.Errorf("agentctl stop u2 (worker stopped, no --force): exit %d, stderr %q; want 17 naming agentctl stop --force u2", code, errOut)
	}

	out = h.ctl(0, "stop", "--force", "u0")
	if !strings.Contains(out, "failed") {
		t.Errorf("agentctl stop --force u0 printed %q, want the session failed", out)
	}
	for what, pid := range map[string]int{"worker": workers["u0"], "program": programs["u0"]} {
		await(t, 10*time.Second, "u0's "+what+" gone", func() bool { return !alive(pid) })
	}
	st, err = c.Status(ctx, "u0")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != wire.StatusFailed || st.Termination != wire.TermHostDeath || !strings.Contains(st.Reason, "stop --force") {
		t.Errorf("u0 after stop --force: %s (%s), reason %q; want failed (host_death) saying stop --force killed it", st.Status, st.Termination, st.Reason)
	}

	if err := syscall.Kill(workers["u1"], syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	await(t, 30*time.Second, "u1 running again after SIGCONT", func() bool {
		st, err := c.Status(ctx, "u1")
		return err == nil && st.Status == wire.StatusRunning && st.SilentMS == 0 && timedList()["u1"].Status == wire.StatusRunning
	})
	if err := c.Send(ctx, wire.SendParams{Name: "u1", Text: "hi"}); err != nil {
		t.Errorf("send to u1 after SIGCONT: %v", err)
	}
}

// TestStoppedWorkerAcrossDaemonRestart: a worker stopped while no daemon
// runs cannot be attached by the next one; that daemon still lists it
// unresponsive (not running), says so in status, and stop --force ends it.
func TestStoppedWorkerAcrossDaemonRestart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	c := h.client()
	ctx := context.Background()
	s, err := c.Spawn(ctx, wire.SpawnParams{Name: "frozen", Argv: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(s.WorkerPID, syscall.SIGCONT) })
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	if err := syscall.Kill(s.WorkerPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h.startDaemon(nil)
	c = h.client()
	await(t, 30*time.Second, "frozen listed unresponsive by the new daemon", func() bool {
		start := time.Now()
		l, err := c.List(ctx, wire.ListParams{})
		if took := time.Since(start); took > listBound {
			t.Fatalf("list took %s with a stopped worker, want under %s", took, listBound)
		}
		return err == nil && len(l.Sessions) == 1 && l.Sessions[0].Status == wire.StatusUnresponsive && l.Sessions[0].SilentMS > 0
	})
	st, err := c.Status(ctx, "frozen")
	if err != nil || st.Status != wire.StatusUnresponsive || !strings.Contains(st.Reason, "stop --force frozen") {
		t.Fatalf("status of frozen: %+v, %v; want unresponsive naming stop --force frozen", st, err)
	}
	out := h.ctl(0, "stop", "--force", "frozen")
	if !strings.Contains(out, "failed") {
		t.Errorf("agentctl stop --force frozen printed %q, want the session failed", out)
	}
	await(t, 10*time.Second, "frozen's worker and program gone", func() bool { return !alive(s.WorkerPID) && !alive(s.ProgramPID) })
}
