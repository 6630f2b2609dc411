// Package ttyready tells, from the kernel, whether the program in the
// foreground of a pseudo-terminal is waiting for input: it has read
// everything typed and is blocked reading its terminal again, and all it
// wrote before blocking has been read from the master. It is a fact, not
// a guess from the look of a prompt or a silence. It imports only the
// standard library and golang.org/x/sys/unix, and nothing of agentd.
//
// A Probe is made from the terminal's master (New); Probe.Look returns a
// State. The caller must be allowed to read the foreground processes'
// /proc entries (see Permissions); where it is not, or the answer is
// otherwise unavailable, the State is not Known and says why, and the
// caller falls back to heuristics.
//
// # What each look asks
//
//   - TIOCGPGRP on the master: the foreground process group, in our pid
//     namespace (a program in a child pid namespace is seen by its outer
//     pid, so unshare -p is handled; only a group outside our namespace
//     reads as 0). TCGETS on the master returns the slave's termios, from
//     which Canonical and Echo come.
//   - /proc/PID/task/TID/stat: the thread's state (R running, S or D
//     blocked, T stopped, t traced, Z exiting), its group and controlling
//     terminal. A stopped thread still shows its last system call in
//     /proc/PID/syscall, so the state is read first. The signal that
//     stopped a process is known only for our own children whose stop
//     was not yet reported to a wait (waitid with WNOWAIT, which leaves it
//     for the real waiter).
//   - /proc/PID/task/TID/syscall: the system call a blocked thread is in
//     and its arguments. read, readv, pread64, preadv and preadv2 on an fd
//     that is the terminal are HowRead. poll and ppoll are HowPoll when
//     their pollfd array (read from the process's memory with
//     process_vm_readv, or /proc/PID/mem where that is refused) asks for
//     input on the terminal; select and pselect6 are HowSelect when the
//     terminal is in their read set (the kernel copied the sets in; the
//     process's memory still holds them while it waits). epoll_wait,
//     epoll_pwait and epoll_pwait2 are HowEpoll when the epoll's interest
//     list (/proc/PID/fdinfo/EPFD, "tfd:" lines) watches the terminal for
//     EPOLLIN. An fd is the terminal when its st_rdev is the slave's, or
//     it is /dev/tty and the process's controlling terminal is the slave;
//     an epoll entry when its inode and device are the slave's (libuv, so
//     node, reopens the terminal by name: another fd, the same inode).
//     Nested epolls and io_uring reads are not followed. The wait's
//     timeout (Timed, Timeout) is the call's own argument: milliseconds
//     for poll, epoll_wait and epoll_pwait, a struct timespec (ppoll,
//     pselect6, epoll_pwait2) or timeval (select) read from the process's
//     memory; a read's is VTIME when the terminal is non-canonical with
//     VMIN 0.
//   - /proc/PID/task/TID/schedstat: how often the thread has been put on
//     a CPU. Read at the start and the end of a look, an unchanged count
//     proves the reader never ran while the queues were measured, so the
//     look is one consistent instant; a changed count makes the look
//     start again (three times at most, then "running").
//   - TIOCINQ on the slave: InputQueued, the bytes typed and not read. In
//     canonical mode the kernel counts only complete lines: a partial line
//     is the line being edited, not yet given to the program, which is
//     still waiting for its end, so it counts 0 and the program can be
//     Ready with "abc" typed and no Enter. The slave is opened by path
//     (O_RDWR|O_NOCTTY|O_CLOEXEC|O_NONBLOCK) for each look and closed at
//     once: a slave fd held by the caller would keep the terminal open
//     after the program exits, and the master would never see its hangup.
//   - FIONREAD on the master: OutputPending, the bytes the program wrote
//     that the master has not handed to a reader.
//
// # The flip buffer
//
// Bytes written to one side of a pty are not readable on the other at
// once: pty_write puts them in the other side's flip buffer and
// tty_flip_buffer_push hands them to the line discipline from a
// workqueue. So a program can write its prompt and block in read while
// FIONREAD on the master still says 0. BenchmarkFlipBuffer measures that
// window on the machine it runs on. Here (2 shared cores, with other
// people's builds and tests running, load 5-7) the prompt became readable
// a median of 5-21 µs after the write, p99 0.013-16 ms, at worst 8-136 ms;
// a look that did not account for it said ready with the prompt still
// unread for 0-12 % of prompts, the more the busier the machine.
//
// Each look therefore polls each side (poll with a zero timeout) before
// counting it: n_tty's poll runs the port's pending flip work
// (tty_buffer_flush_work) when nothing is readable yet, so every byte
// written before the poll is counted. The slave is polled first, since
// what it receives may echo into the master's queue. With the reader seen
// blocked before the polls and not having run until after them, all it
// wrote before blocking is in OutputPending or already read from the
// master. TestPromptThenReadIsNeverReadyWhileThePromptIsUnread checks
// this over hundreds of prompts.
//
// # Waiting for a person, or for a timer
//
// Ready says that the program waits for its terminal, not that it waits
// only for it. A reader blocked with no timeout (Timed false) waits only
// for its files, the terminal among them: readline in bash and python3
// waits in pselect6 with no timeout, cat in read. A timed wait may be a
// program with a timer pending that will wake it and go on without
// input: node's REPL awaiting new Promise(r => setTimeout(r, 3500)) is in
// epoll_wait with the terminal in its interest list, which makes it
// Ready, and with libuv's time to the next timer as the timeout; a TUI
// redraws a spinner the same way. Callers must not take a Ready, Timed
// look alone as waiting for a person.
//
// Untimed does not hold for every idle prompt either: libuv passes -1
// only when no timer is pending, and node arms timers of its own. Its
// REPL waits a few ms after each line, and V8's memory reducer keeps it
// waiting with timeouts of 8 s, then 0.5 s, for about 9 s after it starts
// and again after a line that allocated much (node --no-memory-reducer
// has none). A program can also be woken by a signal (alarm, a timer_create
// timer) or by another of its threads, which no timeout shows.
//
// Timeout is the timeout as given when the wait began, not the time left:
// the kernel keeps its own copy, so the program's memory still holds the
// value passed (select updates its timeval in place, and ppoll and
// pselect6 their timespec, only when the call returns). A select, ppoll
// or pselect6 interrupted by a signal that ran no handler (a stop and a
// continue) is restarted with the time left then. Two looks at the
// same Waiter see the same Timeout; the wait ends at most Timeout after
// it began, which was at or before the look.
//
// # Confirming
//
// One Ready look is exact about the kernel. What it cannot see by itself
// is the caller's own reader of the master: bytes read just before the
// look are no longer pending, but may not be counted or processed yet.
// The caller closes that gap by reading the master only through
// Probe.Read. It counts each read under the lock the look holds while
// counting the master's queue, so a Ready State's MasterRead says exactly
// how many bytes read hold everything the program printed before it
// blocked: once the caller has processed that many, the answer is
// complete. One look suffices (TestReadyNamesTheBytesThatHoldThePrompt).
//
// Input the caller writes while a look runs is the other gap: it can wake
// the program after its input queue was counted and before it has run,
// and a woken thread that has not run yet looks like one still waiting.
// A caller that writes concurrently with its looks notes what it had
// written before the look and counts the rest as not yet taken (the
// session worker does so for terminal replies).
//
// Ready also requires that no other process of the group seen by the
// look is running (a pipeline's later stage still writing). Only when
// the leader does not read are the other members looked at: a group
// whose leader reads while another member is busy is reported Ready on
// the leader's account; the confirmation's output count covers what that
// member prints in between.
//
// # Cost
//
// Look is meant to run every millisecond while an ask waits. It checks
// the group's leader (pid == pgrp), main thread first, and stops at the
// reader; only when the leader does not read does it find the other
// members: the descendants of the session's leader through
// /proc/PID/task/TID/children (bounded to 512 processes), or, when that
// finds none, a scan of /proc reused for 250 ms. The /proc files of the
// threads looked at stay open (16 threads at most) and are read with
// pread at offset 0, which regenerates them; an open file stays bound to
// its thread even if the pid is reused. BenchmarkLook, same machine: a
// look at cat, python3, node or bash waiting at its prompt costs 13-25
// µs (a timeout given by pointer adds one process_vm_readv of 16 bytes,
// 0.5-1 µs), at sleep 15-17 µs, at a pipeline whose reader is not the leader
// 40-60 µs (under two extra CPU hogs, several times that).
// Close releases the open files.
//
// # Permissions
//
// /proc/PID/syscall and /proc/PID/mem need ptrace attach access,
// /proc/PID/fd and fdinfo read access: the same user, a dumpable process
// and, under Yama's ptrace_scope 1, an ancestor. agentd's worker is the
// ancestor (and child subreaper) of every process on its terminal, so it
// has that access as an ordinary user; TestOrdinaryUserSeesItsOwnProgramReady
// checks it as uid 65534. A program of another user, a setuid program, one
// that made itself non-dumpable, or scope 2 and above give a State that
// is not Known ("permission denied"). Supported architectures are amd64
// and arm64, whose system call numbers and fd_set and pollfd layouts are
// checked; elsewhere every look is unknown.
package ttyready
