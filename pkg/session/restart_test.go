package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bootFile is a test's boot id seam, holding id.
func bootFile(t *testing.T, id string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "boot_id")
	setBoot(t, p, id)
	return p
}

func setBoot(t *testing.T, p, id string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(id+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// logOf is name's whole event log.
func logOf(t *testing.T, m *Manager, name string) []Event {
	t.Helper()
	var evs []Event
	if err := m.Logs(testCtx(t, 10*time.Second), LogsRequest{Name: name}, func(ev Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// outputAfter is the output recorded after seq.
func outputAfter(evs []Event, seq uint64) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Seq > seq && ev.Type == EventOutput {
			b.Write(ev.Data)
		}
	}
	return b.String()
}

func statusOf(t *testing.T, m *Manager, name string) *Info {
	t.Helper()
	info, err := m.Status(testCtx(t, 10*time.Second), name)
	if err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return info
}

// TestSimulatedRebootRestartsOnRebootSessions kills every worker and
// program, presents a new boot id, and starts a new Manager: the on-reboot
// and always sessions run again within 2 s with their environment, size
// and directory, the event log going on; the others are failed.
func TestSimulatedRebootRestartsOnRebootSessions(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	boot := bootFile(t, "boot-before")
	e.opts.BootIDFile = boot
	ctx := testCtx(t, 60*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	prog := []string{"sh", "-c", `echo "secret=$RESTART_SECRET size=$(stty size) dir=$PWD"; exec cat`}
	var infos []*Info
	for _, s := range []struct {
		name   string
		policy RestartPolicy
	}{{"keep", RestartOnReboot}, {"alw", RestartAlways}, {"plain", ""}, {"never", RestartNo}} {
		info, err := m1.Spawn(ctx, SpawnRequest{Name: s.name, Argv: prog, Cwd: cwd, Cols: 100, Rows: 30,
			Env: []string{"RESTART_SECRET=hush-" + s.name}, Restart: s.policy})
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	// The values are kept apart from the manifest, readable only by the user.
	dir := filepath.Join(e.opts.StateDir, "sessions", "keep")
	if fi, err := os.Stat(filepath.Join(dir, restartFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restart file: %v %v, want mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, manifestName)); strings.Contains(string(b), "hush") {
		t.Fatalf("the manifest holds an environment value:\n%s", b)
	}
	if man, _ := readManifest(dir); man.BootID != "boot-before" || man.Restart != RestartOnReboot {
		t.Fatalf("manifest: boot %q policy %q, want boot-before on-reboot", man.BootID, man.Restart)
	}
	await(t, 10*time.Second, "the first output", func() bool {
		return strings.Contains(outputAfter(logOf(t, m1, "keep"), 0), "secret=hush-keep")
	})
	m1.Close()

	// The reboot: every worker and program dies at once, and the boot id
	// changes. The workers are stopped first, as a machine going down
	// stops them: a worker that saw its program killed would record the
	// signal, which no reboot lets it do (the plain session then read as
	// exited by the signal, under load).
	for _, info := range infos {
		syscall.Kill(info.WorkerPID, syscall.SIGSTOP)
	}
	for _, info := range infos {
		syscall.Kill(info.ProgramPID, syscall.SIGKILL)
		syscall.Kill(info.WorkerPID, syscall.SIGKILL)
	}
	for _, info := range infos {
		await(t, 5*time.Second, "the worker to die", func() bool { return !processAlive(info.WorkerPID, 0) })
	}
	before := logOf(t, m1, "keep")
	lastBefore := before[len(before)-1].Seq
	setBoot(t, boot, "boot-after")

	m2 := e.manager(t)
	start := time.Now()
	rep, err := m2.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, name := range []string{"keep", "alw"} {
		// The bar (2 s) is a figure, measured on a machine that is not
		// running the whole suite beside two CPU hogs; here a deadline.
		await(t, 30*time.Second-took, name+" running again", func() bool { return statusOf(t, m2, name).Status == StatusRunning })
	}
	t.Logf("running again %s after the new Manager's reconcile began (the bar: 2 s)", time.Since(start))
	got := map[string]ReconcileEntry{}
	for _, s := range rep.Sessions {
		got[s.Name] = s
	}
	for _, name := range []string{"keep", "alw"} {
		if g := got[name]; g.Action != ActionRestarted || g.After != StatusRunning {
			t.Errorf("%s: reconcile says %+v, want restarted", name, g)
		}
	}
	for _, name := range []string{"plain", "never"} {
		if g := got[name]; g.Action != ActionMarkedDead {
			t.Errorf("%s: reconcile says %+v, want marked failed", name, g)
		}
		if info := statusOf(t, m2, name); info.Status != StatusFailed || info.Termination != TermHostDeath {
			t.Errorf("%s: %s (%s), want failed (host_death)", name, info.Status, info.Termination)
		}
	}
	info := statusOf(t, m2, "keep")
	if info.Manifest.Restarts != 1 || info.Manifest.BootID != "boot-after" || info.Cols != 100 || info.Rows != 30 {
		t.Errorf("after the restart: restarts %d, boot %q, size %dx%d; want 1, boot-after, 100x30",
			info.Manifest.Restarts, info.Manifest.BootID, info.Cols, info.Rows)
	}
	if ls, _ := m2.List(ctx, ListRequest{}); !slices.ContainsFunc(ls, func(l ListEntry) bool { return l.Name == "keep" && l.Restarts == 1 }) {
		t.Errorf("list does not show keep's restart: %+v", ls)
	}
	// The log goes on: seq continues, a restarted record, then the new
	// program's output, with the same environment, size and directory.
	want := "secret=hush-keep size=30 100 dir=" + cwd
	await(t, 10*time.Second, "the restarted program's output", func() bool {
		return strings.Contains(outputAfter(logOf(t, m2, "keep"), lastBefore), want)
	})
	evs := logOf(t, m2, "keep")
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("seq jumps from %d to %d", evs[i-1].Seq, evs[i].Seq)
		}
	}
	var restarted *Event
	for i := range evs {
		if evs[i].Type == EventRestarted {
			restarted = &evs[i]
		}
	}
	if restarted == nil || restarted.Reason != RestartReasonReboot || !strings.Contains(restarted.Text, "boot-after") ||
		restarted.Termination != TermHostDeath || restarted.Seq <= lastBefore {
		t.Fatalf("restarted record: %+v (last seq before %d)", restarted, lastBefore)
	}
}

// TestSameBootLeavesOnRebootSessionsFailed: a worker that dies while the
// machine runs on is a failure, not a reboot.
func TestSameBootLeavesOnRebootSessionsFailed(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.BootIDFile = bootFile(t, "one-boot")
	ctx := testCtx(t, 30*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	info, err := m1.Spawn(ctx, SpawnRequest{Name: "keep", Argv: []string{"cat"}, Cwd: "/", Restart: RestartOnReboot})
	if err != nil {
		t.Fatal(err)
	}
	m1.Close()
	syscall.Kill(info.WorkerPID, syscall.SIGKILL)
	await(t, 5*time.Second, "the worker to die", func() bool { return !processAlive(info.WorkerPID, 0) })
	m2 := e.manager(t)
	if _, err := m2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, m2, "keep"); st.Status != StatusFailed || st.Manifest.Restarts != 0 {
		t.Fatalf("keep: %s, %d restarts; want failed, 0", st.Status, st.Manifest.Restarts)
	}
}

// TestRestartLoopStopsAtTheCeiling: a program that exits non-zero at once
// under restart always is restarted with back-off until the ceiling, then
// failed with the count.
func TestRestartLoopStopsAtTheCeiling(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.RestartLimits = RestartLimits{Backoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond, Burst: 3, Window: time.Minute}
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "loop", Argv: []string{"sh", "-c", "echo attempt; exit 3"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	var info *Info
	await(t, 20*time.Second, "the loop to be failed", func() bool {
		info = statusOf(t, m, "loop")
		return info.Status == StatusFailed
	})
	if !strings.Contains(info.Reason, "restart loop: restarted 3 times") || info.Manifest.Restarts != 3 {
		t.Fatalf("reason %q, restarts %d; want a restart loop after 3", info.Reason, info.Manifest.Restarts)
	}
	n := 0
	for _, ev := range logOf(t, m, "loop") {
		if ev.Type == EventRestarted {
			n++
			if ev.Reason != RestartReasonExit || ev.ExitCode == nil || *ev.ExitCode != 3 {
				t.Errorf("restarted record %+v, want reason exit after status 3", ev)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d restarted records, want 3", n)
	}
	// It stays failed: no timer is left to restart it.
	time.Sleep(300 * time.Millisecond) // nothing to poll for: the absence of a restart
	if info := statusOf(t, m, "loop"); info.Status != StatusFailed || info.Manifest.Restarts != 3 {
		t.Fatalf("after the ceiling: %s, %d restarts", info.Status, info.Manifest.Restarts)
	}
}

// TestRestartAlwaysLeavesAStopAndACleanExit: a stop asked for, and a
// clean exit, are ends restart always keeps.
func TestRestartAlwaysLeavesAStopAndACleanExit(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.RestartLimits = RestartLimits{Backoff: 10 * time.Millisecond}
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "stopped", Argv: []string{"cat"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "clean", Argv: []string{"sh", "-c", "sleep 0.2"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, StopRequest{Name: "stopped"}); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "clean to end", func() bool { return statusOf(t, m, "clean").Status == StatusExited })
	time.Sleep(200 * time.Millisecond) // 20 back-offs: the absence of a restart
	for _, name := range []string{"stopped", "clean"} {
		if info := statusOf(t, m, name); info.Status != StatusExited || info.Manifest.Restarts != 0 {
			t.Errorf("%s: %s, %d restarts; want exited, none", name, info.Status, info.Manifest.Restarts)
		}
	}
}

func TestRestartPolicyBadInput(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	_, err := m.Spawn(testCtx(t, 10*time.Second), SpawnRequest{Name: "bad", Argv: []string{"cat"}, Cwd: "/", Restart: "sometimes"})
	wantErr(t, err, ErrInvalid, "restart sometimes")
	if !strings.Contains(err.Error(), "no, on-reboot or always") {
		t.Errorf("message %q does not name the policies", err)
	}
	if _, err := os.Stat(filepath.Join(e.opts.StateDir, "sessions", "bad")); !os.IsNotExist(err) {
		t.Errorf("a refused spawn left its directory: %v", err)
	}
	_, err = m.Restart(testCtx(t, 10*time.Second), RestartRequest{Name: "nobody"})
	wantErr(t, err, ErrNotFound, "restart of no session")
}

// TestRestartByHand: an ended session starts again; a running one only
// with force, which stops it first.
func TestRestartByHand(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "hand", Argv: []string{"sh", "-c", `echo "v=$HAND"; exec cat`}, Cwd: "/", Env: []string{"HAND=kept"}}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Restart(ctx, RestartRequest{Name: "hand"})
	wantErr(t, err, ErrInvalidStatus, "restart of a running session")
	info, err := m.Restart(ctx, RestartRequest{Name: "hand", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != StatusRunning || info.Manifest.Restarts != 1 {
		t.Fatalf("after restart --force: %s, %d restarts", info.Status, info.Manifest.Restarts)
	}
	if _, err := m.Stop(ctx, StopRequest{Name: "hand"}); err != nil {
		t.Fatal(err)
	}
	info, err = m.Restart(ctx, RestartRequest{Name: "hand"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Manifest.Restarts != 2 {
		t.Fatalf("restarts %d, want 2", info.Manifest.Restarts)
	}
	await(t, 10*time.Second, "three runs' output", func() bool {
		return strings.Count(outputAfter(logOf(t, m, "hand"), 0), "v=kept") == 3
	})
	n := 0
	for _, ev := range logOf(t, m, "hand") {
		if ev.Type == EventRestarted && ev.Reason == RestartReasonByHand {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d restarted records by hand, want 2", n)
	}
}

// TestRestartRightAfterStop: a restart the moment a stop returns waits for
// the old worker to finish its cleanup, which once removed the new
// worker's socket ("restarted but its worker cannot be reached", about 1
// in 5 from agentctl).
func TestRestartRightAfterStop(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 60*time.Second)
	spawn(t, m, "again", "cat")
	for i := range 8 {
		if _, err := m.Stop(ctx, StopRequest{Name: "again"}); err != nil {
			t.Fatal(err)
		}
		info, err := m.Restart(ctx, RestartRequest{Name: "again"})
		if err != nil {
			t.Fatalf("restart %d right after a stop: %v", i+1, err)
		}
		if info.Status != StatusRunning {
			t.Fatalf("restart %d: %s %+v\n%v", i+1, info.Status, info.Manifest, logOf(t, m, "again"))
		}
		if _, err := m.Status(ctx, "again"); err != nil {
			t.Fatalf("status after restart %d: %v", i+1, err)
		}
	}
}

// TestRebootRestartAfterAStatusCameFirst: a status call that reaches a
// rebooted session before Reconcile marks it failed; Reconcile restarts it
// all the same, since its manifest is of another boot.
func TestRebootRestartAfterAStatusCameFirst(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	boot := bootFile(t, "first")
	e.opts.BootIDFile = boot
	ctx := testCtx(t, 30*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	info, err := m1.Spawn(ctx, SpawnRequest{Name: "keep", Argv: []string{"cat"}, Cwd: "/", Restart: RestartOnReboot})
	if err != nil {
		t.Fatal(err)
	}
	m1.Close()
	syscall.Kill(info.WorkerPID, syscall.SIGKILL)
	await(t, 5*time.Second, "the worker to die", func() bool { return !processAlive(info.WorkerPID, 0) })
	setBoot(t, boot, "second")
	m2 := e.manager(t)
	if st := statusOf(t, m2, "keep"); st.Status != StatusFailed {
		t.Fatalf("status before reconcile: %s, want failed", st.Status)
	}
	rep, err := m2.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].Action != ActionRestarted {
		t.Fatalf("reconcile: %+v, want keep restarted", rep.Sessions)
	}
	if st := statusOf(t, m2, "keep"); st.Status != StatusRunning || st.Manifest.Restarts != 1 {
		t.Fatalf("after reconcile: %s, %d restarts", st.Status, st.Manifest.Restarts)
	}
	// A second reconcile in the same boot leaves it be.
	if rep, _ := m2.Reconcile(ctx); rep.Sessions[0].Action != ActionAttached {
		t.Fatalf("second reconcile: %+v", rep.Sessions)
	}
}

// TestRestartBindsTheDesktopAgain: a desktop session's restart takes the
// desktop's variables from ManagerOptions.Desktop, not the dead one's.
func TestRestartBindsTheDesktopAgain(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	var asked []string
	e.opts.Desktop = func(_ context.Context, name, desktop string, keep bool) ([]string, []string, error) {
		asked = append(asked, fmt.Sprintf("%s %s %v", name, desktop, keep))
		return []string{"DISPLAY=:1077"}, []string{"WAYLAND_DISPLAY"}, nil
	}
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "gui", Argv: []string{"sh", "-c", `echo "display=$DISPLAY"; exec cat`}, Cwd: "/",
		Env: []string{"DISPLAY=:1001", "OTHER=1"}, Desktop: "new", KeepDesktop: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Restart(ctx, RestartRequest{Name: "gui", Force: true}); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the restarted program on the new display", func() bool {
		out := outputAfter(logOf(t, m, "gui"), 0)
		return strings.Contains(out, "display=:1001") && strings.Contains(out, "display=:1077")
	})
	if len(asked) != 1 || asked[0] != "gui new true" {
		t.Fatalf("desktop asked %q, want once for gui new true", asked)
	}
}

// TestABackOffOutlivesTheManager: a restart always session whose back-off
// an agentd did not see out is restarted by the next one's Reconcile; one
// stopped on request is not.
func TestABackOffOutlivesTheManager(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.RestartLimits = RestartLimits{Backoff: time.Hour}
	ctx := testCtx(t, 30*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Spawn(ctx, SpawnRequest{Name: "crash", Argv: []string{"sh", "-c", "sleep 0.2; exec cat"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Spawn(ctx, SpawnRequest{Name: "stopped", Argv: []string{"cat"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Stop(ctx, StopRequest{Name: "stopped"}); err != nil {
		t.Fatal(err)
	}
	// crash ends badly (killed by a signal nobody asked for).
	info, err := m1.Status(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(info.ProgramPID, syscall.SIGKILL)
	await(t, 10*time.Second, "crash to end", func() bool { return statusOf(t, m1, "crash").Status == StatusExited })
	m1.Close() // an hour's back-off, never seen out

	e.opts.RestartLimits = RestartLimits{Backoff: 10 * time.Millisecond}
	m2 := e.manager(t)
	if _, err := m2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "crash restarted", func() bool {
		st := statusOf(t, m2, "crash")
		return st.Status == StatusRunning && st.Manifest.Restarts == 1
	})
	time.Sleep(100 * time.Millisecond) // 10 back-offs: the absence of a restart
	if st := statusOf(t, m2, "stopped"); st.Status != StatusExited || st.Manifest.Restarts != 0 || !st.Manifest.StopAsked {
		t.Fatalf("stopped: %s, %d restarts, stop asked %v; want exited, none, true", st.Status, st.Manifest.Restarts, st.Manifest.StopAsked)
	}
}

// TestLogsFollowAcrossRestarts: a follower of a restart always session
// reads on across its restarts, and ends when the session does.
func TestLogsFollowAcrossRestarts(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.RestartLimits = RestartLimits{Backoff: 100 * time.Millisecond, Burst: 2, Window: time.Minute}
	m := e.manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "flap", Argv: []string{"sh", "-c", "sleep 0.3; echo run; exit 3"}, Cwd: "/", Restart: RestartAlways}); err != nil {
		t.Fatal(err)
	}
	var runs, restarts int
	err := m.Logs(ctx, LogsRequest{Name: "flap", Follow: true}, func(ev Event) error {
		switch ev.Type {
		case EventOutput:
			runs += strings.Count(string(ev.Data), "run")
		case EventRestarted:
			restarts++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 || restarts != 2 {
		t.Fatalf("the follower read %d runs and %d restarts, want 3 and 2", runs, restarts)
	}
	if st := statusOf(t, m, "flap"); st.Status != StatusFailed {
		t.Fatalf("the follower ended with the session %s, want failed", st.Status)
	}
}
