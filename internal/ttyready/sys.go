package ttyready

import "golang.org/x/sys/unix"

// waitKind is what a blocked system call is waiting for, as far as the
// terminal is concerned.
type waitKind uint8

const (
	waitOther  waitKind = iota
	waitRead            // read, readv, pread64, preadv, preadv2: fd in arg 0
	waitPoll            // poll, ppoll: struct pollfd array in arg 0, count in arg 1
	waitSelect          // select, pselect6: nfds in arg 0, read fd_set in arg 1
	waitEpoll           // epoll_wait, epoll_pwait, epoll_pwait2: epoll fd in arg 0
)

// how names the wait for State.How.
func (k waitKind) how() How {
	switch k {
	case waitRead:
		return HowRead
	case waitPoll:
		return HowPoll
	case waitSelect:
		return HowSelect
	case waitEpoll:
		return HowEpoll
	}
	return ""
}

// syscalls classifies the system calls of this architecture that matter
// here; the legacy ones (poll, select, epoll_wait) exist only on some
// architectures and are added in the per-architecture files.
var syscalls = func() map[int]sysInfo {
	m := map[int]sysInfo{
		unix.SYS_READ:            {"read", waitRead, untimed, 0},
		unix.SYS_READV:           {"readv", waitRead, untimed, 0},
		unix.SYS_PREAD64:         {"pread64", waitRead, untimed, 0},
		unix.SYS_PREADV:          {"preadv", waitRead, untimed, 0},
		unix.SYS_PREADV2:         {"preadv2", waitRead, untimed, 0},
		unix.SYS_PPOLL:           {"ppoll", waitPoll, timeoutTimespec, 2},
		unix.SYS_PSELECT6:        {"pselect6", waitSelect, timeoutTimespec, 4},
		unix.SYS_EPOLL_PWAIT:     {"epoll_pwait", waitEpoll, timeoutMillis, 3},
		unix.SYS_EPOLL_PWAIT2:    {"epoll_pwait2", waitEpoll, timeoutTimespec, 3},
		unix.SYS_WRITE:           {"write", waitOther, untimed, 0},
		unix.SYS_WRITEV:          {"writev", waitOther, untimed, 0},
		unix.SYS_NANOSLEEP:       {"nanosleep", waitOther, untimed, 0},
		unix.SYS_CLOCK_NANOSLEEP: {"clock_nanosleep", waitOther, untimed, 0},
		unix.SYS_WAIT4:           {"wait4", waitOther, untimed, 0},
		unix.SYS_WAITID:          {"waitid", waitOther, untimed, 0},
		unix.SYS_FUTEX:           {"futex", waitOther, untimed, 0},
		unix.SYS_RT_SIGSUSPEND:   {"rt_sigsuspend", waitOther, untimed, 0},
		unix.SYS_RT_SIGTIMEDWAIT: {"rt_sigtimedwait", waitOther, untimed, 0},
		unix.SYS_ACCEPT4:         {"accept4", waitOther, untimed, 0},
		unix.SYS_CONNECT:         {"connect", waitOther, untimed, 0},
		unix.SYS_RECVFROM:        {"recvfrom", waitOther, untimed, 0},
		unix.SYS_RECVMSG:         {"recvmsg", waitOther, untimed, 0},
		unix.SYS_FLOCK:           {"flock", waitOther, untimed, 0},
		unix.SYS_IO_URING_ENTER:  {"io_uring_enter", waitOther, untimed, 0},
	}
	for nr, s := range legacySyscalls {
		m[nr] = s
	}
	return m
}()

type sysInfo struct {
	name    string
	kind    waitKind
	timeout timeoutKind // how the call gives its timeout
	tArg    uint8       // in which argument
}

// timeoutKind is how a waiting system call is given its timeout.
type timeoutKind uint8

const (
	untimed         timeoutKind = iota // no timeout argument (read: see State.Timed for VTIME)
	timeoutMillis                      // an int of milliseconds; negative: none (poll, epoll_wait, epoll_pwait)
	timeoutTimespec                    // a pointer to struct timespec; NULL: none (ppoll, pselect6, epoll_pwait2)
	timeoutTimeval                     // a pointer to struct timeval; NULL: none (select)
)
