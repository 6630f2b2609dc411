package ttyready

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How names the wait in which the foreground program reads its terminal.
type How string

// The waits a reader can be found in.
const (
	HowRead   How = "read"   // read, readv, pread64, preadv, preadv2 on the terminal
	HowPoll   How = "poll"   // poll or ppoll with the terminal among its fds, for input
	HowSelect How = "select" // select or pselect6 with the terminal in its read set
	HowEpoll  How = "epoll"  // epoll_wait, epoll_pwait or epoll_pwait2 on an epoll watching the terminal for input
)

// Waiter identifies one blocked wait of one thread: the same Waiter in two
// looks means the thread stayed in that wait in between, never running.
// Where the kernel does not count runs (Runs 0, no CONFIG_SCHED_INFO),
// equal Waiters only mean the same thread in the same system call, which
// it may have left and entered again in between.
type Waiter struct {
	PID     int    // the process
	TID     int    // its thread blocked on the terminal
	Syscall int    // the system call's number on this architecture
	Runs    uint64 // how often the thread had been put on a CPU (/proc/PID/task/TID/schedstat); 0 where the kernel does not count
}

// State is what one look saw. The zero State is unknown.
type State struct {
	// At is when the look began.
	At time.Time
	// Known is false when the kernel's answer was not available: the
	// foreground group's processes cannot be seen or read (another pid
	// namespace that is not below ours, /proc denying access, no such
	// terminal...). Reason says why; callers fall back to heuristics.
	Known bool
	// Pgrp is the terminal's foreground process group (TIOCGPGRP on the
	// master), in our pid namespace; 0 when it has none.
	Pgrp int
	// Reading: a thread of a process of the foreground group is blocked
	// reading the terminal, in the way How says. Reader is that wait.
	Reading bool
	How     How
	Reader  Waiter
	// Timed: the reader's wait has a timeout, Timeout, as the program
	// gave it when it began to wait (or when the kernel restarted the
	// call after a stop): the wait ends by then at the latest,
	// measured from a moment before the look, not from the look. From the
	// call's own argument: an int of milliseconds for poll, epoll_wait and
	// epoll_pwait (negative: none), a struct timespec (ppoll, pselect6,
	// epoll_pwait2) or timeval (select) read from the process's memory
	// (NULL: none). select's timeval is the one the program passed: Linux
	// writes the time left into it only when the call returns. A read has
	// a timeout only on a non-canonical terminal with VMIN 0 and VTIME >
	// 0 (VTIME tenths of a second); with VMIN > 0 its timer starts only
	// after a first byte. A reader with no timeout waits only for its
	// files; a timed one may be a program waiting for its own timer (node
	// awaiting a setTimeout, a spinner), so Ready and Timed together do
	// not mean that it waits for a person (see the package comment).
	// False, 0 when not Reading.
	Timed   bool
	Timeout time.Duration
	// InputQueued is how many bytes typed the program has not read yet
	// (TIOCINQ on the slave). With a canonical (line-edited) terminal the
	// kernel counts only complete lines: "abc" typed without Enter is the
	// line being edited, not given to the program, and counts 0 — the
	// program is still waiting for the rest of the line. -1 when unknown.
	InputQueued int
	// OutputPending is how many bytes the program wrote that no one has
	// read from the master yet (FIONREAD on the master), after the
	// kernel's flip buffer was flushed. -1 when unknown.
	OutputPending int
	// MasterRead is how many bytes had been read through Probe.Read when
	// OutputPending was counted (no Read was between its read and its
	// count then). When Ready, everything the program wrote before it
	// blocked is within the first MasterRead bytes read through Read.
	MasterRead uint64
	// Canonical and Echo are the terminal's ICANON and ECHO modes, as the
	// program set them (the master reports the slave's termios).
	Canonical bool
	Echo      bool
	// Ready = Known && Reading && InputQueued == 0 && OutputPending == 0,
	// and no other process of the foreground group seen by the look was
	// running.
	Ready bool
	// Reason, when not Ready, says in a few words what the foreground
	// program is doing ("sleeping in clock_nanosleep (sleep, pid 42)",
	// "running (python3, pid 7)", "no foreground process", "4 bytes of
	// input not read yet"...), or, when not Known, why not.
	Reason string
}

// Probe looks at one pseudo-terminal from the side of its master. Its
// methods are safe for concurrent use; looks are serialised.
type Probe struct {
	master    *os.File
	slavePath string
	rdev      uint64 // the slave's device number, as st_rdev
	ino       uint64 // the slave's inode in devpts
	sdev      uint64 // devpts' device, as the kernel encodes it in fdinfo

	// Lock order: mu, then readMu.
	mu      sync.Mutex // held by a look: the fields below
	buf     []byte     // /proc files
	mem     []byte     // fd arrays and sets read from a process's memory
	members memberCache
	tasks   []*taskFiles // threads whose /proc files are open
	looks   uint64       // looks so far, to age tasks
	closed  bool

	readMu    sync.Mutex // held by Read around a read and its count, and by a look around counting the master's queue
	readCount uint64     // bytes read through Read

	noFlush bool // tests: measure the queues without flushing, to show the window
}

// New returns a Probe of the terminal whose master is master. The master
// is used through SyscallConn, so it stays non-blocking; the slave is
// found with TIOCGPTN and must be reachable as /dev/pts/N.
func New(master *os.File) (*Probe, error) {
	var n int
	if err := control(master, func(fd int) (err error) {
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	}); err != nil {
		return nil, fmt.Errorf("ttyready: %s is not a pseudo-terminal master (TIOCGPTN: %w)", master.Name(), err)
	}
	p := &Probe{master: master, slavePath: "/dev/pts/" + strconv.Itoa(n), buf: make([]byte, 16<<10)}
	var st unix.Stat_t
	if err := unix.Stat(p.slavePath, &st); err != nil {
		return nil, fmt.Errorf("ttyready: the terminal's slave: %w (is devpts mounted on /dev/pts?)", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, fmt.Errorf("ttyready: %s is not a character device", p.slavePath)
	}
	p.rdev, p.ino = st.Rdev, st.Ino
	p.sdev = uint64(unix.Major(st.Dev))<<20 | uint64(unix.Minor(st.Dev))
	return p, nil
}

// Look looks once: who is in the foreground, whether it reads the
// terminal, and what is queued either way. It costs a few dozen system
// calls when the foreground group's leader is the reader, more when other
// members must be found. It never blocks on the program.
func (p *Probe) Look() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.looks++
	var s State
	if p.closed {
		s.At, s.InputQueued, s.OutputPending = time.Now(), -1, -1
		s.Reason = "the probe is closed"
		return s
	}
	for attempt := 0; ; attempt++ {
		s = State{At: time.Now(), InputQueued: -1, OutputPending: -1}
		if !supported {
			s.Reason = "unsupported architecture: its system calls are not known here"
			return s
		}
		if p.look(&s) || attempt == 2 {
			break
		}
	}
	return s
}

// look fills s and reports whether it is consistent: false when the reader
// ran during the look, so that the queues were measured while it may have
// been consuming or producing.
func (p *Probe) look(s *State) bool {
	var pgrp int
	var tio *unix.Termios
	if err := control(p.master, func(fd int) (err error) {
		if pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
			return fmt.Errorf("TIOCGPGRP: %w", err)
		}
		if tio, err = unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			return fmt.Errorf("TCGETS: %w", err)
		}
		return nil
	}); err != nil {
		s.Reason = "cannot ask the terminal for its foreground process group: " + err.Error()
		return true
	}
	s.Pgrp = pgrp
	s.Canonical = tio.Lflag&unix.ICANON != 0
	s.Echo = tio.Lflag&unix.ECHO != 0

	var f found
	if pgrp > 0 {
		if err := p.find(pgrp, &f); err != nil {
			s.Reason = err.Error()
			return true
		}
	}
	in, out, read, err := p.queues()
	if err != nil {
		s.Reason = err.Error()
		return true
	}
	s.Known = true
	s.MasterRead = read
	s.InputQueued, s.OutputPending = in, out
	if f.reader != nil {
		// The queues mean what they say about the reader only if it did
		// not run while they were measured.
		if !p.stillWaiting(f.reader) {
			s.Reason = "running (" + f.reader.who() + ")"
			return false
		}
		s.Reading, s.How, s.Reader = true, f.how, f.reader.w
		s.Timed, s.Timeout = f.reader.timed, f.reader.timeout
		if s.How == HowRead && !s.Canonical && tio.Cc[unix.VMIN] == 0 && tio.Cc[unix.VTIME] > 0 {
			// n_tty's read waits VTIME tenths of a second for a byte.
			s.Timed, s.Timeout = true, time.Duration(tio.Cc[unix.VTIME])*100*time.Millisecond
		}
	}
	switch {
	case pgrp <= 0:
		s.Reason = "no foreground process"
	case f.count == 0 || !s.Reading && f.busy == nil:
		s.Reason = "no foreground process (process group " + strconv.Itoa(pgrp) + " is empty)"
	case !s.Reading:
		s.Reason = f.busy.doing + " (" + f.busy.who() + ")"
	case f.running != nil:
		s.Reason = "reading, but " + f.running.who() + " is running"
	case in != 0:
		s.Reason = strconv.Itoa(in) + " bytes of input not read yet"
	case out != 0:
		s.Reason = strconv.Itoa(out) + " bytes of output not read from the terminal yet"
	default:
		s.Ready = true
	}
	return true
}

// queues measures the input not yet read by the program (the slave's
// queue) and the output not yet read from the master. Each side is polled
// first: n_tty's poll runs the port's pending flip-buffer work
// (tty_buffer_flush_work) when nothing is readable yet, so bytes written
// to the other side before the poll are counted. The slave side goes
// first, because what it receives may echo into the master's queue.
func (p *Probe) queues() (in, out int, read uint64, err error) {
	sfd, err := unix.Open(p.slavePath, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("cannot open the terminal %s to count its input: %w", p.slavePath, err)
	}
	in, err = flushAndCount(sfd, !p.noFlush)
	unix.Close(sfd)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("cannot count the input queued on %s: %w", p.slavePath, err)
	}
	p.readMu.Lock()
	defer p.readMu.Unlock()
	if err = control(p.master, func(fd int) (err error) {
		out, err = flushAndCount(fd, !p.noFlush)
		return err
	}); err != nil {
		return 0, 0, 0, fmt.Errorf("cannot count the output queued on the terminal's master: %w", err)
	}
	return in, out, p.readCount, nil
}

// Read reads the program's output from the master as master.Read does
// (waiting for data, within the master's read deadline; EIO once the
// terminal hangs up, io.EOF if a read ever returns nothing) and counts it, so that a look can tell how
// much of the output had been read when it counted the master's queue
// (State.MasterRead). A caller that reads the master only through Read
// knows, from one Ready look, exactly which bytes the program printed
// before it blocked: no interval, no second look.
func (p *Probe) Read(b []byte) (int, error) {
	sc, err := p.master.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	err = sc.Read(func(fd uintptr) bool {
		p.readMu.Lock()
		defer p.readMu.Unlock()
		for {
			n, rerr = unix.Read(int(fd), b)
			if rerr != unix.EINTR {
				break
			}
		}
		if n > 0 {
			p.readCount += uint64(n)
		}
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, &os.PathError{Op: "read", Path: p.master.Name(), Err: rerr}
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func flushAndCount(fd int, flush bool) (int, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for flush {
		_, err := unix.Poll(fds, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return 0, err
		}
	}
	return unix.IoctlGetInt(fd, unix.TIOCINQ)
}

// Close releases the /proc files the probe holds open. It does not close
// the master. Looks after Close are unknown.
func (p *Probe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.tasks) > 0 {
		p.dropTask(p.tasks[0])
	}
	p.closed = true
	return nil
}

// stillWaiting reports whether the reader has not run since it was looked
// at: its run count is the same or, where the kernel does not count, it
// is still in the same system call with the same arguments.
func (p *Probe) stillWaiting(t *thread) bool {
	if t.w.Runs != 0 {
		runs, ok := p.runs(t.w.PID, t.w.TID)
		return ok && runs == t.w.Runs
	}
	b, err := p.readTask(t.w.PID, t.w.TID, fileSyscall)
	if err != nil {
		return false
	}
	sc, ok := parseSyscall(b)
	return ok && sc == t.sc
}

// runs reads how often a thread has been put on a CPU.
func (p *Probe) runs(pid, tid int) (uint64, bool) {
	b, err := p.readTask(pid, tid, fileSchedstat)
	if err != nil {
		return 0, false
	}
	return parseSchedstat(b)
}

func control(f *os.File, fn func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// stopSignal returns the signal that stopped pid, when pid is our child
// and its stop has not been reported to a wait yet (waitid with WNOWAIT
// leaves it for whoever waits for it); else 0.
func stopSignal(pid int) int {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		return 0
	}
	if info.Signo != int32(unix.SIGCHLD) || info.Code != 5 { // CLD_STOPPED
		return 0
	}
	// si_status follows si_pid and si_uid in the SIGCHLD part of siginfo_t.
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(&info), 24)))
}
