package session

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// smallDisk mounts a tmpfs of size bytes on the test's state directory and
// returns the environment and a filler: fill writes a file until the disk
// is full, free removes it. It skips the test, saying why, unless it may
// mount (root).
func smallDisk(t *testing.T, size int) (env *testEnv, fill, free func()) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("a full disk is made with a small tmpfs, which needs root; run the tests as root to cover it")
	}
	env = newTestEnv(t)
	dir := env.opts.StateDir
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (%v); skipped", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	fill = func() {
		f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := bytes.Repeat([]byte("x"), 4096)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, unix.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
		for { // and the last bytes a page would not take
			if _, err := f.Write([]byte("x")); err != nil {
				break
			}
		}
	}
	free = func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	return env, fill, free
}

// TestFullDiskSpawnFailsFastAndLeavesNothing: with the state directory
// full, spawn answers spawn_failed naming the full disk and the directory,
// fast, and leaves no directory and no process; with space back, the same
// name spawns.
func TestFullDiskSpawnFailsFastAndLeavesNothing(t *testing.T) {
	t.Parallel()
	env, fill, free := smallDisk(t, 256<<10)
	m := env.manager(t)
	ctx := testCtx(t, 60*time.Second)
	fill()
	start := time.Now()
	_, err := m.Spawn(ctx, SpawnRequest{Name: "full", Argv: []string{"cat"}, Cwd: "/"})
	took := time.Since(start)
	wantErr(t, err, ErrSpawnFailed, "spawn on a full disk")
	want := "no space left on device in " + m.sessions
	if !strings.Contains(err.Error(), want) {
		t.Errorf("spawn on a full disk: %q, want it to say %q", err, want)
	}
	if took > 5*time.Second {
		t.Errorf("spawn on a full disk took %s, want it to fail fast", took)
	}
	if _, err := os.Lstat(m.dir("full")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session directory after the failed spawn: %v, want none", err)
	}
	if ws := workersOf(m.dir("full")); len(ws) != 0 {
		t.Errorf("workers left after the failed spawn: %v", ws)
	}
	free()
	spawn(t, m, "full", "cat")
}

// TestFullDiskKeepsTheProgramAndRecordsAGap: a session whose disk fills
// keeps running; what could not be recorded is counted and recorded as a
// gap once space returns, every line of the log is a whole record (no
// torn record fused with the next), seq numbers are contiguous, and the
// session can be removed while the disk is full.
func TestFullDiskKeepsTheProgramAndRecordsAGap(t *testing.T) {
	t.Parallel()
	env, fill, free := smallDisk(t, 512<<10)
	m := env.manager(t)
	logWorkerOnFailure(t, env, "g")
	ctx := testCtx(t, 120*time.Second)
	info := spawn(t, m, "g", "cat")
	send := func(text string) {
		t.Helper()
		if err := m.Send(ctx, SendRequest{Name: "g", Text: text}); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	snapshotHas := func(what string) {
		t.Helper()
		await(t, 30*time.Second, "the program to echo "+what, func() bool {
			s, err := m.Snapshot(ctx, "g")
			return err == nil && strings.Contains(strings.Join(s.Lines, "\n"), what)
		})
	}
	send("before\r")
	snapshotHas("before")
	fill()
	// A long line, so some write is cut part way.
	send(strings.Repeat("lost", 300) + "\r")
	send("while-full\r")
	snapshotHas("while-full") // the program runs on
	free()
	send("after\r")
	snapshotHas("after")

	var evs []Event
	await(t, 30*time.Second, "the record of after", func() bool {
		evs = nil
		m.Logs(ctx, LogsRequest{Name: "g"}, func(ev Event) error { evs = append(evs, ev); return nil })
		for _, ev := range evs {
			if ev.Type == EventOutput && strings.Contains(string(ev.Data), "after") {
				return true
			}
		}
		return false
	})
	var gaps []Event
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d, want %d: seq numbers are not contiguous", i, ev.Seq, i+1)
		}
		if ev.Type == EventGap {
			gaps = append(gaps, ev)
		}
	}
	if len(gaps) != 1 || gaps[0].Count == 0 || gaps[0].Bytes == 0 || !strings.Contains(gaps[0].Text, "no space left") {
		t.Errorf("gap records %+v, want one counting the records and bytes lost to the full disk", gaps)
	}
	raw, err := os.ReadFile(filepath.Join(m.dir("g"), eventlog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if _, err := DecodeEvent([]byte(line)); err != nil {
			t.Errorf("line %d of the log is not a whole record (%v): %.80q", i+1, err, line)
		}
	}

	// Removal needs no space.
	fill()
	if err := m.Remove(ctx, "g", true); err != nil {
		t.Fatalf("rm --force on a full disk: %v", err)
	}
	await(t, 30*time.Second, "every process of g gone", func() bool {
		return !processAlive(info.WorkerPID, 0) && !processAlive(info.ProgramPID, 0)
	})
	if _, err := os.Lstat(m.dir("g")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session directory after rm on a full disk: %v, want none", err)
	}
}

// TestFullDiskStopStatusListAndLogAgree: a session stopped while the disk
// is full (its worker can record the end in the log but not in the
// manifest) is the same ended session to stop, status and list, however
// often they look, with one exit record in its log and no failure logged
// again on every look; once space returns, the manifest says so too.
func TestFullDiskStopStatusListAndLogAgree(t *testing.T) {
	t.Parallel()
	env, fill, free := smallDisk(t, 512<<10)
	var logs lockedLog
	lg := zerolog.New(&logs)
	env.opts.Logger = &lg
	m := env.manager(t)
	logWorkerOnFailure(t, env, "fd1")
	ctx := testCtx(t, 120*time.Second)
	info := spawn(t, m, "fd1", "sleep", "3600")
	fill()
	x, err := m.Stop(ctx, StopRequest{Name: "fd1"})
	if err != nil {
		t.Fatalf("stop on a full disk: %v", err)
	}
	await(t, 30*time.Second, "the worker to exit", func() bool { return !processAlive(info.WorkerPID, 0) })
	for i := 0; i < 10; i++ {
		st, err := m.Status(ctx, "fd1")
		if err != nil || st.Status.Allows().Live || st.Termination != x.Termination {
			t.Fatalf("status after stop said %s: got %+v %v, want ended %s", x.Termination, st, err, x.Termination)
		}
		ls, err := m.List(ctx, ListRequest{})
		if err != nil || len(ls) != 1 || ls[0].Status.Allows().Live || ls[0].Termination != x.Termination || ls[0].PID != 0 {
			t.Fatalf("list after stop said %s: got %+v %v, want it ended %s with no pid", x.Termination, ls, err, x.Termination)
		}
	}
	free()
	await(t, 30*time.Second, "the manifest to say how it ended", func() bool {
		m.Status(ctx, "fd1")
		man, err := readManifest(m.dir("fd1"))
		return err == nil && man.Status.Terminal() && man.Termination == x.Termination
	})
	var exits []Event
	if err := m.Logs(ctx, LogsRequest{Name: "fd1"}, func(ev Event) error {
		if ev.Type == EventExit {
			exits = append(exits, ev)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(exits) != 1 || exits[0].Termination != x.Termination {
		t.Errorf("exit records %+v, want one, %s", exits, x.Termination)
	}
	for _, line := range []string{"session failed: its worker is gone", `"message":"write manifest"`} {
		if n := strings.Count(logs.String(), line); n > 1 {
			t.Errorf("%q logged %d times, want at most once:\n%s", line, n, logs.String())
		}
	}
}

// lockedLog is a log sink for the Manager's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
