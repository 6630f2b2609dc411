package ttyready

import (
	"os"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestTheReadersTimeoutIsTheOneItGave blocks a program in each waiting
// system call, made directly, with and without a timeout, and checks the
// timeout a look reports: exactly the one given, in each call's own form.
// A read's is VTIME on a non-canonical terminal (tenths of a second, 25.5
// s at most).
func TestTheReadersTimeoutIsTheOneItGave(t *testing.T) {
	t.Parallel()
	const given = 123456 * time.Millisecond // 123 s and a fraction in every unit
	for _, c := range []struct {
		call  string
		how   How
		given time.Duration
	}{
		{"read", HowRead, 12300 * time.Millisecond},
		{"poll", HowPoll, given},
		{"ppoll", HowPoll, given},
		{"select", HowSelect, given},
		{"pselect6", HowSelect, given},
		{"epoll_wait", HowEpoll, given},
		{"epoll_pwait", HowEpoll, given},
		{"epoll_pwait2", HowEpoll, given},
	} {
		for _, timed := range []bool{false, true} {
			name, arg := c.call+"/none", "none"
			if timed {
				name, arg = c.call+"/timed", c.given.String()
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				nr := syscallNumber(c.call)
				if nr < 0 {
					t.Skipf("no %s on this architecture", c.call)
				}
				if c.call == "epoll_pwait2" && !haveEpollPwait2() {
					t.Skip("the kernel has no epoll_pwait2 (Linux 5.11)")
				}
				tm := startEnv(t, true, []string{helperEnv + "=wait", waitEnv + "=" + c.call + " " + arg}, os.Args[0])
				s := tm.await(c.call+" ready", long, ready)
				if s.How != c.how || s.Reader.Syscall != nr {
					t.Fatalf("got %s, want a reader in %s (%d)", describe(s), c.call, nr)
				}
				want := time.Duration(0)
				if timed {
					want = c.given
				}
				if s.Timed != timed || s.Timeout != want {
					t.Fatalf("got Timed %v, Timeout %v; want %v, %v: %s", s.Timed, s.Timeout, timed, want, describe(s))
				}
				tm.write("x\n")
				tm.awaitOutput("woken", long)
			})
		}
	}
}

// syscallNumber is the number of the system call named on this
// architecture, or -1.
func syscallNumber(name string) int {
	for nr, info := range syscalls {
		if info.name == name {
			return nr
		}
	}
	return -1
}

func haveEpollPwait2() bool {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(epfd)
	ts := new(unix.Timespec) // zero: return at once
	events := make([]unix.EpollEvent, 1)
	_, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), 1, uintptr(unsafe.Pointer(ts)), 0, 8)
	return errno != unix.ENOSYS
}

// TestPromptsWaitWithNoTimeout: readline (bash, python3) and node's REPL,
// idle at their prompts, wait for the terminal with no timeout. libuv
// gives epoll -1 when no timer is pending; node is run without V8's
// memory reducer, whose timers keep it timed for seconds after it starts
// (TestNodeIdleIsTimedWhileItsMemoryReducerWaits).
func TestPromptsWaitWithNoTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"bash", []string{"bash", "--norc", "--noprofile", "-i"}},
		{"python3", []string{"python3", "-q", "-i"}},
		{"node", []string{"node", "--no-memory-reducer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tm := start(t, true, c.argv...)
			s := tm.await(c.name+" ready", long, ready)
			t.Log(describe(s))
			if s.Timed || s.Timeout != 0 {
				t.Fatalf("got %s, want %s waiting with no timeout", describe(s), c.name)
			}
		})
	}
}

// TestNodeIdleIsTimedWhileItsMemoryReducerWaits: node idle at its prompt
// has a timer pending for some seconds after it starts (V8's memory
// reducer: 8 s, then 0.5 s; it is armed again after a command that
// allocates much), then waits with no timeout.
func TestNodeIdleIsTimedWhileItsMemoryReducerWaits(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "node")
	s := tm.await("node ready", long, ready)
	t.Log("first ready look: ", describe(s))
	start := time.Now()
	s = tm.await("node ready with no timeout", 2*long, func(s State) bool { return s.Ready && !s.Timed })
	t.Logf("no timeout %v later: %s", time.Since(start), describe(s))
}

// TestNodeAwaitingATimerIsTimed: node's REPL awaiting a setTimeout still
// watches the terminal (it is Ready), but libuv gives epoll the time to
// the timer. The timeout is the one given when the wait began: it does
// not count down while the same wait goes on.
func TestNodeAwaitingATimerIsTimed(t *testing.T) {
	t.Parallel()
	const timer = 3000 * time.Millisecond
	tm := start(t, true, "node", "--no-memory-reducer")
	tm.await("node ready", long, func(s State) bool { return s.Ready && !s.Timed })
	tm.write("await new Promise(r => setTimeout(r, " + strconv.Itoa(int(timer.Milliseconds())) + "))\r")
	// The REPL has a timer of its own for a few ms after a line; the
	// wait for the 3 s one is the long one.
	s := tm.await("node waiting for its timer", long, func(s State) bool { return s.Reading && s.Timed && s.Timeout > timer/3 })
	t.Log(describe(s))
	if s.How != HowEpoll || !s.Ready || s.Timeout <= 0 || s.Timeout > timer {
		t.Fatalf("got %s, want node ready in epoll with a timeout in (0, %v]", describe(s), timer)
	}
	later := tm.await("a later look", long, func(l State) bool { return l.At.Sub(s.At) >= 100*time.Millisecond })
	if later.Reader == s.Reader && later.Timeout != s.Timeout {
		t.Fatalf("the same wait's timeout changed from %v to %v: %s", s.Timeout, later.Timeout, describe(later))
	}
	tm.awaitOutput("undefined", long)
	s = tm.await("node idle again", long, func(s State) bool { return s.Ready && !s.Timed })
	if s.Timeout != 0 {
		t.Fatalf("got %s, want no timeout", describe(s))
	}
}

// TestPythonSelectWithATimeoutIsTimed: select.select with a timeout,
// through Python and the C library. 50 seconds, so that the program still
// waits when a busy machine lets the test look.
func TestPythonSelectWithATimeoutIsTimed(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-c", "import select, sys; select.select([sys.stdin], [], [], 50); print('selected')")
	s := tm.await("python3 in select", long, ready)
	t.Log(describe(s))
	if s.How != HowSelect || !s.Timed || s.Timeout <= 49*time.Second || s.Timeout > 50*time.Second {
		t.Fatalf("got %s, want waiting in select with a timeout of about 50s", describe(s))
	}
	tm.write("x\n")
	tm.awaitOutput("selected", long)
}

// TestPythonPollWithNoTimeoutIsNotTimed: poll with -1, through Python and
// the C library.
func TestPythonPollWithNoTimeoutIsNotTimed(t *testing.T) {
	t.Parallel()
	tm := start(t, true, "python3", "-c",
		"import select; p = select.poll(); p.register(0, select.POLLIN); p.poll(-1); print('polled')")
	s := tm.await("python3 in poll", long, ready)
	if s.How != HowPoll || s.Timed || s.Timeout != 0 {
		t.Fatalf("got %s, want waiting in poll with no timeout", describe(s))
	}
	tm.write("x\n")
	tm.awaitOutput("polled", long)
}
