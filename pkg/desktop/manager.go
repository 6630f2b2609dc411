package desktop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/limits"
)

// Defaults of Options.
const (
	// DefaultFirstDisplay and DefaultLastDisplay bound the private range:
	// above the person's displays (:0, :1), VNC's and xvfb-run's usual
	// numbers and the test servers' (:40-:900).
	DefaultFirstDisplay = 1000
	DefaultLastDisplay  = 1199
	// DefaultMaxDesktops is the cap on running desktops: each is a
	// framebuffer (4 MB at 1280x800) plus a window manager and a bus, and
	// eight agents on screens of their own is already a lot to watch.
	DefaultMaxDesktops = 8
	// DefaultStartTimeout bounds the wait for -displayfd: Xvfb is ready
	// in about 0.1 s; a server silent for 10 s is broken.
	DefaultStartTimeout = 10 * time.Second
	// DefaultStopGrace is how long a desktop's processes get between
	// SIGTERM and SIGKILL.
	DefaultStopGrace = 2 * time.Second
	// attempts is how many display numbers one start tries when another
	// server takes them first.
	attempts = 5
)

// Options configure a Manager.
type Options struct {
	// StateDir is agentd's state directory; desktops live in
	// StateDir/desktops/<name>/. Required.
	StateDir string
	// RuntimeDir holds the desktops' D-Bus and control sockets; it must be short (a
	// socket path fits in 108 bytes). The daemon passes its socket's
	// directory plus "/desktops". Required.
	RuntimeDir string
	// WorkerCommand starts a desktop worker; the default is this
	// executable with the argument "desktop-worker".
	WorkerCommand []string
	// Server is the Xvfb binary; "" looks Xvfb up in $PATH. Setting it
	// makes Xvfb the default server (a test's stand-in is meant to run).
	Server string
	// Xvnc is the Xvnc binary; "" looks Xvnc up in $PATH.
	Xvnc string
	// DefaultServer is the server of a desktop whose Spec names none:
	// xvfb, xvnc, or "" for Xvnc when it is installed (and Server is
	// not set), else Xvfb.
	DefaultServer string
	// FirstDisplay and LastDisplay bound the display numbers used; zero
	// is the default range.
	FirstDisplay, LastDisplay int
	// MaxDesktops caps running desktops (SetMax changes it); zero is
	// DefaultMaxDesktops.
	MaxDesktops int
	// StartTimeout and StopGrace: zero takes the defaults.
	StartTimeout, StopGrace time.Duration
	// Logger receives the Manager's logs; the zero Logger discards them.
	Logger zerolog.Logger
}

// Manager starts, lists and removes desktops. It is safe for concurrent
// use. Closing it (there is nothing to close) leaves every desktop
// running: a new Manager on the same state directory finds them.
type Manager struct {
	opts Options
	log  zerolog.Logger
	dir  string // StateDir/desktops

	// mu guards starting and max; it is never held during I/O.
	mu       sync.Mutex
	starting map[string]bool
	max      int
	// removing serialises removals of one name with starts of it.
	removing map[string]bool
}

// NewManager prepares the desktops directory.
func NewManager(opts Options) (*Manager, error) {
	if opts.StateDir == "" || opts.RuntimeDir == "" {
		return nil, errors.New("desktop manager: StateDir and RuntimeDir are required")
	}
	if opts.FirstDisplay == 0 && opts.LastDisplay == 0 {
		opts.FirstDisplay, opts.LastDisplay = DefaultFirstDisplay, DefaultLastDisplay
	}
	if opts.FirstDisplay <= 0 || opts.LastDisplay < opts.FirstDisplay {
		return nil, fmt.Errorf("desktop manager: display range %d-%d is empty", opts.FirstDisplay, opts.LastDisplay)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if len(opts.WorkerCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("desktop manager: %w", err)
		}
		opts.WorkerCommand = []string{exe, WorkerArg}
	}
	m := &Manager{opts: opts, log: opts.Logger.With().Str("component", "desktop").Logger(),
		dir: filepath.Join(opts.StateDir, "desktops"), starting: map[string]bool{}, removing: map[string]bool{}}
	m.SetMax(opts.MaxDesktops)
	for _, d := range []string{m.dir, opts.RuntimeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("desktop manager: %w", err)
		}
	}
	return m, nil
}

// SetMax sets the cap on running desktops; not positive is the default.
func (m *Manager) SetMax(n int) {
	if n <= 0 {
		n = DefaultMaxDesktops
	}
	m.mu.Lock()
	m.max = n
	m.mu.Unlock()
}

func (m *Manager) path(name string) string { return filepath.Join(m.dir, name) }

// names lists the desktops on disk.
func (m *Manager) names() []string {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && ValidateName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// New starts a desktop and returns it once its X server is ready. Errors:
// ErrInvalid (spec), ErrExists (name taken), ErrBusy (the cap, or every
// display number taken), ErrStartFailed (Xvfb or the window manager
// missing, or the server did not start in time). On failure nothing is
// left behind: no process, socket, lock, cookie or directory.
func (m *Manager) New(ctx context.Context, spec Spec) (*Desktop, error) {
	if err := spec.normalize(lookPath); err != nil {
		return nil, err
	}
	kind, server, err := m.pickServer(spec.Server)
	if err != nil {
		return nil, err
	}
	spec.Server = kind
	m.mu.Lock()
	running := 0
	for _, n := range m.names() {
		if d, err := readManifest(m.path(n)); err == nil && d.Status != StatusDead {
			running++
		}
	}
	if running+len(m.starting) >= m.max {
		m.mu.Unlock()
		return nil, errorf(ErrBusy, "%d desktops are running, the limit (max_desktops); remove one first with agentctl desktop rm NAME", m.max)
	}
	if spec.Name == "" {
		spec.Name = m.freeNameLocked()
	}
	if m.starting[spec.Name] || m.removing[spec.Name] {
		m.mu.Unlock()
		return nil, errorf(ErrExists, "desktop %q is being started or removed; pick another name", spec.Name)
	}
	m.starting[spec.Name] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.starting, spec.Name)
		m.mu.Unlock()
	}()

	dir := m.path(spec.Name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, errorf(ErrExists, "desktop %q exists; pick another name, or remove it first with agentctl desktop rm %s", spec.Name, spec.Name)
		}
		return nil, fmt.Errorf("create desktop directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	cands := m.candidates()
	if len(cands) == 0 {
		return nil, errorf(ErrBusy, "no display number is free in :%d-:%d (each has an X socket or lock); remove a desktop or end other X servers",
			m.opts.FirstDisplay, m.opts.LastDisplay)
	}
	d := Desktop{Name: spec.Name, Width: spec.Width, Height: spec.Height, WM: spec.WM, Layout: spec.Layout,
		ServerKind: spec.Server, Status: StatusStarting, CreatedAt: time.Now().UTC(), Session: spec.Session, Keep: spec.Keep}
	if kind == ServerXvnc {
		d.RFB = m.rfbPath(spec.Name)
	}
	ws := workerSpec{Desktop: d, Dir: dir, Candidates: cands, Server: server, Timeout: m.opts.StartTimeout, Grace: m.opts.StopGrace}
	if spec.WM == WMOpenbox {
		ws.WMPath, _ = exec.LookPath("openbox")
	}
	if spec.Layout != DefaultLayout {
		ws.SetXkbMap, _ = exec.LookPath("setxkbmap")
	}
	if p, err := exec.LookPath("dbus-daemon"); err == nil {
		ws.DBusDaemon = p
		ws.BusPath = filepath.Join(m.opts.RuntimeDir, spec.Name+".bus")
	}
	ws.ControlPath = filepath.Join(m.opts.RuntimeDir, spec.Name+".ctl")
	ready, err := m.startWorker(ctx, ws)
	if err != nil {
		return nil, err
	}
	if !ready.OK {
		if ready.Busy {
			return nil, errorf(ErrBusy, "desktop %q: %s; try again, or widen the range", spec.Name, ready.Error)
		}
		return nil, errorf(ErrStartFailed, "desktop %q did not start: %s", spec.Name, ready.Error)
	}
	ok = true
	m.log.Info().Str("desktop", spec.Name).Str("display", ready.Desktop.Display).Int("worker_pid", ready.Desktop.Worker.PID).Msg("desktop started")
	return ready.Desktop, nil
}

// pickServer resolves a desktop's server kind ("" is the default) to the
// binary that serves it.
func (m *Manager) pickServer(kind string) (string, string, error) {
	if kind == "" {
		kind = m.opts.DefaultServer
	}
	if kind == "" {
		kind = ServerXvfb
		if m.opts.Server == "" {
			if _, err := exec.LookPath(m.xvncName()); err == nil {
				kind = ServerXvnc
			}
		}
	}
	switch kind {
	case ServerXvnc:
		p, err := exec.LookPath(m.xvncName())
		if err != nil {
			return "", "", errorf(ErrStartFailed, "Xvnc is not installed; install the Debian package tigervnc-standalone-server (apt install tigervnc-standalone-server), or make the desktop with --server xvfb")
		}
		return kind, p, nil
	case ServerXvfb:
		if m.opts.Server != "" {
			if _, err := exec.LookPath(m.opts.Server); err != nil {
				return "", "", errorf(ErrStartFailed, "the X server %s cannot be run: %v", m.opts.Server, err)
			}
			return kind, m.opts.Server, nil
		}
		p, err := exec.LookPath("Xvfb")
		if err != nil {
			return "", "", errorf(ErrStartFailed, "Xvfb is not installed; install the Debian package xvfb (apt install xvfb), or tigervnc-standalone-server for Xvnc")
		}
		return kind, p, nil
	}
	return "", "", errorf(ErrInvalid, "unknown X server %q; use xvfb or xvnc", kind)
}

func (m *Manager) xvncName() string {
	if m.opts.Xvnc != "" {
		return m.opts.Xvnc
	}
	return "Xvnc"
}

// rfbName is an Xvnc desktop's RFB socket in its directory.
const rfbName = "rfb.sock"

// rfbPath is where an Xvnc desktop serves RFB: in the desktop's own
// directory (0700) when the path fits a socket address, else in the
// runtime directory (0700 as well, and short by contract).
func (m *Manager) rfbPath(name string) string {
	p := filepath.Join(m.path(name), rfbName)
	if len(p) < maxSocketPath {
		return p
	}
	return filepath.Join(m.opts.RuntimeDir, name+".rfb")
}

// maxSocketPath is sun_path's size on Linux, the terminating NUL included.
const maxSocketPath = 108

// freeNameLocked picks the first desktop-N not on disk or starting.
func (m *Manager) freeNameLocked() string {
	for i := 1; ; i++ {
		n := "desktop-" + strconv.Itoa(i)
		if _, err := os.Lstat(m.path(n)); errors.Is(err, os.ErrNotExist) && !m.starting[n] {
			return n
		}
	}
}

// candidates picks up to attempts display numbers that look free (no
// socket, no lock), from a random point in the range so that two agentds
// starting desktops at once rarely try the same numbers. Xvfb has the last
// word: a number taken meanwhile makes it exit, and the next one is tried.
func (m *Manager) candidates() []int {
	first, last := m.opts.FirstDisplay, m.opts.LastDisplay
	n := last - first + 1
	off := rand.IntN(n)
	var out []int
	for i := range n {
		num := first + (off+i)%n
		if _, err := os.Lstat(socketPath(num)); err == nil {
			continue
		}
		if _, err := os.Lstat(lockPath(num)); err == nil {
			continue
		}
		out = append(out, num)
		if len(out) == attempts {
			break
		}
	}
	return out
}

// startWorker starts a desktop worker detached in a session of its own and
// exchanges the specification and the report over a socket pair.
func (m *Manager) startWorker(ctx context.Context, spec workerSpec) (*workerReady, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start desktop worker: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "spawn-parent"), os.NewFile(uintptr(fds[1]), "spawn-child")
	defer child.Close()
	conn, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		return nil, fmt.Errorf("start desktop worker: %w", err)
	}
	defer conn.Close()
	logf, err := os.OpenFile(filepath.Join(spec.Dir, "worker.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start desktop worker: %w", err)
	}
	wc := m.opts.WorkerCommand
	cmd := &exec.Cmd{Path: wc[0], Args: wc, Env: append(os.Environ(), "AGENTD_DESKTOP_DIR="+spec.Dir), Dir: "/",
		Stdout: logf, Stderr: logf, ExtraFiles: []*os.File{child},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, errorf(ErrStartFailed, "start the desktop worker %s: %v", wc[0], err)
	}
	child.Close()
	// Reap the worker when it ends (it is our child until we exit), so it
	// is never left a zombie that keeps its group alive.
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(spec.Timeout + 5*time.Second)
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	var ready workerReady
	err = json.NewEncoder(conn).Encode(spec)
	if err == nil {
		err = json.NewDecoder(conn).Decode(&ready)
	}
	if err != nil {
		// The worker did not report: end its whole group, so no server
		// it may have started survives.
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
		waitGone(pgid, time.Second)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &workerReady{Error: fmt.Sprintf("the desktop worker did not report (%v): %s", err, logTail(filepath.Join(spec.Dir, "worker.log")))}, nil
	}
	if !ready.OK {
		<-exited
		waitGone(pgid, spec.Grace)
	}
	return &ready, nil
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	return lastLines(string(b), 3)
}

// Get returns a desktop by name, as its manifest says; ErrNotFound when
// there is none.
func (m *Manager) Get(name string) (*Desktop, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	d, err := readManifest(m.path(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errorf(ErrNotFound, "desktop %q does not exist; agentctl desktop ls shows the desktops", name)
		}
		return nil, err
	}
	return d, nil
}

// List returns every desktop, judged by its X socket: a running desktop
// whose server is gone along with its worker is marked dead and cleaned;
// one whose server accepts but does not answer is reported unresponsive.
// The daemon calls it on a timer too, so a dead desktop is noticed without
// anyone asking.
func (m *Manager) List() []Desktop {
	var ds []*Desktop
	for _, n := range m.names() {
		d, err := readManifest(m.path(n))
		if err == nil {
			ds = append(ds, d)
			continue
		}
		if errors.Is(err, os.ErrNotExist) {
			m.reapHalfStarted(n)
		}
	}
	// Probes run side by side: a hung server costs its probe's timeout
	// once, not once per desktop.
	var wg sync.WaitGroup
	for _, d := range ds {
		if d.Status == StatusRunning {
			wg.Add(1)
			go func() { defer wg.Done(); m.judge(d) }()
		}
	}
	wg.Wait()
	out := make([]Desktop, 0, len(ds))
	for _, d := range ds {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Desktop) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// reapHalfStarted removes the directory of a start that died before its
// worker wrote a manifest (agentd and the worker killed together): no
// start of it runs here, it is older than any start can take, and no
// process is its worker (the worker's environment names its directory).
func (m *Manager) reapHalfStarted(name string) {
	m.mu.Lock()
	busy := m.starting[name] || m.removing[name]
	m.mu.Unlock()
	dir := m.path(name)
	st, err := os.Stat(dir)
	if busy || err != nil || time.Since(st.ModTime()) < m.opts.StartTimeout+m.opts.StopGrace+10*time.Second {
		return
	}
	if workerOf(dir) {
		return
	}
	if err := os.RemoveAll(dir); err == nil {
		m.log.Info().Str("desktop", name).Msg("removed the remains of a desktop whose start died")
	}
}

// workerOf reports whether a process runs with AGENTD_DESKTOP_DIR=dir in
// its environment.
func workerOf(dir string) bool {
	want := []byte("AGENTD_DESKTOP_DIR=" + dir + "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(append(env, 0), want) {
			return true
		}
	}
	return false
}

// judge probes a running desktop and settles it: dead when nothing of it
// answers or lives.
func (m *Manager) judge(d *Desktop) {
	cookie, cerr := readCookie(d.Authority)
	var err error
	var w, h int
	if cerr != nil {
		err = errNoServer
	} else {
		w, h, err = probeScreen(d.Number, cookie, probeTimeout)
	}
	switch {
	case err == nil:
		if w > 0 && h > 0 {
			d.Width, d.Height = w, h // the server's word, after any resize
		}
		return
	case errors.Is(err, errHung):
		d.Status, d.Reason = StatusUnresponsive, "the X server accepts connections but does not answer"
		return
	}
	// The server is gone (or another took its number). Its worker marks
	// it dead itself when it saw the server end; give it a moment.
	if d.Worker.alive(d.Worker.PID) {
		deadline := time.Now().Add(m.opts.StopGrace)
		for time.Now().Before(deadline) && d.Worker.alive(d.Worker.PID) {
			time.Sleep(10 * time.Millisecond)
		}
		if nd, err := readManifest(m.path(d.Name)); err == nil && nd.Status == StatusDead {
			*d = *nd
			return
		}
	}
	reason := "the X server is gone"
	if errors.Is(err, errNotOurs) {
		reason = "another X server took the display"
	}
	m.markDead(d, reason)
}

// markDead ends what is left of a desktop's group, cleans its files and
// records it dead.
func (m *Manager) markDead(d *Desktop, reason string) {
	// A removal in progress owns the desktop: a dead mark written into
	// its directory while it is being deleted would bring it back.
	m.mu.Lock()
	if m.removing[d.Name] || m.starting[d.Name] {
		m.mu.Unlock()
		return
	}
	m.removing[d.Name] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.removing, d.Name)
		m.mu.Unlock()
	}()
	if _, err := os.Stat(filepath.Join(m.path(d.Name), manifestName)); err != nil {
		return // removed meanwhile
	}
	if err := m.end(d); err != nil {
		// Its files stay for a later rm: cleaning under a live server
		// would leave its socket once it ends.
		m.log.Warn().Err(err).Str("desktop", d.Name).Msg("ending a dead desktop's processes")
	} else {
		m.clean(d)
	}
	d.Status, d.Reason = StatusDead, reason
	if err := writeManifest(m.path(d.Name), d); err != nil {
		m.log.Warn().Err(err).Str("desktop", d.Name).Msg("marking a dead desktop")
	}
	m.log.Warn().Str("desktop", d.Name).Str("reason", reason).Msg("desktop died")
}

// end ends a desktop's processes and confirms that each recorded one is
// gone: its process group first (endGroup), then any member still alive
// outside it, by pid (endMembers). Only then may its files go: a server
// still alive when its socket is judged keeps it (it answers), and leaves
// it behind when it ends later, killed, without unlinking it. ErrBusy when
// a member outlives SIGKILL; the desktop is left for another rm.
func (m *Manager) end(d *Desktop) error {
	members := []member{d.Worker, d.Server, d.WindowManager, d.DBus}
	endGroup(d.Worker.PID, members, m.opts.StopGrace)
	if left := endMembers(members, m.opts.StopGrace); len(left) > 0 {
		return errorf(ErrBusy, "desktop %q: process %d is still running %s after SIGKILL (stuck in the kernel); try agentctl desktop rm %s again in a moment",
			d.Name, left[0].PID, killWait, d.Name)
	}
	return nil
}

// clean removes a desktop's files once its processes are gone (end): the
// X socket and lock unless another server holds the number now, the
// cookie, the server log, the bus and RFB sockets.
func (m *Manager) clean(d *Desktop) {
	if d.Number > 0 && probeOurs(d) != nil {
		cleanDisplay(d.Number, d.Server.PID)
	}
	os.Remove(filepath.Join(m.path(d.Name), authorityName))
	os.Remove(filepath.Join(m.path(d.Name), "server.log"))
	os.Remove(filepath.Join(m.opts.RuntimeDir, d.Name+".bus"))
	if d.Control != "" {
		os.Remove(d.Control)
	}
	if d.RFB != "" {
		os.Remove(d.RFB)
	}
}

func probeOurs(d *Desktop) error {
	cookie, err := readCookie(d.Authority)
	if err != nil {
		return errNoServer
	}
	return probe(d.Number, cookie, 200*time.Millisecond)
}

// Remove ends a desktop's process group (SIGTERM, SIGKILL after the grace)
// and any recorded process that left it, confirms that they are gone, and
// only then removes its socket, lock, cookie, bus socket and directory.
// ErrNotFound when there is none; ErrBusy when a process outlives SIGKILL
// (the desktop is kept, for another rm).
func (m *Manager) Remove(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	// A removal waits for a dead mark being written (markDead holds the
	// name briefly); a start of the name is refused.
	for {
		m.mu.Lock()
		if m.starting[name] {
			m.mu.Unlock()
			return errorf(ErrExists, "desktop %q is being started; try again in a moment", name)
		}
		if !m.removing[name] {
			m.removing[name] = true
			m.mu.Unlock()
			break
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	defer func() {
		m.mu.Lock()
		delete(m.removing, name)
		m.mu.Unlock()
	}()
	d, err := m.Get(name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			// A directory without a manifest is a start that died
			// half-way: remove it too.
			if _, serr := os.Lstat(m.path(name)); serr == nil {
				return os.RemoveAll(m.path(name))
			}
		}
		return err
	}
	if err := m.end(d); err != nil {
		return err
	}
	m.clean(d)
	if err := os.RemoveAll(m.path(name)); err != nil {
		return fmt.Errorf("remove desktop %q: %w", name, err)
	}
	m.log.Info().Str("desktop", name).Msg("desktop removed")
	return nil
}

// usersDir holds one empty file per session started on the desktop, so
// that who uses it survives the daemon (idle desktops with a live session
// are kept).
const usersDir = "sessions"

// AddUser records that a session was started on the desktop.
func (m *Manager) AddUser(name, session string) {
	if ValidateName(name) != nil || !limits.ValidName(session) {
		return
	}
	dir := filepath.Join(m.path(name), usersDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	if f, err := os.OpenFile(filepath.Join(dir, session), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600); err == nil {
		f.Close()
	}
}

// Users lists the sessions started on the desktop (AddUser).
func (m *Manager) Users(name string) []string {
	if ValidateName(name) != nil {
		return nil
	}
	ents, _ := os.ReadDir(filepath.Join(m.path(name), usersDir))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
