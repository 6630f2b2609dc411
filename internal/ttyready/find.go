package ttyready

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// thread is one thread of a foreground process as a look saw it.
type thread struct {
	w     Waiter
	comm  string
	sc    sysCall // its system call, when blocked
	doing string  // what it does, for a Reason
	rank  int     // how telling doing is: the highest-ranked thread names the Reason

	// For the reader: whether its wait has a timeout, and how long.
	timed   bool
	timeout time.Duration
}

func (t *thread) who() string {
	return t.comm + ", pid " + strconv.Itoa(t.w.PID)
}

// found is what a look found in the foreground process group.
type found struct {
	reader  *thread // the thread blocked on the terminal
	how     How
	busy    *thread // the most telling thread that is not the reader
	running *thread // a running thread of a process other than the reader's
	count   int     // processes of the group seen
}

// Ranks of what a thread does, for the Reason when no one reads: a running
// or stopped program says more than a shell waiting for its child.
const (
	rankWaitChild = iota
	rankFutex
	rankExiting
	rankBlocked
	rankStopped
	rankRunning
)

func (f *found) note(t *thread) {
	if f.busy == nil || t.rank > f.busy.rank {
		f.busy = t
	}
}

// maxMembers bounds the processes a look visits when the group's leader
// does not read, and cacheFor how long a scan of all of /proc is reused.
const (
	maxMembers = 512
	cacheFor   = 250 * time.Millisecond
)

// memberCache holds the last scan of /proc for a process group, used when
// the group cannot be found from its leader or its session's leader.
type memberCache struct {
	pgrp int
	pids []int
	at   time.Time
}

// find looks for the reader in process group pgrp: the leader's main
// thread, then its other threads, then the group's other processes. An
// error means the group cannot be seen.
func (p *Probe) find(pgrp int, f *found) error {
	t, st, how, err := p.thread(pgrp, pgrp)
	if err != nil && !gone(err) {
		return err
	}
	leader := err == nil && st.pgrp == pgrp
	if leader {
		f.count++
		if p.take(t, how, f) {
			return nil
		}
		if st.nThreads > 1 {
			if err := p.otherThreads(pgrp, f, true); err != nil {
				return err
			}
		}
		if f.reader != nil {
			return nil
		}
	}
	sid := st.sid
	if !leader {
		if err := control(p.master, func(fd int) (err error) {
			sid, err = unix.IoctlGetInt(fd, unix.TIOCGSID)
			return err
		}); err != nil {
			sid = 0
		}
	}
	members, err := p.membersOf(pgrp, sid)
	if err != nil {
		return err
	}
	for _, pid := range members {
		if pid == pgrp && leader {
			continue
		}
		f.count++
		if err := p.process(pid, f); err != nil {
			return err
		}
	}
	if f.running != nil && f.reader != nil && f.running.w.PID == f.reader.w.PID {
		f.running = nil
	}
	return nil
}

// process looks at every thread of a member of the group other than its
// leader, main thread first, to find the reader and whether something
// else in the group is running.
func (p *Probe) process(pid int, f *found) error {
	t, st, how, err := p.thread(pid, pid)
	if err != nil {
		return ignoreGone(err)
	}
	p.take(t, how, f)
	if st.nThreads == 1 {
		return nil
	}
	return p.otherThreads(pid, f, false)
}

// otherThreads looks at the threads of pid but its main thread; with
// stopAtReader it stops at the reader.
func (p *Probe) otherThreads(pid int, f *found, stopAtReader bool) error {
	tids, err := threads(pid)
	if err != nil {
		return ignoreGone(err)
	}
	for _, tid := range tids {
		if tid == pid {
			continue
		}
		t, _, how, err := p.thread(pid, tid)
		if err != nil {
			if gone(err) {
				continue
			}
			return err
		}
		if p.take(t, how, f) && stopAtReader {
			return nil
		}
	}
	return nil
}

// take records t in f and reports whether it is the reader.
func (p *Probe) take(t *thread, how How, f *found) bool {
	if how != "" {
		if f.reader == nil {
			f.reader, f.how = t, how
		}
		return true
	}
	if t.rank == rankRunning && (f.running == nil || f.reader != nil && f.running.w.PID == f.reader.w.PID) {
		f.running = t
	}
	f.note(t)
	return false
}

// thread looks at one thread: its state, and for a blocked one its system
// call; how is set when that call waits on the terminal for input.
func (p *Probe) thread(pid, tid int) (t *thread, st taskStat, how How, err error) {
	t = &thread{w: Waiter{PID: pid, TID: tid, Syscall: -1}}
	// The run count first: if it is unchanged at the end of the look, the
	// state read now held all along.
	t.w.Runs, _ = p.runs(pid, tid)
	b, err := p.readTask(pid, tid, fileStat)
	if err != nil {
		return nil, st, "", p.denied(pid, err)
	}
	st, ok := parseStat(b)
	if !ok {
		return nil, st, "", fmt.Errorf("cannot parse /proc/%d/task/%d/stat", pid, tid)
	}
	t.comm = st.comm
	switch st.state {
	case 'R':
		t.doing, t.rank = "running", rankRunning
		return t, st, "", nil
	case 'T':
		t.doing, t.rank = "stopped", rankStopped
		if st.ppid == os.Getpid() {
			if sig := stopSignal(pid); sig != 0 {
				t.doing = "stopped (" + unix.SignalName(unix.Signal(sig)) + ")"
			}
		}
		return t, st, "", nil
	case 't':
		t.doing, t.rank = "stopped by a debugger", rankStopped
		return t, st, "", nil
	case 'Z', 'X':
		t.doing, t.rank = "exiting", rankExiting
		return t, st, "", nil
	}
	b, err = p.readTask(pid, tid, fileSyscall)
	if err != nil {
		return nil, st, "", p.denied(pid, err)
	}
	sc, ok := parseSyscall(b)
	if !ok {
		return nil, st, "", fmt.Errorf("cannot parse /proc/%d/task/%d/syscall", pid, tid)
	}
	t.w.Syscall, t.sc = sc.nr, sc
	switch sc.nr {
	case -2:
		t.doing, t.rank = "running", rankRunning
		return t, st, "", nil
	case -1:
		t.doing, t.rank = "sleeping outside a system call", rankBlocked
		return t, st, "", nil
	}
	info, known := syscalls[sc.nr]
	if !known {
		t.doing, t.rank = "blocked in system call "+strconv.Itoa(sc.nr), rankBlocked
		return t, st, "", nil
	}
	var onTerm bool
	switch info.kind {
	case waitRead:
		onTerm, err = p.isTerminal(pid, int(int32(sc.args[0])), st.ttyNr)
	case waitPoll:
		onTerm, err = p.pollsTerminal(pid, sc.args[0], sc.args[1], st.ttyNr)
	case waitSelect:
		onTerm, err = p.selectsTerminal(pid, sc.args[0], sc.args[1], st.ttyNr)
	case waitEpoll:
		onTerm, err = p.epollWatchesTerminal(pid, int(int32(sc.args[0])), st.ttyNr)
	}
	if err != nil {
		return nil, st, "", p.denied(pid, err)
	}
	if onTerm {
		if t.timed, t.timeout, err = p.timeout(pid, sc, info); err != nil {
			return nil, st, "", p.denied(pid, err)
		}
		return t, st, info.kind.how(), nil
	}
	t.rank = rankBlocked
	switch {
	case info.kind == waitRead:
		t.doing = "reading another file (fd " + strconv.Itoa(int(int32(sc.args[0])))
		if target, err := os.Readlink(pidPath(pid, "/fd/"+strconv.Itoa(int(int32(sc.args[0]))))); err == nil {
			t.doing += ": " + target
		}
		t.doing += ")"
	case info.kind != waitOther:
		t.doing = "waiting in " + info.name + " for other files"
	case sc.nr == unix.SYS_WAIT4 || sc.nr == unix.SYS_WAITID:
		t.doing, t.rank = "waiting for a child process in "+info.name, rankWaitChild
	case sc.nr == unix.SYS_FUTEX:
		t.doing, t.rank = "waiting on a futex", rankFutex
	case sc.nr == unix.SYS_NANOSLEEP || sc.nr == unix.SYS_CLOCK_NANOSLEEP:
		t.doing = "sleeping in " + info.name
	default:
		t.doing = "blocked in " + info.name
	}
	return t, st, "", nil
}

// isTerminal reports whether fd of pid is this terminal: its device is the
// slave's, or it is /dev/tty and pid's controlling terminal is the slave.
func (p *Probe) isTerminal(pid, fd int, ttyNr uint64) (bool, error) {
	if fd < 0 {
		return false, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(pidPath(pid, "/fd/"+strconv.Itoa(fd)), &st); err != nil {
		if gone(err) {
			return false, nil // closed since, or never open
		}
		return false, err
	}
	return p.isOurs(st.Rdev, st.Mode, ttyNr), nil
}

var devTTY = unix.Mkdev(5, 0)

func (p *Probe) isOurs(rdev uint64, mode uint32, ttyNr uint64) bool {
	if mode&unix.S_IFMT != unix.S_IFCHR {
		return false
	}
	return rdev == p.rdev || rdev == devTTY && ttyNr == p.rdev
}

// maxPollFds bounds the fd array read from a poll; maxSelectFds the
// fd_set read from a select.
// POLLRDNORM and POLLRDBAND, the same on every Linux architecture but
// MIPS and SPARC, which are not supported here.
const (
	pollRdNorm = 0x40
	pollRdBand = 0x80
)

const (
	maxPollFds   = 4096
	maxSelectFds = 1 << 16
)

func (p *Probe) pollsTerminal(pid int, addr, nfds uint64, ttyNr uint64) (bool, error) {
	if nfds == 0 || addr == 0 {
		return false, nil
	}
	n := int(min(nfds, maxPollFds))
	b := p.memBuf(n * pollfdSize)
	if err := readMem(pid, addr, b); err != nil {
		return false, fmt.Errorf("cannot read the fds of %s's poll: %w", comm(pid), err)
	}
	const input = unix.POLLIN | unix.POLLPRI | pollRdNorm | pollRdBand
	for i := range n {
		e := b[i*pollfdSize:]
		fd := int32(le32(e))
		events := int16(uint16(e[4]) | uint16(e[5])<<8)
		if fd < 0 || events&input == 0 {
			continue
		}
		if ok, err := p.isTerminal(pid, int(fd), ttyNr); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

func (p *Probe) selectsTerminal(pid int, nfds, readfds uint64, ttyNr uint64) (bool, error) {
	if nfds == 0 || readfds == 0 {
		return false, nil
	}
	n := int(min(nfds, maxSelectFds))
	b := p.memBuf((n + 63) / 64 * 8)
	if err := readMem(pid, readfds, b); err != nil {
		return false, fmt.Errorf("cannot read the fd set of %s's select: %w", comm(pid), err)
	}
	for fd := range n {
		if b[fd/8]&(1<<(fd%8)) == 0 {
			continue
		}
		if ok, err := p.isTerminal(pid, fd, ttyNr); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// timeout reads the timeout a waiting system call was given, from its
// argument or, for a pointer, from the process's memory, which holds the
// value it passed while it waits (the kernel copied it in, and writes the
// time left back only when the call returns: select, and pselect6 and
// ppoll unless the process has STICKY_TIMEOUTS). A call restarted after a
// signal that ran no handler was given the time left at the restart.
func (p *Probe) timeout(pid int, sc sysCall, info sysInfo) (timed bool, d time.Duration, err error) {
	arg := sc.args[info.tArg]
	switch info.timeout {
	case timeoutMillis:
		ms := int32(arg)
		if ms < 0 {
			return false, 0, nil
		}
		return true, time.Duration(ms) * time.Millisecond, nil
	case timeoutTimespec, timeoutTimeval:
		if arg == 0 {
			return false, 0, nil
		}
		b := p.memBuf(16) // struct timespec and struct timeval: two 64-bit fields
		if err := readMem(pid, arg, b); err != nil {
			return false, 0, fmt.Errorf("cannot read the timeout of %s's %s: %w", comm(pid), info.name, err)
		}
		sec, frac := int64(le64(b)), int64(le64(b[8:]))
		unit := time.Nanosecond
		if info.timeout == timeoutTimeval {
			unit = time.Microsecond
		}
		const maxSec = int64(1<<63-1) / int64(time.Second)
		if sec < 0 || frac < 0 {
			return true, 0, nil // the kernel refuses it (EINVAL); not seen blocked
		}
		if sec >= maxSec {
			return true, time.Duration(1<<63 - 1), nil
		}
		return true, time.Duration(sec)*time.Second + time.Duration(frac)*unit, nil
	}
	return false, 0, nil
}

// epollWatchesTerminal reads the interest list of pid's epoll fd from
// /proc/PID/fdinfo/EPFD: one "tfd: FD events: HEX data: HEX pos:N ino:HEX
// sdev:HEX" line per watched file. The terminal is watched for input when
// a line with EPOLLIN names the slave's inode on devpts, or a /dev/tty fd
// of a process whose controlling terminal is the slave.
func (p *Probe) epollWatchesTerminal(pid, epfd int, ttyNr uint64) (bool, error) {
	b, err := p.readAll(pidPath(pid, "/fdinfo/"+strconv.Itoa(epfd)))
	if err != nil {
		if gone(err) {
			return false, nil
		}
		return false, err
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if !bytes.HasPrefix(line, []byte("tfd:")) {
			continue
		}
		tfd, events, ino, sdev, ok := parseTfd(line)
		if !ok || events&unix.EPOLLIN == 0 {
			continue
		}
		if ino == p.ino && sdev == p.sdev {
			return true, nil
		}
		var st unix.Stat_t
		if unix.Stat(pidPath(pid, "/fd/"+strconv.Itoa(tfd)), &st) == nil && st.Ino == ino && p.isOurs(st.Rdev, st.Mode, ttyNr) {
			return true, nil
		}
	}
	return false, nil
}

// parseTfd parses "tfd:        0 events:       19 data: 0 pos:0 ino:3 sdev:18".
func parseTfd(line []byte) (fd int, events uint32, ino, sdev uint64, ok bool) {
	f := bytes.Fields(line)
	var haveFd, haveEv, haveIno, haveDev bool
	for i := 0; i < len(f); i++ {
		k := f[i]
		switch {
		case bytes.Equal(k, []byte("tfd:")) && i+1 < len(f):
			i++
			n, err := strconv.Atoi(string(f[i]))
			fd, haveFd = n, err == nil
		case bytes.Equal(k, []byte("events:")) && i+1 < len(f):
			i++
			n, err := strconv.ParseUint(string(f[i]), 16, 32)
			events, haveEv = uint32(n), err == nil
		case bytes.HasPrefix(k, []byte("ino:")):
			n, err := strconv.ParseUint(string(k[4:]), 16, 64)
			ino, haveIno = n, err == nil
		case bytes.HasPrefix(k, []byte("sdev:")):
			n, err := strconv.ParseUint(string(k[5:]), 16, 64)
			sdev, haveDev = n, err == nil
		}
	}
	return fd, events, ino, sdev, haveFd && haveEv && haveIno && haveDev
}

// membersOf returns the processes of group pgrp: the descendants of the
// session's leader that are in the group (children files, so no scan of
// /proc), or, when that finds none, a scan of /proc, reused for cacheFor.
func (p *Probe) membersOf(pgrp, sid int) ([]int, error) {
	var members []int
	walked := false
	if sid > 0 {
		var err error
		members, walked, err = p.walk(sid, pgrp)
		if err != nil {
			return nil, err
		}
	}
	if walked && len(members) > 0 {
		return members, nil
	}
	c := &p.members
	if c.pgrp == pgrp && time.Since(c.at) < cacheFor {
		return c.pids, nil
	}
	pids, err := scan(pgrp, p.buf)
	if err != nil {
		return nil, err
	}
	*c = memberCache{pgrp: pgrp, pids: pids, at: time.Now()}
	return pids, nil
}

// walk visits root and its descendants, breadth first, through
// /proc/PID/task/TID/children, and returns those in group pgrp. walked is
// false when the kernel has no children files.
func (p *Probe) walk(root, pgrp int) (members []int, walked bool, err error) {
	queue := []int{root}
	for i := 0; i < len(queue) && i < maxMembers; i++ {
		pid := queue[i]
		st, err := p.procStat(pid)
		if err != nil {
			if gone(err) {
				continue
			}
			return nil, false, err
		}
		if st.pgrp == pgrp {
			members = append(members, pid)
		}
		tids := []int{pid}
		if st.nThreads > 1 {
			if tids, err = threads(pid); err != nil {
				continue
			}
		}
		for _, tid := range tids {
			b, err := readProc(taskPath(pid, tid, "children"), p.buf)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && pid == root && tid == pid {
					return nil, false, nil // no CONFIG_PROC_CHILDREN
				}
				continue
			}
			for _, c := range bytes.Fields(b) {
				if n, err := strconv.Atoi(string(c)); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return members, true, nil
}

// scan reads the stat of every process in /proc, at most maxScan of them,
// and returns those in group pgrp.
func scan(pgrp int, buf []byte) ([]int, error) {
	const maxScan = 1 << 15
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(maxScan)
	if err != nil && len(names) == 0 {
		return nil, fmt.Errorf("cannot list /proc: %w", err)
	}
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := readProc("/proc/"+name+"/stat", buf)
		if err != nil {
			continue
		}
		if st, ok := parseStat(b); ok && st.pgrp == pgrp {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// procStat reads the stat of pid's main thread, which has the process's
// group, session, parent and terminal.
func (p *Probe) procStat(pid int) (taskStat, error) {
	b, err := p.readTask(pid, pid, fileStat)
	if err != nil {
		return taskStat{}, err
	}
	st, ok := parseStat(b)
	if !ok {
		return taskStat{}, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	return st, nil
}

// threads lists the thread ids of pid.
func threads(pid int) ([]int, error) {
	d, err := os.Open(pidPath(pid, "/task"))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// readAll reads a /proc file that may be larger than one read (an epoll's
// fdinfo), growing the buffer up to 1 MiB.
func (p *Probe) readAll(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(p.buf) {
			if len(p.buf) >= 1<<20 {
				return p.buf[:n], nil
			}
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
		m, err := unix.Read(fd, p.buf[n:])
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return p.buf[:n], nil
		}
		n += m
	}
}

func (p *Probe) memBuf(n int) []byte {
	if cap(p.mem) < n {
		p.mem = make([]byte, n)
	}
	return p.mem[:n]
}

// denied turns a failure to read a process into the look's error, naming
// the likely cause when it is a permission.
func (p *Probe) denied(pid int, err error) error {
	if gone(err) {
		return err
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("cannot inspect %s: %w (only the program's owner, and under Yama's ptrace_scope 1 only an ancestor, may read its /proc entries)", comm(pid), err)
	}
	return fmt.Errorf("cannot inspect %s: %w", comm(pid), err)
}

// comm names a process for a message: "cat (pid 42)".
func comm(pid int) string {
	b, err := os.ReadFile(pidPath(pid, "/comm"))
	if err != nil {
		return "pid " + strconv.Itoa(pid)
	}
	return string(bytes.TrimSpace(b)) + " (pid " + strconv.Itoa(pid) + ")"
}

// gone reports whether err means the process or thread no longer exists.
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)
}

func ignoreGone(err error) error {
	if gone(err) {
		return nil
	}
	return err
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 {
	return uint64(le32(b)) | uint64(le32(b[4:]))<<32
}
