package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

func TestPythonAsk(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "py", "python3", "-i", "-q")
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Wait(ctx, WaitRequest{Name: "py", Until: "(?m)^>>>", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Ask(ctx, AskRequest{Name: "py", Text: "print(6*7)", Until: `(?m)^>>> $`, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "42" || res.Reason != ReasonMatched {
		t.Errorf("ask print(6*7): got answer %q reason %q, want \"42\" matched", res.Answer, res.Reason)
	}
	// Idle ending, multi-line output.
	res, err = m.Ask(ctx, AskRequest{Name: "py", Text: "for i in range(3): print('line', i)\n\n", Idle: 300 * time.Millisecond, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The prompt comes back long before the idle time: it ends the ask.
	if want := "line 0\nline 1\nline 2"; res.Answer != want || res.Reason != ReasonPrompt || res.Prompt != ">>>" {
		t.Errorf("ask loop: got %q (%s, prompt %q), want %q (prompt >>>)", res.Answer, res.Reason, res.Prompt, want)
	}
	if res.FromSeq == 0 || res.ToSeq <= res.FromSeq {
		t.Errorf("seq range %d..%d", res.FromSeq, res.ToSeq)
	}
	st, err := m.Status(ctx, "py")
	if err != nil {
		t.Fatal(err)
	}
	if st.Asks != 2 || st.Bytes == 0 || st.Status != StatusRunning || !st.Allows.Ask {
		t.Errorf("status after 2 asks: %+v", st)
	}
	// Exit through an ask.
	res, err = m.Ask(ctx, AskRequest{Name: "py", Text: "print('bye'); raise SystemExit(3)", Idle: 5 * time.Second, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonExited || res.Answer != "bye" {
		t.Errorf("ask exit: got %q (%s), want \"bye\" (exited)", res.Answer, res.Reason)
	}
	ex, err := m.Stop(ctx, StopRequest{Name: "py"})
	if err != nil {
		t.Fatal(err)
	}
	if !ex.AlreadyEnded || ex.Termination != TermNonzeroExit || ex.ExitCode == nil || *ex.ExitCode != 3 {
		t.Errorf("stop after exit: got %+v, want already ended, nonzero_exit 3", ex)
	}
}

func TestShellAskAndSend(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "sh", Argv: []string{"sh", "-i"}, Env: []string{"PS1=$ ", "GREETING=hello there"}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `\$`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Ask(ctx, AskRequest{Name: "sh", Text: `echo "$GREETING from $AGENTD_SESSION"`, Until: `(?m)^\$ $`, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "hello there from sh" {
		t.Errorf("got answer %q, want %q", res.Answer, "hello there from sh")
	}
	// A bad key name sends nothing, not even the text before it.
	wantErr(t, m.Send(ctx, SendRequest{Name: "sh", Text: "echo never-$((6*7))", Keys: []string{"enter", "hyper+q"}}), ErrInvalid, "unknown key")
	// Text then keys, in one call.
	if err := m.Send(ctx, SendRequest{Name: "sh", Text: "echo sent-$((40+2))", Keys: []string{"enter"}}); err != nil {
		t.Fatal(err)
	}
	wr, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `sent-42`, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if wr.Reason != ReasonMatched {
		t.Errorf("wait reason %q", wr.Reason)
	}
	snap, err := m.Snapshot(ctx, "sh")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Cols != DefaultCols || snap.Rows != DefaultRows || len(snap.Lines) != DefaultRows || len(snap.Hash) != 64 {
		t.Errorf("snapshot shape: %dx%d, %d lines, hash %q", snap.Cols, snap.Rows, len(snap.Lines), snap.Hash)
	}
	if !strings.Contains(strings.Join(snap.Lines, "\n"), "sent-42") {
		t.Errorf("snapshot lacks sent-42: %q", snap.Lines)
	}
	if strings.Contains(strings.Join(snap.Lines, "\n"), "never") {
		t.Errorf("a send refused for its bad key typed its text: %q", snap.Lines)
	}
	if err := m.Resize(ctx, "sh", 100, 30); err != nil {
		t.Fatal(err)
	}
	res, err = m.Ask(ctx, AskRequest{Name: "sh", Text: "stty size", Until: `(?m)^\$ $`, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "30 100" {
		t.Errorf("stty size after resize: got %q, want \"30 100\"", res.Answer)
	}
	// Ctrl+C and unknown keys.
	if err := m.Send(ctx, SendRequest{Name: "sh", Keys: []string{"ctrl+c"}}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, m.Send(ctx, SendRequest{Name: "sh", Keys: []string{"hyper+q"}}), ErrInvalid, "unknown key")
	// Idle wait.
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Idle: 100 * time.Millisecond, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Wait timeout carries the screen.
	_, err = m.Wait(ctx, WaitRequest{Name: "sh", Until: "never-printed", Timeout: 100 * time.Millisecond})
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || len(te.Screen) != 30 {
		t.Fatalf("wait past deadline: got %v, want *TimeoutError with a 30-line screen", err)
	}
}

// pasteProgram enables bracketed paste, reads raw input and reports every
// paste it receives once Enter follows.
const pasteProgram = `
import os, sys, tty
tty.setraw(0)
sys.stdout.write("\x1b[?2004hready> "); sys.stdout.flush()
buf = b""
while True:
    buf += os.read(0, 4096)
    if buf.endswith(b"\r") and b"\x1b[201~" in buf:
        start, end = buf.find(b"\x1b[200~"), buf.find(b"\x1b[201~")
        text = buf[start+6:end].decode()
        sys.stdout.write("\r\nPASTE<%s> bracketed=%s\r\nready> " % (text.replace("\n", "|"), start == 0)); sys.stdout.flush()
        buf = b""
`

func TestBracketedPasteAsk(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "paste", "python3", "-c", pasteProgram)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Wait(ctx, WaitRequest{Name: "paste", Until: "ready>", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, "paste")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.BracketedPaste {
		t.Fatal("snapshot does not show bracketed paste enabled")
	}
	res, err := m.Ask(ctx, AskRequest{Name: "paste", Text: "two\nlines", Until: `PASTE<.*>.*\n`, Timeout: 3 * time.Second})
	if err != nil {
		var te *TimeoutError
		if errors.As(err, &te) {
			t.Logf("screen %q partial %q", te.Screen, te.Partial)
		}
		t.Fatal(err)
	}
	if !res.Pasted || !strings.Contains(res.Answer, "PASTE<two|lines> bracketed=True") {
		t.Errorf("got answer %q pasted=%v, want PASTE<two|lines> bracketed=True", res.Answer, res.Pasted)
	}
}

func TestAskLockAndTimeout(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	// cat with echo off never answers anything.
	spawn(t, m, "mute", "sh", "-c", "stty -echo; echo ready; exec cat >/dev/null")
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Wait(ctx, WaitRequest{Name: "mute", Until: "ready", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := m.Ask(ctx, AskRequest{Name: "mute", Text: "hello?", Until: "never", Timeout: 2500 * time.Millisecond})
		first <- err
	}()
	await(t, 5*time.Second, "the first ask to take the lock", func() bool {
		var n int
		m.Logs(ctx, LogsRequest{Name: "mute"}, func(ev Event) error {
			if ev.Type == EventAsk {
				n++
			}
			return nil
		})
		return n == 1
	})
	_, err := m.Ask(ctx, AskRequest{Name: "mute", Text: "me too", LockTimeout: 50 * time.Millisecond})
	wantErr(t, err, ErrLockTimeout, "second ask")
	err = <-first
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("ask past its deadline: got %v, want *TimeoutError", err)
	}
	if len(te.Screen) != 24 || te.FromSeq == 0 {
		t.Errorf("timeout evidence: %+v", te)
	}
	// The Enter was resent once since nothing reacted.
	var enters int
	m.Logs(ctx, LogsRequest{Name: "mute"}, func(ev Event) error {
		if ev.Type == EventInput && string(ev.Data) == "\r" {
			enters++
		}
		return nil
	})
	if enters != 2 {
		t.Errorf("got %d Enters, want 2 (one resent)", enters)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	for _, tc := range []struct {
		name string
		req  SpawnRequest
	}{
		{"slash", SpawnRequest{Name: "a/b", Argv: []string{"true"}}},
		{"dotdot", SpawnRequest{Name: "..", Argv: []string{"true"}}},
		{"space", SpawnRequest{Name: "a b", Argv: []string{"true"}}},
		{"long", SpawnRequest{Name: strings.Repeat("a", 200), Argv: []string{"true"}}},
		{"upper", SpawnRequest{Name: "Ab", Argv: []string{"true"}}},
		{"empty name", SpawnRequest{Name: "", Argv: []string{"true"}}},
		{"empty argv", SpawnRequest{Name: "x", Argv: nil}},
		{"env with =", SpawnRequest{Name: "x", Argv: []string{"true"}, Env: []string{"=x"}}},
		{"env without =", SpawnRequest{Name: "x", Argv: []string{"true"}, Env: []string{"JUSTKEY"}}},
		{"zero cols", SpawnRequest{Name: "x", Argv: []string{"true"}, Cols: -1, Rows: 10}},
		{"huge cols", SpawnRequest{Name: "x", Argv: []string{"true"}, Cols: 100000, Rows: 10}},
		{"huge rows", SpawnRequest{Name: "x", Argv: []string{"true"}, Cols: 80, Rows: 501}},
		{"relative cwd", SpawnRequest{Name: "x", Argv: []string{"true"}, Cwd: "tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Spawn(ctx, tc.req)
			wantErr(t, err, ErrInvalid, fmt.Sprintf("spawn %+v", tc.req))
		})
	}
	for _, tc := range []struct {
		name string
		req  SpawnRequest
	}{
		{"missing binary", SpawnRequest{Name: "nobin", Argv: []string{"/nonexistent/agentd-test-binary"}, Cwd: "/"}},
		{"missing in PATH", SpawnRequest{Name: "nobin2", Argv: []string{"agentd-no-such-program"}, Cwd: "/"}},
		{"missing cwd", SpawnRequest{Name: "nocwd", Argv: []string{"true"}, Cwd: "/nonexistent/dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Spawn(ctx, tc.req)
			wantErr(t, err, ErrSpawnFailed, "spawn")
			var se *SpawnError
			if !errors.As(err, &se) || se.Reason == "" {
				t.Fatalf("got %v, want a *SpawnError with a reason", err)
			}
			// Nothing is left: the name is free again.
			if _, err := m.Status(ctx, tc.req.Name); !errors.Is(err, ErrNotFound) {
				t.Errorf("status after failed spawn: got %v, want ErrNotFound", err)
			}
		})
	}
	_, err := m.Status(ctx, "nobody")
	wantErr(t, err, ErrNotFound, "status of a missing session")
	if !strings.Contains(err.Error(), `session "nobody" does not exist`) {
		t.Errorf("message %q", err)
	}

	spawn(t, m, "live", "sh", "-c", "echo hi; exec cat")
	_, err = m.Spawn(ctx, SpawnRequest{Name: "live", Argv: []string{"true"}})
	wantErr(t, err, ErrExists, "spawn of a taken name")
	_, err = m.Ask(ctx, AskRequest{Name: "live", Text: strings.Repeat("x", MaxAskText+1)})
	wantErr(t, err, ErrInvalid, "ask over 64 KiB")
	_, err = m.Ask(ctx, AskRequest{Name: "live", Text: "x", Until: "(unclosed"})
	wantErr(t, err, ErrInvalid, "bad until")
	wantErr(t, m.Resize(ctx, "live", 0, 10), ErrInvalid, "resize to zero")
	wantErr(t, m.Resize(ctx, "live", 80, 100000), ErrInvalid, "huge resize")
	wantErr(t, m.Remove(ctx, "live", false), ErrInvalidStatus, "rm of a running session")
	_, err = m.Stop(ctx, StopRequest{Name: "live", Signal: "NOPE"})
	wantErr(t, err, ErrInvalid, "unknown signal")

	if _, err := m.Stop(ctx, StopRequest{Name: "live"}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Ask(ctx, AskRequest{Name: "live", Text: "x"})
	wantErr(t, err, ErrInvalidStatus, "ask on an ended session")
	wantErr(t, m.Send(ctx, SendRequest{Name: "live", Text: "x"}), ErrInvalidStatus, "send on an ended session")
	wantErr(t, m.Resize(ctx, "live", 80, 24), ErrInvalidStatus, "resize on an ended session")
	_, err = m.Wait(ctx, WaitRequest{Name: "live", Until: "x"})
	wantErr(t, err, ErrInvalidStatus, "wait for output on an ended session")
	if wr, err := m.Wait(ctx, WaitRequest{Name: "live", Exit: true}); err != nil || wr.Reason != ReasonExited {
		t.Errorf("wait for exit of an ended session: %+v, %v", wr, err)
	}
	snap, err := m.Snapshot(ctx, "live")
	if err != nil || snap.Lines[0] != "hi" {
		t.Errorf("snapshot of an ended session (replayed): %v, %v", snap, err)
	}
	if err := m.Remove(ctx, "live", false); err != nil {
		t.Fatal(err)
	}
	_, err = m.Status(ctx, "live")
	wantErr(t, err, ErrNotFound, "status after rm")
}

func TestConcurrentSpawnOneWins(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := m.Spawn(ctx, SpawnRequest{Name: "race", Argv: []string{"cat"}, Cwd: "/"})
			errs <- err
		}()
	}
	var ok, exists int
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, ErrExists):
			exists++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 || exists != n-1 {
		t.Errorf("got %d winners and %d ErrExists, want 1 and %d", ok, exists, n-1)
	}
}

func TestStopKillsEveryDescendant(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	dir := t.TempDir()
	// The program ignores SIGTERM; its grandchild does too and escapes into
	// a session (and process group) of its own.
	script := fmt.Sprintf(`trap '' TERM
setsid sh -c 'trap "" TERM; echo $$ > %[1]s/gc; exec sleep 1000' &
sleep 1000 &
echo $! > %[1]s/child
echo ready
wait`, dir)
	info := spawn(t, m, "stubborn", "sh", "-c", script)
	if _, err := m.Wait(ctx, WaitRequest{Name: "stubborn", Until: "ready", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var pids []int
	await(t, 5*time.Second, "pid files", func() bool {
		pids = pids[:0]
		for _, f := range []string{"gc", "child"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return false
			}
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return false
			}
			pids = append(pids, p)
		}
		return true
	})
	pids = append(pids, info.ProgramPID)
	start := time.Now()
	ex, err := m.Stop(ctx, StopRequest{Name: "stubborn", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Termination != TermSignalExit || ex.Signal != "SIGKILL" {
		t.Errorf("got %+v, want signal_exit by SIGKILL", ex)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("stop took %s, less than the grace", took)
	}
	for _, p := range pids {
		if processAlive(p, 0) {
			t.Errorf("process %d survived stop", p)
		}
	}
	// Stop racing a program that exits by itself.
	spawn(t, m, "quick", "sh", "-c", "sleep 0.05")
	if _, err := m.Stop(ctx, StopRequest{Name: "quick"}); err != nil {
		t.Fatalf("stop racing exit: %v", err)
	}
	st, err := m.Status(ctx, "quick")
	if err != nil || !st.Status.Terminal() {
		t.Fatalf("after stop: %+v %v", st, err)
	}
}

// TestExitAtOnceKeepsOutput runs a program that prints and exits at once,
// many times: its output must always be in the log and on the screen.
func TestExitAtOnceKeepsOutput(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 120*time.Second)
	runs := 200
	if testing.Short() {
		runs = 30
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := fmt.Sprintf("q%d", i)
			want := fmt.Sprintf("output-%d-end", i)
			if _, err := m.Spawn(ctx, SpawnRequest{Name: name, Argv: []string{"printf", want}, Cwd: "/"}); err != nil {
				t.Error(err)
				return
			}
			if _, err := m.Wait(ctx, WaitRequest{Name: name, Exit: true, Timeout: 10 * time.Second}); err != nil {
				t.Error(err)
				return
			}
			var out []byte
			var exit *Event
			m.Logs(ctx, LogsRequest{Name: name}, func(ev Event) error {
				switch ev.Type {
				case EventOutput:
					out = append(out, ev.Data...)
				case EventExit:
					exit = &ev
				}
				return nil
			})
			if string(out) != want || exit == nil || exit.Termination != TermCleanExit {
				t.Errorf("run %d: got output %q exit %+v, want %q and clean_exit", i, out, exit, want)
			}
			if err := m.Remove(ctx, name, false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// childProcs returns this process's children (zombies included).
func childProcs() []procStat {
	var out []procStat
	for _, p := range allProcs() {
		if p.ppid == os.Getpid() {
			out = append(out, p)
		}
	}
	return out
}

func TestNoLeaks(t *testing.T) {
	// Not parallel: it counts this process's descriptors and children.
	e := newTestEnv(t)
	m := e.manager(t)
	// Each step has a deadline of its own: one for the whole run bounded
	// the machine's speed (100 cycles under -race on a loaded 2-core
	// machine passed 120 s), not whether a step hangs.
	ctx := testCtx(t, 30*time.Second)
	cycles := 100
	if testing.Short() {
		cycles = 20
	}
	// Warm up once, so lazily opened descriptors (epoll, /dev/null) exist.
	spawn(t, m, "warm", "cat")
	m.Stop(ctx, StopRequest{Name: "warm"})
	m.Remove(ctx, "warm", false)
	await(t, 5*time.Second, "the warm-up worker to exit", func() bool { return len(childProcs()) == 0 })
	before := countFDs(t)
	for i := range cycles {
		name := "c" + strconv.Itoa(i%7)
		spawn(t, m, name, "sh", "-c", "sleep 100 & exec cat")
		step, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		if _, err := m.Stop(step, StopRequest{Name: name, Grace: time.Second}); err != nil {
			t.Fatal(err)
		}
		if err := m.Remove(step, name, false); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	await(t, 5*time.Second, "every worker to exit and be reaped", func() bool { return len(childProcs()) == 0 })
	// Fewer is fine (something opened lazily before has closed since);
	// more, once the last worker's descriptors have had time to close, is
	// a leak.
	deadline := time.Now().Add(10 * time.Second)
	for after := countFDs(t); after > before; after = countFDs(t) {
		if time.Now().After(deadline) {
			t.Errorf("descriptors: %d before %d cycles, %d after", before, cycles, after)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range allProcs() {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
		if bytes.Contains(b, []byte("AGENTD_SOCKET="+e.opts.DaemonSocket)) {
			t.Errorf("process %d of a session survived", p.pid)
		}
	}
}

func TestManagerRestart(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	ctx := testCtx(t, 60*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Spawn(ctx, SpawnRequest{Name: "py", Argv: []string{"python3", "-i", "-q"}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Spawn(ctx, SpawnRequest{Name: "sh", Argv: []string{"sh", "-i"}, Env: []string{"PS1=$ "}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Wait(ctx, WaitRequest{Name: "py", Until: "(?m)^>>>", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// An ask in flight when the Manager goes gets an error, not an answer.
	askErr := make(chan error, 1)
	go func() {
		_, err := m1.Ask(ctx, AskRequest{Name: "py", Text: "import time; time.sleep(0.5); print('late')", Idle: 2 * time.Second, Timeout: 10 * time.Second})
		askErr <- err
	}()
	// Output produced while no Manager runs.
	if err := m1.Send(ctx, SendRequest{Name: "sh", Text: "sleep 0.3; echo made-while-away\r"}); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "the ask to start", func() bool {
		n := 0
		m1.Logs(ctx, LogsRequest{Name: "py"}, func(ev Event) error {
			if ev.Type == EventAsk {
				n++
			}
			return nil
		})
		return n == 1
	})
	m1.Close()
	if err := <-askErr; err == nil {
		t.Fatal("ask in flight across Manager.Close returned an answer, want an error")
	}
	await(t, 5*time.Second, "output produced while the daemon is away", func() bool {
		b, _ := os.ReadFile(filepath.Join(e.opts.StateDir, "sessions", "sh", eventlog.FileName))
		return bytes.Contains(b, []byte("made-while-away"))
	})

	m2 := e.manager(t)
	rep, err := m2.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 2 || rep.Sessions[0].Action != ActionAttached || rep.Sessions[1].Action != ActionAttached {
		t.Fatalf("reconcile: got %+v, want both attached", rep.Sessions)
	}
	for _, name := range []string{"py", "sh"} {
		st, err := m2.Status(ctx, name)
		if err != nil || st.Status != StatusRunning {
			t.Fatalf("%s after restart: %+v %v", name, st, err)
		}
	}
	// The abandoned ask's program output arrives in its own time.
	if _, err := m2.Wait(ctx, WaitRequest{Name: "py", Until: "(?m)^late\n>>>", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// The worker recorded the ask as interrupted: its asker went away
	// without cancelling.
	if got := answerReasons(t, m2, "py"); len(got) != 1 || got[0] != ReasonInterrupted {
		t.Errorf("answer records after the daemon went away: %q, want [interrupted]", got)
	}
	res, err := m2.Ask(ctx, AskRequest{Name: "py", Text: "print(6*7)", Until: `(?m)^>>> $`, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "42" {
		t.Errorf("ask after restart: got %q, want 42", res.Answer)
	}
}

func TestKilledWorkerMeansHostDeath(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	info := spawn(t, m, "victim", "sh", "-c", "echo up; exec sleep 1000")
	if _, err := m.Wait(ctx, WaitRequest{Name: "victim", Until: "up", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(info.WorkerPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	await(t, time.Second, "the session to be failed (host_death)", func() bool {
		man, err := readManifest(filepath.Join(m.sessions, "victim"))
		return err == nil && man.Status == StatusFailed && man.Termination == TermHostDeath
	})
	t.Logf("marked failed after %s", time.Since(start))
	await(t, time.Second, "the program to die with its worker", func() bool { return !processAlive(info.ProgramPID, 0) })
	st, err := m.Status(ctx, "victim")
	if err != nil || st.Status != StatusFailed || st.Termination != TermHostDeath || st.Allows.Send {
		t.Errorf("status: %+v %v", st, err)
	}
	// Removing it works without force.
	if err := m.Remove(ctx, "victim", false); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileMarksDeadWorkers(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	ctx := testCtx(t, 30*time.Second)
	m1, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	info, err := m1.Spawn(ctx, SpawnRequest{Name: "gone", Argv: []string{"cat"}, Cwd: "/"})
	if err != nil {
		t.Fatal(err)
	}
	m1.Close()
	syscall.Kill(info.WorkerPID, syscall.SIGKILL)
	await(t, 5*time.Second, "the worker to die", func() bool { return !processAlive(info.WorkerPID, 0) })
	// A session whose socket exists but never answers: left as it is.
	hung := filepath.Join(e.opts.StateDir, "sessions", "hung")
	os.MkdirAll(hung, 0o700)
	st, _ := readProcStat(os.Getpid())
	writeManifest(hung, &Manifest{Name: "hung", Argv: []string{"x"}, Status: StatusRunning, WorkerPID: os.Getpid(), WorkerStart: st.start})
	ln, err := netListenUnix(filepath.Join(e.opts.RuntimeDir, "hung.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	m2 := e.manager(t)
	start := time.Now()
	rep, err := m2.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("reconcile took %s", time.Since(start))
	}
	got := map[string]ReconcileEntry{}
	for _, s := range rep.Sessions {
		got[s.Name] = s
	}
	if g := got["gone"]; g.Action != ActionMarkedDead || g.After != StatusFailed {
		t.Errorf("gone: %+v", g)
	}
	if h := got["hung"]; h.Action != ActionUnreachable || h.After != StatusRunning {
		t.Errorf("hung: %+v", h)
	}
	man, _ := readManifest(hung)
	if man.Status != StatusRunning {
		t.Errorf("hung session was changed to %s", man.Status)
	}
	os.RemoveAll(hung)
	var last Event
	m2.Logs(ctx, LogsRequest{Name: "gone"}, func(ev Event) error { last = ev; return nil })
	if last.Type != EventExit || last.Termination != TermHostDeath {
		t.Errorf("last event of a dead session: %+v", last)
	}
}

func TestLogsFollowAndFlood(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.opts.LogCap = 1 << 20
	m := e.manager(t)
	ctx := testCtx(t, 60*time.Second)
	// 8 MiB of output, far over the 1 MiB cap.
	spawn(t, m, "flood", "python3", "-c", "import sys\nfor i in range(80000): sys.stdout.write('%07d '%i + 'x'*92 + '\\n')\nprint('DONE')")
	var n int
	var lastSeq uint64
	var sawDone bool
	err := m.Logs(ctx, LogsRequest{Name: "flood", Follow: true}, func(ev Event) error {
		if ev.Seq <= lastSeq {
			return fmt.Errorf("seq went from %d to %d", lastSeq, ev.Seq)
		}
		lastSeq = ev.Seq
		n++
		if ev.Type == EventOutput && bytes.Contains(ev.Data, []byte("DONE")) {
			sawDone = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawDone {
		t.Errorf("follow ended after %d events without the final output", n)
	}
	var size int64
	for _, f := range []string{eventlog.FileName, eventlog.OldFileName} {
		if fi, err := os.Stat(filepath.Join(e.opts.StateDir, "sessions", "flood", f)); err == nil {
			size += fi.Size()
		}
	}
	if size > e.opts.LogCap+256<<10 {
		t.Errorf("log is %d bytes on disk, cap %d", size, e.opts.LogCap)
	}
	st, err := m.Status(ctx, "flood")
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes < 8_000_000 || st.Termination != TermCleanExit {
		t.Errorf("status after flood: %+v", st)
	}
	snap, err := m.Snapshot(ctx, "flood")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(snap.Lines, "\n"), "DONE") {
		t.Errorf("replayed screen lacks DONE: %q", snap.Lines)
	}
	// Follow of a session that ends while followed, from the middle.
	spawn(t, m, "ticker", "sh", "-c", "for i in 1 2 3; do echo tick$i; sleep 0.05; done")
	var ticks []string
	err = m.Logs(ctx, LogsRequest{Name: "ticker", FromSeq: 2, Follow: true}, func(ev Event) error {
		if ev.Seq < 2 {
			return fmt.Errorf("got seq %d, asked from 2", ev.Seq)
		}
		if ev.Type == EventOutput {
			ticks = append(ticks, strings.TrimSpace(string(ev.Data)))
		}
		return nil
	})
	if err != nil || !strings.Contains(strings.Join(ticks, ""), "tick3") {
		t.Errorf("follow: %q %v", ticks, err)
	}
}

// pipeRW is an attached terminal: input from a pipe, output to a buffer.
type pipeRW struct {
	r  *io.PipeReader
	mu sync.Mutex
	b  bytes.Buffer
}

func (p *pipeRW) Read(b []byte) (int, error) { return p.r.Read(b) }
func (p *pipeRW) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.Write(b)
}
func (p *pipeRW) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}

func TestAttach(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "att", Argv: []string{"sh", "-i"}, Env: []string{"PS1=prompt$ "}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "att", Until: `prompt\$`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var rws []*pipeRW
	var inputs []*io.PipeWriter
	errs := make(chan error, 2)
	for range 2 {
		pr, pw := io.Pipe()
		rw := &pipeRW{r: pr}
		rws, inputs = append(rws, rw), append(inputs, pw)
		go func() { errs <- m.Attach(ctx, "att", rw) }()
	}
	for i, rw := range rws {
		await(t, 5*time.Second, fmt.Sprintf("attacher %d's repaint", i), func() bool { return strings.Contains(rw.String(), "prompt$") })
	}
	if _, err := inputs[0].Write([]byte("echo via-attach-$((6*7))\r")); err != nil {
		t.Fatal(err)
	}
	for i, rw := range rws {
		await(t, 5*time.Second, fmt.Sprintf("attacher %d to see the output", i), func() bool { return strings.Contains(rw.String(), "via-attach-42") })
	}
	// EOF on the first attacher's input detaches it; the session runs on.
	inputs[0].Close()
	if err := <-errs; err != nil {
		t.Errorf("detach by EOF: %v", err)
	}
	// The session ending ends the other attach.
	if _, err := m.Stop(ctx, StopRequest{Name: "att", Signal: "HUP"}); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Errorf("attach at session end: %v", err)
	}
	inputs[1].Close()
	err := m.Attach(ctx, "att", &pipeRW{r: nil})
	wantErr(t, err, ErrInvalidStatus, "attach to an ended session")
}

func TestListAndStatus(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	spawn(t, m, "b-run", "cat")
	spawn(t, m, "a-done", "true")
	if _, err := m.Wait(ctx, WaitRequest{Name: "a-done", Exit: true, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ls, err := m.List(ctx, ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Name != "a-done" || ls[0].Status != StatusExited || ls[1].Status != StatusRunning || ls[1].PID == 0 {
		t.Fatalf("list: %+v", ls)
	}
	if ls[0].Termination != TermCleanExit || ls[0].ExitCode == nil || *ls[0].ExitCode != 0 || ls[1].Command[0] != "cat" {
		t.Errorf("list rows: %+v", ls)
	}
	ls, _ = m.List(ctx, ListRequest{Status: []Status{StatusRunning}})
	if len(ls) != 1 || ls[0].Name != "b-run" {
		t.Errorf("list running: %+v", ls)
	}
	st, err := m.Status(ctx, "b-run")
	if err != nil {
		t.Fatal(err)
	}
	if st.WorkerPID == 0 || st.ProgramPID == 0 || st.Cols != 80 || !st.Allows.Ask || st.Allows.Remove || st.Manifest.Argv[0] != "cat" {
		t.Errorf("status: %+v", st)
	}
	fi, err := os.Stat(st.Manifest.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: %v %v", st.Manifest.Socket, fi, err)
	}
}

func TestStatusTableInvariants(t *testing.T) {
	all := []Status{StatusStarting, StatusRunning, StatusExiting, StatusExited, StatusFailed, StatusDestroying, StatusDestroyed, StatusBroken, StatusUnresponsive}
	if len(StatusTable) != len(all) {
		t.Fatalf("table has %d rows, want %d", len(StatusTable), len(all))
	}
	for _, s := range all {
		a, ok := StatusTable[s]
		if !ok {
			t.Fatalf("status %s has no row", s)
		}
		input := a.Ask || a.Send || a.Resize || a.Wait || a.Attach
		if a.Terminal && (input || a.Live || a.Stop) {
			t.Errorf("terminal status %s allows input or is live: %+v", s, a)
		}
		if input && s != StatusRunning {
			t.Errorf("status %s allows input; only running may", s)
		}
		if a.Remove && !a.Terminal {
			t.Errorf("status %s allows rm but is not terminal", s)
		}
		if a.Terminal == a.Live && s != StatusBroken { // broken: unknown until a worker is looked for
			t.Errorf("status %s must be exactly one of live and terminal", s)
		}
	}
	if (Status("bogus")).Allows() != (Allows{}) {
		t.Error("an unknown status allows something")
	}
}

// answerReasons lists the reasons of a session's answer records.
func answerReasons(t testing.TB, m *Manager, name string) []string {
	t.Helper()
	var rs []string
	if err := m.Logs(context.Background(), LogsRequest{Name: name}, func(ev Event) error {
		if ev.Type == EventAnswer {
			rs = append(rs, ev.Reason)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestAskCancel: an ask whose caller goes away ends at once, is recorded as
// canceled, and the next ask (with a short lock timeout) gets its own
// answer, not the late output of the cancelled one.
func TestAskCancel(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	logWorkerOnFailure(t, env, "py")
	spawn(t, m, "py", "python3", "-i", "-q")
	ctx := testCtx(t, 60*time.Second)
	askCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Ask(askCtx, AskRequest{Name: "py", Text: "import time; time.sleep(0.8); print('slow')"})
		errc <- err
	}()
	await(t, 10*time.Second, "the ask to be typed", func() bool {
		n := 0
		m.Logs(ctx, LogsRequest{Name: "py"}, func(ev Event) error {
			if ev.Type == EventInput && string(ev.Data) == "\r" {
				n++
			}
			return nil
		})
		return n == 1
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ask: got %v, want context.Canceled", err)
	}
	canceledAt := time.Now()
	// The bug this guards against held the session until the ask's own
	// 10-minute timeout; seconds of slack keep it from failing on a busy
	// machine.
	await(t, 10*time.Second, "the ask recorded as canceled", func() bool {
		rs := answerReasons(t, m, "py")
		return len(rs) == 1 && rs[0] == ReasonCanceled
	})
	if d := time.Since(canceledAt); d > 5*time.Second {
		t.Errorf("cancel took %s to reach the worker", d)
	}
	// The program is still in its sleep; the next ask waits for its prompt
	// (a lock timeout here would be the product refusing to type into a
	// busy program, which is right, not a stuck lock).
	res, err := m.Ask(ctx, AskRequest{Name: "py", Text: "print(6*7)", LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "42" || res.Reason != ReasonPrompt {
		t.Errorf("ask after a cancel: got %q (%s), want \"42\" (prompt)", res.Answer, res.Reason)
	}
}

// TestAskBadInput: each bad ask is refused with a message that says what
// to do, and the session is untouched: the next ask is right.
func TestAskBadInput(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	logWorkerOnFailure(t, env, "py")
	spawn(t, m, "py", "python3", "-i", "-q")
	ctx := testCtx(t, 60*time.Second)
	for _, tc := range []struct {
		name string
		req  AskRequest
		kind error
		says string
	}{
		{"empty", AskRequest{Name: "py", Text: ""}, ErrInvalid, "no text"},
		{"only line breaks", AskRequest{Name: "py", Text: "\n\r\n\n"}, ErrInvalid, "--keys enter"},
		{"too long", AskRequest{Name: "py", Text: strings.Repeat("x", MaxAskText+1)}, ErrInvalid, "limit"},
		{"bad until", AskRequest{Name: "py", Text: "1", Until: "(unclosed"}, ErrInvalid, "not a valid regular expression"},
		{"negative idle", AskRequest{Name: "py", Text: "1", Idle: -time.Second}, ErrInvalid, "negative"},
		{"no session", AskRequest{Name: "nope", Text: "1"}, ErrNotFound, "agentctl list"},
	} {
		_, err := m.Ask(ctx, tc.req)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want %v saying %q", tc.name, err, tc.kind, tc.says)
		}
	}
	res, err := m.Ask(ctx, AskRequest{Name: "py", Text: "print(6*7)"})
	if err != nil || res.Answer != "42" {
		t.Fatalf("ask after bad input: %+v %v", res, err)
	}
	if st, err := m.Status(ctx, "py"); err != nil || st.Asks != 1 {
		t.Errorf("asks counted after bad input: %+v %v, want 1", st, err)
	}

	// A session that is exiting refuses asks.
	spawn(t, m, "stubborn", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	if _, err := m.Wait(ctx, WaitRequest{Name: "stubborn", Until: "ready", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	go m.Stop(ctx, StopRequest{Name: "stubborn", Grace: 20 * time.Second})
	await(t, 5*time.Second, "the session to be exiting", func() bool {
		st, err := m.Status(ctx, "stubborn")
		return err == nil && st.Status == StatusExiting
	})
	_, err = m.Ask(ctx, AskRequest{Name: "stubborn", Text: "hello"})
	if !errors.Is(err, ErrInvalidStatus) || !strings.Contains(err.Error(), "exiting") {
		t.Errorf("ask of an exiting session: got %v, want ErrInvalidStatus naming the status", err)
	}
}

// logWorkerOnFailure shows a session's worker log when the test fails: an
// ask's decisions are logged there.
func logWorkerOnFailure(t *testing.T, env *testEnv, name string) {
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(env.opts.StateDir, "sessions", name, "worker.log"))
			t.Logf("worker log of %s:\n%s", name, b)
		}
	})
}

// TestAttachToAnOlderWorker drives the attach a Manager falls back to for a
// worker started by an older agentd (output as notifications, input as
// calls), which workers still serve.
func TestAttachToAnOlderWorker(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "old", Argv: []string{"sh", "-i"}, Env: []string{"PS1=prompt$ "}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "old", Until: `prompt\$`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	h, _, err := m.lookup(ctx, "old")
	if err != nil || h == nil {
		t.Fatalf("lookup: %v, %v", h, err)
	}
	pr, pw := io.Pipe()
	rw := &pipeRW{r: pr}
	errs := make(chan error, 1)
	go func() { errs <- m.attachByNotes(ctx, "old", h, rw) }()
	await(t, 5*time.Second, "the repaint", func() bool { return strings.Contains(rw.String(), "prompt$") })
	if _, err := pw.Write([]byte("echo old-way-$((6*7))\r")); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "the output", func() bool { return strings.Contains(rw.String(), "old-way-42") })
	pw.Close()
	if err := <-errs; err != nil {
		t.Errorf("detach by EOF: %v", err)
	}
}

// TestAProgramThatEndsAtOnceKeepsItsPid: a program that exits before the
// worker has noted its pid is reaped at once, and the pid must still be
// the one it ran with (it was read after the reaper had released the
// process, and a status said "program -1").
func TestAProgramThatEndsAtOnceKeepsItsPid(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := context.Background()
	for i := range 10 {
		name := "brief" + strconv.Itoa(i)
		if _, err := m.Spawn(ctx, SpawnRequest{Name: name, Argv: []string{"true"}, Cwd: "/"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Wait(ctx, WaitRequest{Name: name, Exit: true, Timeout: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		info, err := m.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if info.ProgramPID <= 0 {
			t.Fatalf("%s: program pid %d after it ended; want the pid it ran with", name, info.ProgramPID)
		}
	}
}
