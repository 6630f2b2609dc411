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
// the sentinel errors in errors.go, which pkg/daemon maps to wire codes.
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
//     StopGrace, and then the X socket, the lock file, the cookie and the
//     bus socket are removed. The group is signalled only while one of its
//     recorded members (worker or server, by pid and start time) is still
//     alive in it, so a reused group id is never hit.
//   - A server that dies is noticed by its worker (it is the worker's
//     child), which marks the manifest dead with the reason, ends the rest
//     of the group and cleans up; when the whole group is gone at once (kill
//     -9 of the group), Sweep notices (the probe fails and no member lives)
//     and does the same. Nothing is ever restarted: a dead desktop stays
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
//   - The window manager is not waited for: the desktop is ready when its
//     server is. A window manager that dies is recorded, not restarted.
package desktop
