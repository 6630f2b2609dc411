package desktop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/BurntSushi/xgb"
	"golang.org/x/sys/unix"
)

// WorkerArg is the first argument that makes the agentd binary a desktop
// worker (cmd/agentd calls RunWorker).
const WorkerArg = "desktop-worker"

// workerSpec is what the Manager hands a new worker over the socket pair.
type workerSpec struct {
	Desktop    Desktop `json:"desktop"`
	Dir        string  `json:"dir"`
	Candidates []int   `json:"candidates"`
	Server     string  `json:"server"`
	WMPath     string  `json:"wm_path,omitempty"`
	SetXkbMap  string  `json:"setxkbmap,omitempty"`
	DBusDaemon string  `json:"dbus_daemon,omitempty"`
	BusPath    string  `json:"bus_path,omitempty"`
	// ControlPath is the worker's control socket (control.go).
	ControlPath string        `json:"control_path,omitempty"`
	Timeout     time.Duration `json:"timeout"`
	Grace       time.Duration `json:"grace"`
}

// workerReady is the worker's report: the desktop, or why it did not
// start (Busy: every candidate display was taken).
type workerReady struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error,omitempty"`
	Busy    bool     `json:"busy,omitempty"`
	Desktop *Desktop `json:"desktop,omitempty"`
}

// authorityName and busName are the files beside the manifest.
const authorityName = "Xauthority"

// RunWorker is `agentd desktop-worker`: it reads its specification from
// file descriptor 3 (a socket pair the Manager holds), starts the desktop,
// reports, and then owns the desktop's processes until the server dies or
// ctx ends (SIGTERM from desktop rm). It returns the exit status.
func RunWorker(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 2 && args[0] == wmRunningArg {
		return reportWMRunning(args[1], stderr)
	}
	if len(args) != 0 {
		fmt.Fprintln(stderr, "agentd desktop-worker takes no arguments; it is started by agentd itself")
		return 2
	}
	f := os.NewFile(3, "spawn")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(stderr, "agentd desktop-worker is started by agentd itself (no specification on fd 3):", err)
		return 2
	}
	var spec workerSpec
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewDecoder(conn).Decode(&spec); err != nil {
		fmt.Fprintln(stderr, "agentd desktop-worker: reading the specification:", err)
		return 2
	}
	w := &worker{spec: spec, log: stderr, d: spec.Desktop, wmRunning: make(chan struct{}, 1), wmSettled: make(chan struct{})}
	ready := w.start(ctx)
	if !ready.OK {
		w.stopAll()
		w.cleanup()
	}
	json.NewEncoder(conn).Encode(ready)
	conn.Close()
	if !ready.OK {
		fmt.Fprintln(stderr, "desktop did not start:", ready.Error)
		return 1
	}
	w.serve(ctx)
	return 0
}

// worker owns one desktop's processes.
type worker struct {
	spec workerSpec
	log  io.Writer
	d    Desktop

	server, wm, bus *exec.Cmd
	serverDone      chan error
	wmDone, busDone chan error

	watchMu  sync.Mutex    // guards wmWatch
	wmWatch  *xgb.Conn     // watches the root for the first window (wm.go)
	wmWanted chan struct{} // closed when that window is shown
	wmStarts int           // how many times the window manager was started
	// wmRunning hears the manager's --startup command (control.go).
	wmRunning chan struct{}
	wmMu      sync.Mutex    // guards wmSettled; taken after watchMu
	wmSettled chan struct{} // closed while no manager is adopting windows

	busL      *os.File      // the bus's listening socket until its first client
	busWanted chan struct{} // closed when that client connects

	ctl    *net.UnixListener // the control socket, nil when there is none
	clipMu sync.Mutex        // guards clip
	clip   *clipOwner        // the clipboard's owner, once text was set
}

// baseEnv is the environment of the desktop's processes: the worker's,
// without the person's display, Wayland socket, cookie and bus.
func (w *worker) baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "AGENTD_DESKTOP_DIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DISPLAY="+w.d.Display, "XAUTHORITY="+w.d.Authority)
}

func (w *worker) start(ctx context.Context) workerReady {
	fail := func(format string, args ...any) workerReady {
		return workerReady{Error: fmt.Sprintf(format, args...)}
	}
	w.d.Authority = filepath.Join(w.spec.Dir, authorityName)
	if _, err := writeAuthority(w.d.Authority); err != nil {
		return fail("%v", err)
	}
	deadline := time.Now().Add(w.spec.Timeout)
	t0 := time.Now()
	if len(w.spec.Candidates) == 0 {
		return workerReady{Busy: true, Error: "no display number to try"}
	}
	if serverErr, busy := w.startAnyServer(ctx, deadline); serverErr != nil {
		return workerReady{Busy: busy, Error: serverErr.Error()}
	}
	tServer := time.Since(t0)
	// The bus is started when its first client connects (listenBus): an
	// idle desktop runs none.
	if w.spec.DBusDaemon != "" {
		if err := w.listenBus(); err != nil {
			return fail("%v", err)
		}
	}
	w.d.Worker = memberOf(os.Getpid())
	w.d.Server = memberOf(w.server.Process.Pid)
	if w.d.Layout != DefaultLayout {
		if err := w.setLayout(ctx); err != nil {
			return fail("%v", err)
		}
	}
	// The worker's own X connections (the first-window watch, the
	// clipboard's owner) use the desktop's cookie; its children get theirs
	// from baseEnv.
	os.Setenv("XAUTHORITY", w.d.Authority)
	if w.d.WM == WMOpenbox {
		// Started when the first window is shown (wm.go).
		if err := w.watchFirstWindow(); err != nil {
			return fail("%v", err)
		}
		w.d.WMPending = true
	}
	if err := w.listenControl(); err != nil {
		return fail("%v", err)
	}
	w.d.Status = StatusRunning
	if err := writeManifest(w.spec.Dir, &w.d); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(w.log, "desktop %s ready on %s: server in %s, all in %s\n", w.d.Name, w.d.Display,
		tServer.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	return workerReady{OK: true, Desktop: &w.d}
}

func (w *worker) programEnv() []string {
	env := w.baseEnv()
	if w.d.Bus != "" {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS="+w.d.Bus)
	}
	return env
}

func waitFor(cmd *exec.Cmd) chan error {
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return ch
}

// startAnyServer tries the candidates in turn; busy when every one was
// taken by another server.
func (w *worker) startAnyServer(ctx context.Context, deadline time.Time) (err error, busy bool) {
	var taken []string
	for _, num := range w.spec.Candidates {
		err := w.startServer(ctx, num, deadline)
		if err == nil {
			return nil, false
		}
		if errors.Is(err, errTaken) {
			taken = append(taken, ":"+strconv.Itoa(num))
			continue
		}
		return err, false
	}
	return fmt.Errorf("every display tried (%s) was taken by another X server", strings.Join(taken, ", ")), true
}

// errTaken: another server holds the display number.
var errTaken = errors.New("display taken")

// startServer starts Xvfb on :num and waits for it to write the number on
// its -displayfd pipe, at most until deadline.
func (w *worker) startServer(ctx context.Context, num int, deadline time.Time) error {
	r, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	logPath := filepath.Join(w.spec.Dir, "server.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		wr.Close()
		return err
	}
	if w.d.RFB != "" {
		os.Remove(w.d.RFB) // one left by a killed Xvnc of this name
	}
	cmd := exec.Command(w.spec.Server, w.serverArgs(num)...)
	cmd.Env = w.baseEnv()
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{wr}
	err = cmd.Start()
	wr.Close()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start the X server %s: %v", w.spec.Server, err)
	}
	done := waitFor(cmd)
	r.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now()) })
	defer stop()
	line, rerr := bufio.NewReader(r).ReadString('\n')
	if rerr == nil && strings.TrimSpace(line) == strconv.Itoa(num) {
		if err := checkRFB(w.d.RFB); err != nil {
			cmd.Process.Kill()
			<-done
			return err
		}
		w.server, w.serverDone = cmd, done
		w.d.Number, w.d.Display = num, ":"+strconv.Itoa(num)
		return nil
	}
	// Not ready: whatever happened, the server must not outlive this call.
	cmd.Process.Kill()
	werr := <-done
	out, _ := os.ReadFile(logPath)
	tail := lastLines(string(out), 3)
	switch {
	case errors.Is(rerr, os.ErrDeadlineExceeded) && ctx.Err() == nil:
		return fmt.Errorf("the X server did not report its display number within %s (it was ended): %s", w.spec.Timeout, tail)
	case ctx.Err() != nil:
		return ctx.Err()
	case rerr == nil:
		return fmt.Errorf("the X server reported display %q, not %d", strings.TrimSpace(line), num)
	}
	if strings.Contains(string(out), "already active") || strings.Contains(string(out), "server already running") ||
		strings.Contains(string(out), "Cannot establish any listening sockets") {
		return errTaken
	}
	return fmt.Errorf("the X server %s exited before it was ready (%v): %s", w.spec.Server, werr, tail)
}

// serverArgs are the X server's arguments for display num: the same rules
// for both servers (explicit display, -displayfd, the cookie, no TCP, no
// reset, never -ac), and for Xvnc RFB on the 0600 Unix socket only.
func (w *worker) serverArgs(num int) []string {
	args := []string{":" + strconv.Itoa(num), "-displayfd", "3", "-auth", w.d.Authority, "-nolisten", "tcp", "-noreset"}
	if w.d.Kind() != ServerXvnc {
		return append(args, "-screen", "0", fmt.Sprintf("%dx%dx24", w.d.Width, w.d.Height))
	}
	// -rfbport -1: no TCP listener at all (0 would be 5900+N). No
	// password or TLS (SecurityTypes None): whoever can connect() to the
	// socket is the person's own user, because the socket is 0600 in a
	// 0700 directory (see the package doc).
	return append(args, "-geometry", fmt.Sprintf("%dx%d", w.d.Width, w.d.Height), "-depth", "24",
		"-rfbport", "-1", "-rfbunixpath", w.d.RFB, "-rfbunixmode", "0600", "-SecurityTypes", "None",
		"-AlwaysShared")
}

// checkRFB makes sure an Xvnc desktop's RFB socket is there and 0600 once
// the server reported ready (Xvnc listens before it writes -displayfd):
// the socket's mode is what lets it go without a password.
func checkRFB(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("the Xvnc server reported ready but serves no RFB socket at %s: %v", path, err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		return fmt.Errorf("the Xvnc server's RFB socket %s is %v, not a socket of mode 0600; it was ended", path, st.Mode())
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

func (w *worker) setLayout(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.spec.SetXkbMap, "-display", w.d.Display, "-layout", w.d.Layout)
	cmd.Env = w.baseEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("setxkbmap -layout %s failed (%v): %s", w.d.Layout, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// listenBus opens the desktop's D-Bus socket and waits, without a thread,
// for its first client; serve then starts the bus on it (startBus). So the
// address programs get is valid from the start, and an idle desktop
// costs no bus: dbus-daemon is about 4.5 MB resident.
func (w *worker) listenBus() error {
	os.Remove(w.spec.BusPath) // a socket left by a killed bus of this name
	// A socket of its own rather than a net.Listener: a listener's
	// RawConn cannot wait for readability, an os.File's can (through the
	// poller), and closing the file does not unlink the path.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the desktop's D-Bus socket: %v", err)
	}
	f := os.NewFile(uintptr(fd), w.spec.BusPath)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: w.spec.BusPath}); err != nil {
		f.Close()
		return fmt.Errorf("the desktop's D-Bus socket %s: %v", w.spec.BusPath, err)
	}
	err = os.Chmod(w.spec.BusPath, 0o600)
	if err == nil {
		err = unix.Listen(fd, 64)
	}
	raw, rerr := f.SyscallConn()
	if err == nil {
		err = rerr
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("the desktop's D-Bus socket %s: %v", w.spec.BusPath, err)
	}
	w.busL, w.d.Bus = f, "unix:path="+w.spec.BusPath
	wanted := make(chan struct{})
	w.busWanted = wanted
	go func() {
		// Read's function is called again once the socket is readable:
		// a connection waits to be accepted. An error is the socket
		// closed (the desktop ends): no bus then.
		polled := false
		if raw.Read(func(uintptr) bool { done := polled; polled = true; return done }) == nil {
			close(wanted)
		}
	}()
	return nil
}

// startBus starts the desktop's D-Bus session bus on the socket listenBus
// holds, handed over as systemd's socket activation does (LISTEN_FDS,
// LISTEN_PID, --address=systemd:), so the client that connected first is
// served by it.
func (w *worker) startBus() error {
	f := w.busL
	w.busL = nil
	defer f.Close() // the bus has its own copy
	var env []string
	for _, kv := range w.baseEnv() {
		if !strings.HasPrefix(kv, "LISTEN_") {
			env = append(env, kv)
		}
	}
	// LISTEN_PID must be the bus's own pid, known only after the fork:
	// the shell sets it to its own and execs the bus, which keeps the pid.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`, w.spec.DBusDaemon,
		"--session", "--nofork", "--nopidfile", "--address=systemd:")
	cmd.Env = append(env, "LISTEN_FDS=1")
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the D-Bus session bus %s: %v", w.spec.DBusDaemon, err)
	}
	w.bus, w.busDone = cmd, waitFor(cmd)
	w.d.DBus = memberOf(cmd.Process.Pid)
	writeManifest(w.spec.Dir, &w.d)
	return nil
}

// serve owns the desktop until its server dies or ctx ends.
func (w *worker) serve(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			w.stopAll()
			w.cleanup()
			w.markDead("the desktop worker was stopped")
			return
		case err := <-w.serverDone:
			w.server = nil
			w.stopAll()
			w.cleanup()
			w.markDead(fmt.Sprintf("the X server exited (%v)", exitText(err)))
			return
		case <-w.wmWanted:
			w.stopWatch()
			if err := w.startWM(); err != nil {
				fmt.Fprintf(w.log, "%v\n", err)
				w.d.Reason = err.Error()
				writeManifest(w.spec.Dir, &w.d)
				w.settleWM() // nothing will adopt the window
			}
		case err := <-w.wmDone:
			w.wmExited(err)
		case <-w.wmRunning:
			w.markWMRunning()
		case <-w.busWanted:
			w.busWanted = nil
			if err := w.startBus(); err != nil {
				fmt.Fprintf(w.log, "%v\n", err)
			}
		case err := <-w.busDone:
			w.bus, w.busDone = nil, nil
			fmt.Fprintf(w.log, "the D-Bus session bus exited (%v)\n", exitText(err))
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// markDead records that the desktop ended, if its manifest is still there
// (desktop rm removes the directory once the group is gone).
func (w *worker) markDead(reason string) {
	if _, err := os.Stat(filepath.Join(w.spec.Dir, manifestName)); err != nil {
		return
	}
	w.d.Status, w.d.Reason = StatusDead, reason
	writeManifest(w.spec.Dir, &w.d)
}

// stopAll ends the desktop's processes: TERM, then KILL after the grace.
func (w *worker) stopAll() {
	type proc struct {
		cmd  *exec.Cmd
		done chan error
	}
	var ps []proc
	for _, p := range []proc{{w.wm, w.wmDone}, {w.bus, w.busDone}, {w.server, w.serverDone}} {
		if p.cmd != nil && p.done != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
			ps = append(ps, p)
		}
	}
	end := time.After(w.spec.Grace)
	for _, p := range ps {
		select {
		case <-p.done:
		case <-end:
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	w.wm, w.bus, w.server = nil, nil, nil
}

// cleanup removes what the desktop leaves: the X socket and lock (when no
// server holds them), the cookie and the bus socket.
func (w *worker) cleanup() {
	w.settleWM() // the batches waiting find the desktop gone
	if w.d.Number > 0 {
		cleanDisplay(w.d.Number, w.d.Server.PID)
	}
	os.Remove(filepath.Join(w.spec.Dir, authorityName))
	os.Remove(filepath.Join(w.spec.Dir, "server.log"))
	if w.d.RFB != "" {
		os.Remove(w.d.RFB) // Xvnc removes it on TERM, not when killed
	}
	if w.spec.BusPath != "" {
		os.Remove(w.spec.BusPath)
	}
	w.stopWatch()
	if w.ctl != nil {
		w.ctl.Close() // unlinks the socket; ends serveControl
	}
	if w.busL != nil {
		w.busL.Close() // ends listenBus's wait
	}
	if w.spec.ControlPath != "" {
		os.Remove(w.spec.ControlPath)
	}
}

// cleanDisplay removes display num's socket when nothing answers on it, and
// its lock when the lock names serverPID or a process that is gone. A
// number another server took since is left alone.
func cleanDisplay(num, serverPID int) {
	b, err := os.ReadFile(lockPath(num))
	if err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if _, _, alive := procStart(pid); pid == serverPID || !alive {
			if err := probe(num, nil, 200*time.Millisecond); errors.Is(err, errNoServer) {
				os.Remove(lockPath(num))
			}
		}
	}
	if err := probe(num, nil, 200*time.Millisecond); errors.Is(err, errNoServer) {
		os.Remove(socketPath(num))
	}
}
