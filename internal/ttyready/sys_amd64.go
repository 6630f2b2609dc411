package ttyready

import "golang.org/x/sys/unix"

// supported is whether this architecture's system calls are known here
// (its numbers, and a little-endian 64-bit fd_set and struct pollfd).
const supported = true

var legacySyscalls = map[int]sysInfo{
	unix.SYS_POLL:       {"poll", waitPoll, timeoutMillis, 2},
	unix.SYS_SELECT:     {"select", waitSelect, timeoutTimeval, 4},
	unix.SYS_EPOLL_WAIT: {"epoll_wait", waitEpoll, timeoutMillis, 3},
	unix.SYS_PAUSE:      {"pause", waitOther, untimed, 0},
	unix.SYS_ACCEPT:     {"accept", waitOther, untimed, 0},
}
