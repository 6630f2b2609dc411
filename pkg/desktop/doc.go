// Package desktop owns agentd's private X displays: desktops of their own
// for agents, so that an agent's windows, pointer and keyboard stay out of
// the person's way.
//
// A desktop is an X server (TigerVNC's Xvnc when installed, else Xvfb) with an optional small window manager
// (openbox) and a private D-Bus session bus, all owned by a desktop worker
// (`agentd desktop-worker`, the same binary) that runs detached in a
// process group of its own, like a session's worker. So a desktop outlives
// the daemon: a new Manager on the same state directory finds it again from
// its manifest (StateDir/desktops/<name>/manifest.json).
//
// It knows nothing of the wire, the screen or sessions: it must not import
// pkg/wire, pkg/daemon, pkg/session or pkg/capture. It exports Go types and
// the sentinel errors in errors.go, each of an internal/errkind kind, which
// pkg/daemon maps to a wire code.
//
// # Decisions
//
//   - Alive means the X socket answers: a connection setup with the
//     desktop's own cookie succeeds (probe.go). A lock file says nothing (a
//     tmp cleaner reaps it, a dead server leaves it), and neither does a
//     pid alone (the launcher may die while the server lives, or the
//     reverse).
//   - Readiness is Xvfb's own word: it is started with an explicit display
//     number and -displayfd, and the desktop is ready when the number comes
//     back on the pipe. A server that never writes it is killed at the
//     deadline (StartTimeout) and nothing is left behind. A display that
//     another server holds makes Xvfb exit before it writes: the next
//     candidate is tried, a few times, from a private range (FirstDisplay to
//     LastDisplay) above the numbers desktops and test servers usually take.
//   - Access: -auth with a fresh MIT-MAGIC-COOKIE-1 in a 0600 file beside
//     the manifest (one FamilyWild entry, so clients find it whatever
//     display number the server got), -nolisten tcp, -noreset, never -ac.
//     The abstract socket stays on: its bind is what makes a second server
//     on a taken number fail (with -nolisten local, Xvfb unlinks the live
//     server's file socket and takes the number over, the "display reused
//     while still alive" fault), and the cookie guards it as it guards the
//     file socket.
//   - The keyboard layout is US unless the desktop asks for another: Xvfb's
//     compiled-in default is us (it reads nothing of the host's layout), and
//     another layout is set with setxkbmap before the desktop is reported
//     ready.
//   - Ending a desktop ends its process group: SIGTERM, then SIGKILL after
//     StopGrace. The group is signalled only while one of its recorded
//     members (worker or server, by pid and start time) is still alive in
//     it, so a reused group id is never hit. Then every recorded member
//     still alive anywhere (one that left the group) is ended through a
//     pidfd, and only once each is confirmed gone are the X socket, the
//     lock file, the cookie and the bus socket removed: a server judged
//     while it still lives keeps its socket, and leaves it when it ends
//     later. A member that outlives SIGKILL fails the rm (ErrBusy) and the
//     desktop is kept for another.
//   - A server that dies is noticed by its worker (it is the worker's
//     child), which marks the manifest dead with the reason, ends the rest
//     of the group and cleans up; when the whole group is gone at once (kill
//     -9 of the group), List notices (the probe fails and no member lives)
//     and does the same. No server is ever restarted: a dead desktop stays
//     listed as dead until it is removed, so a crash cannot loop.
//   - Xvnc, when installed, is the default server (Spec.Server or
//     Options.DefaultServer say otherwise): one process for the
//     framebuffer, RandR resize and RFB, which a viewer of the desktop
//     speaks. It is started under the same rules as Xvfb (explicit
//     display, -displayfd with the deadline, -auth, -nolisten tcp,
//     -noreset, never -ac), and serves RFB only on a Unix socket:
//     -rfbport -1 (no TCP port; 0 would mean 5900+N), -rfbunixpath in the
//     desktop's directory (or the runtime directory when that path is too
//     long for a socket address), -rfbunixmode 0600. The socket is checked
//     to be a socket of mode 0600 before the desktop is ready.
//   - RFB without authentication (-SecurityTypes None) is acceptable only
//     because of those modes: the socket is 0600 and its directory 0700,
//     both owned by the person, so the kernel lets no other user connect()
//     to it, and the person's own processes can reach the desktop's X
//     server with its cookie anyway (a desktop is not a security boundary
//     against the same user). A VNC password would guard nothing more and
//     would be one more secret on disk. Never add a TCP listener or a
//     wider mode without real authentication.
//   - Resize (Xvnc only) goes through RandR with xrandr, and its result is
//     the server's word: the size in a fresh connection setup's answer,
//     which is also what List reports.
//   - The window manager starts with the desktop's first window, not with
//     the desktop (wm.go): the worker watches the root window and starts
//     openbox when a top-level window is first mapped, naming that window
//     _NET_ACTIVE_WINDOW so openbox gives it the focus; openbox adopts the
//     windows already shown. An idle desktop runs none (openbox is about
//     19.5 MB resident, more than the rest of an idle desktop over its X
//     server), and the desktop is ready when its server is. openbox says
//     when it has adopted the windows shown (its --startup command runs
//     `agentd desktop-worker wm-running`), and input batches wait until
//     then: keys typed while it reparents a window go nowhere. A window
//     manager that exits is started again at most three times in the
//     desktop's life, then the desktop goes on without one and its Reason
//     says so: a manager that cannot run cannot loop. Desktop.WMState says
//     which of these states it is in.
//   - The D-Bus session bus is started on demand: the worker listens on
//     the bus's socket (so the address a program gets is valid from the
//     start) and starts dbus-daemon on it, by systemd's socket-activation
//     protocol, when the first client connects. An idle desktop runs no
//     bus (dbus-daemon is about 4.5 MB resident), and the desktop is ready
//     without waiting for one.
//   - What a desktop keeps must live in its worker, which outlives agentd:
//     the clipboard's text is owned by the worker's own X connection,
//     handed over on the worker's control socket (control.go).
package desktop
