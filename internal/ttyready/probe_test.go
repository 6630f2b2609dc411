package ttyready

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const long = 20 * time.Second // generous: several engineers share two cores

func TestCatIsReadyWhenBlockedInRead(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	s := tm.await("cat ready", long, ready)
	if s.How != HowRead || s.Reader.PID != tm.cmd.Process.Pid || !s.Canonical || !s.Echo {
		t.Fatalf("got %s, want cat (pid %d) reading in read, canonical with echo", describe(s), tm.cmd.Process.Pid)
	}
	if s.Pgrp != tm.cmd.Process.Pid {
		t.Fatalf("foreground group %d, want cat's %d", s.Pgrp, tm.cmd.Process.Pid)
	}
	tm.write("abc\n")
	tm.awaitOutput("abc\r\nabc\r\n", long)
	tm.await("cat ready after a line", long, ready)
}

// TestTwoLooksInOneWaitNameOneWaiter: two Ready looks while cat stays in
// one read name the same Waiter, and a look after it read a line names
// another (what pkg/session's readiness compares to tell a wait it has
// typed into from a new one).
func TestTwoLooksInOneWaitNameOneWaiter(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	first := tm.await("cat ready", long, ready)
	second := tm.await("a later look", long, func(s State) bool { return s.At.Sub(first.At) >= time.Millisecond })
	if !second.Ready || second.Reader != first.Reader {
		t.Fatalf("a second look %v later, with cat still in its read, names another wait:\n%s\n%s", second.At.Sub(first.At), describe(first), describe(second))
	}
	tm.write("x\n")
	tm.awaitOutput("x\r\nx\r\n", long)
	third := tm.await("cat ready again", long, ready)
	if third.Reader == first.Reader {
		t.Fatalf("a look after cat read a line names the wait before it:\n%s\n%s", describe(first), describe(third))
	}
}

func TestPythonReadlineIsReady(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-q", "-i")
	s := tm.await("python3 ready", long, ready)
	t.Log(describe(s))
	if s.How != HowSelect && s.How != HowPoll {
		t.Fatalf("got %s, want python3's readline waiting in select or poll", describe(s))
	}
	tm.write("print(6*7)\n")
	tm.awaitOutput("42", long)
	tm.await("python3 ready after a line", long, ready)
}

func TestBashReadlineIsReady(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "bash", "--norc", "--noprofile", "-i")
	s := tm.await("bash ready", long, ready)
	t.Log(describe(s))
	if s.How == "" || s.Canonical {
		t.Fatalf("got %s, want bash's readline reading in raw mode", describe(s))
	}
	tm.write("echo $((6*7))\n")
	tm.awaitOutput("42", long)
	tm.await("bash ready after a line", long, ready)
}

func TestNodeREPLIsReadyInEpoll(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "node")
	s := tm.await("node ready", long, ready)
	t.Log(describe(s))
	if s.How != HowEpoll {
		t.Fatalf("got %s, want node waiting in epoll", describe(s))
	}
	tm.write("6*7\r")
	tm.awaitOutput("42", long)
	tm.await("node ready after a line", long, ready)
}

func TestSleepIsNotReading(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "sleep", "100")
	s := tm.await("sleep seen sleeping", long, func(s State) bool {
		return s.Known && strings.Contains(s.Reason, "sleeping")
	})
	for range 50 {
		if s = tm.probe.Look(); s.Ready || s.Reading || !strings.Contains(s.Reason, "sleeping in") {
			t.Fatalf("got %s, want sleep not reading, sleeping", describe(s))
		}
	}
}

func TestSilentReadIsReady(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "bash", "-c", "read -s x; echo got $x")
	s := tm.await("read -s ready", long, ready)
	t.Log(describe(s))
	if s.Echo {
		t.Fatalf("got %s, want echo off", describe(s))
	}
	tm.write("secret\n")
	tm.awaitOutput("got secret", long)
}

func TestPipelineReaderIsNotTheLeader(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "sh", "-c", "sleep 0.2; cat | cat")
	s := tm.await("the pipeline's first cat ready", long, ready)
	t.Log(describe(s))
	if s.Reader.PID == s.Pgrp || s.How != HowRead {
		t.Fatalf("got %s, want a reader other than the leader %d", describe(s), s.Pgrp)
	}
	if c := comm(s.Reader.PID); !strings.HasPrefix(c, "cat ") {
		t.Fatalf("the reader is %s, want cat", c)
	}
	tm.write("through\n")
	tm.awaitOutput("through\r\nthrough\r\n", long)
	tm.await("the pipeline ready again", long, ready)
}

func TestStoppedProgramIsNotReading(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	tm.await("cat ready", long, ready)
	pid := tm.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := tm.await("cat stopped", long, func(s State) bool { return strings.Contains(s.Reason, "stopped") })
	if s.Ready || s.Reading || !strings.Contains(s.Reason, "stopped (SIGSTOP)") {
		t.Fatalf("got %s, want not reading, stopped (SIGSTOP)", describe(s))
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	tm.await("cat ready once continued", long, ready)
}

func TestBusyProgramIsRunning(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-c", "while True: pass")
	tm.await("python3 running", long, func(s State) bool { return s.Known && strings.HasPrefix(s.Reason, "running") })
	for range 50 {
		if s := tm.probe.Look(); s.Ready || s.Reading {
			t.Fatalf("got %s, want a busy program not reading", describe(s))
		}
	}
}

func TestTypedInputIsQueuedWhileTheProgramSleeps(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "sh", "-c", "sleep 2; cat")
	tm.write("abc\n")
	s := tm.await("4 bytes queued while sleeping", long, func(s State) bool {
		return s.InputQueued == 4 && strings.Contains(s.Reason, "sleeping")
	})
	if s.Ready || s.Reading || !strings.Contains(s.Reason, "sleeping") {
		t.Fatalf("got %s, want not reading, sleeping, 4 bytes queued", describe(s))
	}
	tm.await("cat ready after reading the line", long, func(s State) bool { return s.Ready && s.InputQueued == 0 })
	tm.awaitOutput("abc\r\nabc\r\n", long)
}

func TestCanonicalPartialLineIsNotQueued(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	tm.await("cat ready", long, ready)
	tm.write("abc")
	tm.awaitOutput("abc", long)
	s := tm.await("cat still ready with a partial line", long, ready)
	if s.InputQueued != 0 {
		t.Fatalf("got %s, want a partial line not counted", describe(s))
	}
}

func TestNoForegroundProcessOnceTheProgramExits(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	tm.await("cat ready", long, ready)
	// Hold the slave open, so that the terminal outlives its session
	// leader and TIOCGPGRP still answers.
	slave, err := os.OpenFile(tm.probe.slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	tm.write("\x04") // end of file: cat exits
	tm.cmd.Wait()
	s := tm.probe.Look()
	if !s.Known || s.Ready || !strings.HasPrefix(s.Reason, "no foreground process") {
		t.Fatalf("got %s, want known, no foreground process", describe(s))
	}
}

func TestOtherPidNamespaceIsSeenFromOutside(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("unshare", "-p", "-f", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a pid namespace here: %v %s", err, bytes.TrimSpace(out))
	}
	tm := start(t, true, "unshare", "-p", "-f", "--mount-proc", "cat")
	s := tm.await("cat in its own pid namespace ready", long, ready)
	t.Log(describe(s))
	if s.Reader.PID == s.Pgrp || s.How != HowRead {
		t.Fatalf("got %s, want cat, not unshare, reading", describe(s))
	}
	tm.write("ns\n")
	tm.awaitOutput("ns\r\nns\r\n", long)
	tm.await("cat ready again", long, ready)
}

// TestPromptThenReadIsNeverReadyWhileThePromptIsUnread types a line to a
// program that, with echo off, answers each line with a prompt written
// just before it blocks in read again. The test reads nothing until the
// prompt is pending on the master, so a look that says ready before then
// has missed bytes still in the kernel's flip buffer.
func TestPromptThenReadIsNeverReadyWhileThePromptIsUnread(t *testing.T) {
	t.Parallel()
	tm := startEnv(t, false, []string{helperEnv + "=prompt"}, os.Args[0])
	iterations := 400
	if testing.Short() {
		iterations = 50
	}
	tm.readExactly("prompt 0> ")
	var early int
	for i := 1; i <= iterations; i++ {
		tm.write("x\n")
		want := "prompt " + strconv.Itoa(i) + "> "
		tm.await("prompt "+strconv.Itoa(i)+" pending", long, func(s State) bool {
			if s.Ready {
				early++
				t.Errorf("iteration %d: ready before the prompt was read: %s", i, describe(s))
			}
			return s.Reading && s.InputQueued == 0 && s.OutputPending == len(want)
		})
		if early > 0 {
			t.FailNow()
		}
		tm.readExactly(want)
		tm.await("ready once the prompt is read", long, ready)
	}
}

// readExactly reads len(want) bytes from the master and checks them.
func (tm *term) readExactly(want string) {
	tm.t.Helper()
	buf := make([]byte, len(want))
	tm.master.SetReadDeadline(time.Now().Add(long))
	for n := 0; n < len(buf); {
		k, err := tm.master.Read(buf[n:])
		if err != nil {
			tm.t.Fatalf("reading %q: got %q, %v", want, buf[:n+k], err)
		}
		n += k
	}
	if string(buf) != want {
		tm.t.Fatalf("read %q, want %q", buf, want)
	}
}

// runUnprivileged runs an unprivileged helper and decodes the State it
// prints.
func runUnprivileged(t *testing.T, mode string, extra ...*os.File) State {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to become an ordinary user (as an ordinary user, the other tests already show it)")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.ExtraFiles = extra
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v: %s", mode, err, stderr.Bytes())
	}
	var s State
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("helper %s printed %q: %v", mode, out, err)
	}
	return s
}

func TestOrdinaryUserSeesItsOwnProgramReady(t *testing.T) {
	t.Parallel()
	s := runUnprivileged(t, "own")
	if !s.Ready || s.How != HowRead {
		t.Fatalf("got %s, want cat ready in read, seen by an ordinary user", describe(s))
	}
}

func TestProgramOfAnotherUserIsUnknown(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "cat")
	tm.await("cat ready", long, ready)
	s := runUnprivileged(t, "foreign", tm.master)
	if s.Known || s.Ready || !strings.Contains(s.Reason, "permission denied") {
		t.Fatalf("got %s, want unknown: permission denied", describe(s))
	}
	t.Log(s.Reason)
}

func TestReadingDevTTYIsReading(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "sh", "-c", "read x </dev/tty; echo got $x")
	s := tm.await("read from /dev/tty ready", long, ready)
	if s.How != HowRead {
		t.Fatalf("got %s, want reading in read", describe(s))
	}
	tm.write("it\n")
	tm.awaitOutput("got it", long)
}

func TestPollOnTheTerminalIsReading(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-c",
		"import os, select; p = select.poll(); r, w = os.pipe(); p.register(r, select.POLLIN); p.register(0, select.POLLIN); p.poll(); print('polled')")
	s := tm.await("poll ready", long, ready)
	if s.How != HowPoll {
		t.Fatalf("got %s, want waiting in poll", describe(s))
	}
	tm.write("x\n")
	tm.awaitOutput("polled", long)
}

func TestPollOnOtherFilesIsNotReading(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-c",
		"import os, select; r, w = os.pipe(); p = select.poll(); p.register(r, select.POLLIN); p.poll()")
	s := tm.await("python3 in poll", long, func(s State) bool { return strings.Contains(s.Reason, "poll") })
	if s.Ready || s.Reading || !strings.Contains(s.Reason, "for other files") {
		t.Fatalf("got %s, want not reading, waiting in poll for other files", describe(s))
	}
}

// TestReadyNamesTheBytesThatHoldThePrompt reads the master only through
// Probe.Read, and checks at every ready look that the bytes read by then
// end with the prompt the program wrote just before blocking: one look,
// no confirmation.
func TestReadyNamesTheBytesThatHoldThePrompt(t *testing.T) {
	t.Parallel()
	tm := startEnv(t, true, []string{helperEnv + "=prompt"}, os.Args[0])
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	for i := 0; i <= iterations; i++ {
		if i > 0 {
			tm.write("x\n")
		}
		want := "prompt " + strconv.Itoa(i) + "> "
		s := tm.await(want+"ready", long, ready)
		var out string
		for deadline := time.Now().Add(long); ; time.Sleep(time.Millisecond) {
			if out = tm.output(); uint64(len(out)) >= s.MasterRead || time.Now().After(deadline) {
				break
			}
		}
		if uint64(len(out)) < s.MasterRead || !strings.HasSuffix(out[:s.MasterRead], want) {
			t.Fatalf("iteration %d: ready with %d bytes read, which do not end with %q: %q", i, s.MasterRead, want, out)
		}
	}
}
