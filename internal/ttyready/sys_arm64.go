package ttyready

// supported is whether this architecture's system calls are known here
// (its numbers, and a little-endian 64-bit fd_set and struct pollfd).
const supported = true

// arm64 has no poll, select or epoll_wait: its C libraries call ppoll,
// pselect6 and epoll_pwait.
var legacySyscalls = map[int]sysInfo{}
