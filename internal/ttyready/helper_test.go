package ttyready

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv selects a helper program in the test binary (see TestMain).
const helperEnv = "TTYREADY_HELPER"

// helper runs the helper program named: "prompt" turns echo off, then
// writes a numbered prompt and at once reads a line, for ever; "stamp" does
// the same with the CLOCK_MONOTONIC time just before the write in its
// prompt. Both write and read with bare system calls, so nothing runs
// between the prompt and the read.
func helper(name string) int {
	switch name {
	case "own", "foreign":
		return unprivileged(name)
	case "wait":
		return wait(os.Getenv(waitEnv))
	}
	tio, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tio.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(0, unix.TCSETS, tio); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buf := make([]byte, 256)
	for i := 0; ; i++ {
		var prompt []byte
		switch name {
		case "prompt":
			prompt = fmt.Appendf(nil, "prompt %d> ", i)
		case "stamp":
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			prompt = fmt.Appendf(nil, "%020d> ", ts.Nano())
		default:
			fmt.Fprintln(os.Stderr, "unknown helper", name)
			return 2
		}
		if _, err := syscall.Write(1, prompt); err != nil {
			return 1
		}
		if n, err := syscall.Read(0, buf); n <= 0 || err != nil {
			return 0
		}
	}
}

// nobody is the ordinary user the unprivileged helpers become.
const nobody = 65534

// unprivileged drops root, then looks as an ordinary user would, and
// prints the last State as JSON: "own" at a cat it starts itself on a
// terminal it opens (an ordinary user's worker and its program), until
// ready; "foreign" once at the terminal whose master is fd 3, whose
// program it did not start and does not own.
func unprivileged(mode string) int {
	if err := syscall.Setgroups(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := syscall.Setgid(nobody); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := syscall.Setuid(nobody); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var s State
	switch mode {
	case "foreign":
		p, err := New(os.NewFile(3, "master"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		s = p.Look()
	case "own":
		master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		p, err := New(master)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		slave, err := os.OpenFile(p.slavePath, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cmd := exec.Command("cat")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		slave.Close()
		defer cmd.Process.Kill()
		for deadline := time.Now().Add(long); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if s = p.Look(); s.Ready {
				break
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
		return 1
	}
	return 0
}

// waitEnv tells the "wait" helper how to wait: "CALL TIMEOUT", CALL the
// name of a system call, TIMEOUT a duration or "none".
const waitEnv = "TTYREADY_WAIT"

// errNoCall is the exit status of the "wait" helper when this
// architecture has no such system call.
const errNoCall = 3

// wait blocks once in the system call named, made directly (no C library
// in between to change its arguments), waiting for input on the terminal
// (fd 0) with the timeout given: "read" is a read on a non-canonical
// terminal with VMIN 0 and VTIME the timeout, "read none" a read on a
// canonical one.
func wait(how string) int {
	call, tmo, _ := strings.Cut(how, " ")
	nr := -1
	for n, info := range syscalls {
		if info.name == call {
			nr = n
		}
	}
	if nr < 0 {
		fmt.Fprintf(os.Stderr, "no system call %q here\n", call)
		return errNoCall
	}
	timed := tmo != "none"
	var d time.Duration
	if timed {
		var err error
		if d, err = time.ParseDuration(tmo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	// The pointers are converted in the calls' argument lists, where the
	// compiler keeps what they point to in place.
	ms := uintptr(d.Milliseconds())
	tsp, tvp := new(unix.Timespec), new(unix.Timeval)
	*tsp, *tvp = unix.NsecToTimespec(d.Nanoseconds()), unix.NsecToTimeval(d.Nanoseconds())
	if !timed {
		ms, tsp, tvp = ^uintptr(0), nil, nil // -1, NULL
	}
	fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
	var set unix.FdSet
	set.Set(0)
	events := make([]unix.EpollEvent, 1)
	buf := make([]byte, 16)
	var errno syscall.Errno
	switch syscalls[nr].kind {
	case waitRead:
		tio, err := unix.IoctlGetTermios(0, unix.TCGETS)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if timed {
			tio.Lflag &^= unix.ICANON
			tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 0, uint8(d/(100*time.Millisecond))
		}
		if err := unix.IoctlSetTermios(0, unix.TCSETS, tio); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _, errno = syscall.Syscall(uintptr(nr), 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	case waitPoll:
		if call == "ppoll" {
			_, _, errno = syscall.Syscall6(uintptr(nr), uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(tsp)), 0, 8, 0)
		} else {
			_, _, errno = syscall.Syscall(uintptr(nr), uintptr(unsafe.Pointer(&fds[0])), 1, ms)
		}
	case waitSelect:
		if call == "select" {
			_, _, errno = syscall.Syscall6(uintptr(nr), 1, uintptr(unsafe.Pointer(&set)), 0, 0, uintptr(unsafe.Pointer(tvp)), 0)
		} else {
			_, _, errno = syscall.Syscall6(uintptr(nr), 1, uintptr(unsafe.Pointer(&set)), 0, 0, uintptr(unsafe.Pointer(tsp)), 0)
		}
	case waitEpoll:
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, 0, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if call == "epoll_pwait2" {
			_, _, errno = syscall.Syscall6(uintptr(nr), uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), 1, uintptr(unsafe.Pointer(tsp)), 0, 8)
		} else {
			_, _, errno = syscall.Syscall6(uintptr(nr), uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), 1, ms, 0, 8)
		}
	default:
		fmt.Fprintf(os.Stderr, "%s does not wait for input\n", call)
		return 2
	}
	if errno == unix.ENOSYS {
		return errNoCall
	}
	if errno != 0 {
		fmt.Fprintf(os.Stderr, "%s: %v\n", call, errno)
		return 1
	}
	fmt.Println("woken")
	return 0
}
