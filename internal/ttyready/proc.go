package ttyready

import (
	"bytes"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// readProc reads a small /proc file into buf with one open, read and close
// (os.ReadFile adds an fstat and an allocation per call, and a look reads
// several such files every millisecond).
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func pidPath(pid int, rest string) string {
	return "/proc/" + strconv.Itoa(pid) + rest
}

func taskPath(pid, tid int, file string) string {
	return "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/" + file
}

// taskStat is the part of /proc/PID/task/TID/stat a look uses.
type taskStat struct {
	comm     string
	state    byte // R, S, D, T, t, Z, X, I...
	ppid     int
	pgrp     int
	sid      int
	ttyNr    uint64 // the controlling terminal, encoded as st_rdev is
	nThreads int
}

// parseStat parses a stat line: "pid (comm) S ppid pgrp session tty_nr ...".
// The command name may hold spaces and parentheses, so it ends at the last
// ')'.
func parseStat(b []byte) (taskStat, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return taskStat{}, false
	}
	s := taskStat{comm: string(b[open+1 : end])}
	f := bytes.Fields(b[end+1:])
	if len(f) < 18 || len(f[0]) != 1 {
		return taskStat{}, false
	}
	s.state = f[0][0]
	var err error
	var tty int64
	if s.ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return taskStat{}, false
	}
	if s.pgrp, err = strconv.Atoi(string(f[2])); err != nil {
		return taskStat{}, false
	}
	if s.sid, err = strconv.Atoi(string(f[3])); err != nil {
		return taskStat{}, false
	}
	if tty, err = strconv.ParseInt(string(f[4]), 10, 64); err != nil {
		return taskStat{}, false
	}
	s.ttyNr = uint64(uint32(tty))
	if s.nThreads, err = strconv.Atoi(string(f[17])); err != nil {
		return taskStat{}, false
	}
	return s, true
}

// sysCall is /proc/PID/task/TID/syscall: the system call a blocked thread
// is in and its six arguments. nr is -1 for a thread blocked outside a
// system call, -2 for a running thread (whose registers the kernel does
// not show).
type sysCall struct {
	nr   int
	args [6]uint64
}

func parseSyscall(b []byte) (sysCall, bool) {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("running")) {
		return sysCall{nr: -2}, true
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return sysCall{}, false
	}
	nr, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return sysCall{}, false
	}
	c := sysCall{nr: nr}
	if nr < 0 {
		return c, true
	}
	if len(f) < 7 {
		return sysCall{}, false
	}
	for i := range c.args {
		v, err := strconv.ParseUint(string(bytes.TrimPrefix(f[i+1], []byte("0x"))), 16, 64)
		if err != nil {
			return sysCall{}, false
		}
		c.args[i] = v
	}
	return c, true
}

// parseSchedstat returns the third field of /proc/PID/task/TID/schedstat:
// how many times the thread has been put on a CPU. Equal counts at two
// instants mean the thread did not run in between.
func parseSchedstat(b []byte) (uint64, bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(f[2]), 10, 64)
	return n, err == nil
}

// readMem reads len(buf) bytes at addr in pid's memory: process_vm_readv,
// or /proc/PID/mem where that system call is missing or filtered. Both
// need the same ptrace access as /proc/PID/syscall, which an ancestor has
// under Yama's scope 1.
func readMem(pid int, addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err == nil && n == len(buf) {
		return nil
	}
	if err != nil && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, oerr := unix.Open(pidPath(pid, "/mem"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if oerr != nil {
		if err == nil {
			err = oerr
		}
		return err
	}
	defer unix.Close(fd)
	n, err = unix.Pread(fd, buf, int64(addr))
	if err != nil {
		return err
	}
	if n != len(buf) {
		return unix.EFAULT
	}
	return nil
}

// pollfdSize is the size of struct pollfd { int fd; short events; short
// revents; } on the supported architectures.
const pollfdSize = 8
