package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/rpc"
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// StateDir holds the sessions' files (StateDir/sessions/<name>/); the
	// daemon passes $XDG_STATE_HOME/agentd. Required.
	StateDir string
	// RuntimeDir holds the workers' sockets (RuntimeDir/<name>.sock). It
	// must be short: a socket path must fit in 108 bytes. The daemon passes
	// its socket's directory plus "/sessions". Required.
	RuntimeDir string
	// DaemonSocket is the daemon's socket, given to every program as
	// AGENTD_SOCKET.
	DaemonSocket string
	// WorkerCommand starts a worker; the default is this executable with
	// the argument "worker" (cmd/agentd then calls RunWorker).
	WorkerCommand []string
	// WorkerEnv is added to the environment of worker processes (not of the
	// programs they run).
	WorkerEnv []string
	// Launcher starts workers; nil is ForkLauncher.
	Launcher Launcher
	// LogCap caps each session's event log on disk; zero is DefaultLogCap.
	LogCap int64
	// MaxSessions bounds the live sessions; zero is DefaultMaxSessions.
	// Past it Spawn returns ErrBusy.
	MaxSessions int
	// SpawnTimeout bounds how long a worker may take to start its program;
	// zero is 15 s.
	SpawnTimeout time.Duration
	// AttachTimeout bounds one attach's dial and hello of a live worker,
	// counted from when the session's lock is held; zero is
	// DefaultAttachTimeout. Tests that must tell "waited behind a stopped
	// worker" from "the machine is slow" make it long.
	AttachTimeout time.Duration
	// BootIDFile is where this boot's id is read from; empty is
	// $AGENTD_TEST_BOOT_ID_FILE (BootIDFileEnv) when set, else the kernel's
	// /proc/sys/kernel/random/boot_id. Another file is for tests: a
	// simulated reboot writes a new id into it.
	BootIDFile string
	// Desktop binds a restarted session to its agents' desktop again
	// (RestartState.Desktop, KeepDesktop): it returns the variables to set
	// and to remove, which replace those the spawn was given. The daemon
	// makes a "new" desktop again and finds a named one; an error fails the
	// restart with its words. Nil restarts a desktop session with the
	// variables it was spawned with.
	Desktop func(ctx context.Context, session, desktop string, keep bool) (set, unset []string, err error)
	// RestartLimits are RestartAlways's back-off and ceiling; zero fields
	// take RestartBackoff, RestartMaxBackoff, RestartBurst and
	// RestartWindow. Tests shorten them.
	RestartLimits RestartLimits
	// HookCommand is the absolute path of the agentctl an agent CLI's
	// hooks run (hooks.go); empty leaves every session's hooks unwired.
	HookCommand string
	// Logger receives the Manager's own diagnostics (never what a user
	// typed or asked); nil discards them.
	Logger *zerolog.Logger
}

// maxSunPath is the longest socket path Linux accepts (sun_path minus NUL).
const maxSunPath = 107

// Manager runs sessions through their workers. It is safe for concurrent
// use. Closing it leaves every session running; a new Manager on the same
// directories takes them over (Reconcile, or on first use of each).
type Manager struct {
	opts     ManagerOptions
	log      zerolog.Logger
	sessions string // StateDir/sessions

	dirs      dirIndex       // the last listing of the sessions directory, for List
	manifests *manifestWatch // which live sessions' manifests changed, for List

	// mu guards the maps below; the lock order is in locks.go.
	mu sync.Mutex
	// locks are the sessions' locks (lockSession) taken or waited for.
	locks map[string]*sessionLock
	live  map[string]*handle
	// unanswered are live sessions (by their manifests) whose worker is
	// alive but did not answer an attach, since when: List reports them
	// unresponsive too, as it does attached workers that stop answering.
	unanswered map[string]time.Time
	spawning   int
	// spawningNames are the sessions this Manager is spawning: their
	// directory has no manifest yet and that is not a fault.
	spawningNames map[string]bool
	closed        bool
	closing       chan struct{}
	// stopAsked are sessions whose program is being stopped on request:
	// their end is not one RestartAlways restarts (restart.go).
	stopAsked map[string]bool
	// unwritten are sessions settled by the Manager whose manifests the
	// disk did not take (settle.go), by name.
	unwritten map[string]*unwritten
	// life ends when the Manager closes: it is the root of the calls the
	// Manager's own goroutines make (heartbeats), which no request owns.
	life    context.Context
	endLife context.CancelFunc
	wg      sync.WaitGroup // watchers

	// askIDs number asks for cancelling; askEpoch keeps the numbers of
	// one Manager apart from an earlier one's.
	askIDs   atomic.Uint64
	askEpoch int64

	timeouts atomic.Pointer[Timeouts] // see SetTimeouts

	leases leaseTable // who holds which session's keyboard (lease.go)
}

// handle is the Manager's connection to one live worker.
type handle struct {
	name        string
	client      *rpc.Conn
	workerPID   int
	workerStart uint64
	programPID  int
	tokenDigest string // the SHA-256 of the session's secret, from the worker's hello
	socket      string
	gone        chan struct{} // closed once the watcher has handled the worker's end
	// man is the session's manifest as last read, with the file's
	// identity then: what List shows of a live session besides its status
	// (command, creation, pid), reused while the file is unchanged.
	man atomic.Pointer[manifestState]
	// manGen moves on every change of the manifest seen by the Manager's
	// watch (when watched, on wd); see manifestState.current.
	manGen  atomic.Uint64
	watched atomic.Bool
	wd      int32
	hl      health // the worker's status and health, kept by the heartbeat
}

// NewManager checks the options, creates the directories and returns a
// Manager. It does not reconcile: call Reconcile (the daemon does so in the
// background once it serves); every method also attaches on demand to a
// live worker it has not met yet.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.StateDir == "" || opts.RuntimeDir == "" {
		return nil, errors.New("session manager needs a state directory and a runtime directory")
	}
	if n := len(filepath.Join(opts.RuntimeDir, strings.Repeat("x", MaxNameLen)+".sock")); n > maxSunPath {
		return nil, fmt.Errorf("runtime directory %s is too long for session sockets (%d bytes, at most %d); use a shorter one", opts.RuntimeDir, n, maxSunPath)
	}
	if len(opts.WorkerCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the agentd executable to run workers: %w", err)
		}
		opts.WorkerCommand = []string{exe, "worker"}
	}
	if opts.LogCap <= 0 {
		opts.LogCap = DefaultLogCap
	}
	if opts.Launcher == nil {
		opts.Launcher = ForkLauncher{}
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.SpawnTimeout <= 0 {
		opts.SpawnTimeout = 15 * time.Second
	}
	if opts.BootIDFile == "" {
		opts.BootIDFile = os.Getenv(BootIDFileEnv)
	}
	if opts.BootIDFile == "" {
		opts.BootIDFile = kernelBootID
	}
	m := &Manager{opts: opts, sessions: filepath.Join(opts.StateDir, "sessions"), askEpoch: time.Now().UnixNano(),
		live: map[string]*handle{}, locks: map[string]*sessionLock{}, unanswered: map[string]time.Time{}, spawningNames: map[string]bool{}, closing: make(chan struct{})}
	m.life, m.endLife = context.WithCancel(context.Background())
	m.SetTimeouts(Timeouts{})
	if opts.Logger != nil {
		m.log = opts.Logger.With().Str("component", "session").Logger()
	} else {
		m.log = zerolog.Nop()
	}
	// The state directory above sessions/ is the daemon's to check; the
	// runtime directory's parent is the socket directory, checked too.
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.StateDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.RuntimeDir), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(opts.RuntimeDir), err)
	}
	if err := ensureOwnDir("sessions directory", m.sessions); err != nil {
		return nil, err
	}
	if err := ensureOwnDir("session socket directory", opts.RuntimeDir); err != nil {
		return nil, err
	}
	m.manifests = newManifestWatch()
	return m, nil
}

// Close drops the connections to the workers and waits for the Manager's
// goroutines. Sessions keep running. Calls in flight fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.closing)
	m.endLife()
	m.mu.Unlock()
	m.wg.Wait()
	// A List that began before Close finds the watch closed and checks
	// the manifests by stat.
	m.manifests.close()
	return nil
}

func (m *Manager) dir(name string) string    { return filepath.Join(m.sessions, name) }
func (m *Manager) socket(name string) string { return filepath.Join(m.opts.RuntimeDir, name+".sock") }

func notFound(name string) error {
	return errorf(ErrNotFound, "session %q does not exist; agentctl list shows the sessions", name)
}

var errClosed = errors.New("session manager is closed")

// Spawn starts a session and returns once its program runs (or could not
// start: ErrSpawnFailed, with nothing left behind). A taken name is
// ErrExists; bad parameters are ErrInvalid; MaxSessions live sessions are
// ErrBusy. Of two spawns of one name at once, exactly one wins.
func (m *Manager) Spawn(ctx context.Context, req SpawnRequest) (*Info, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, err
	}
	if err := ValidateAgent(req.Agent); err != nil {
		return nil, err
	}

	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, errorf(ErrInvalid, "spawn of %q has no command; give the program to run, e.g. agentctl spawn %s -- claude", req.Name, req.Name)
	}
	if len(req.Argv) > MaxArgs || len(req.Env) > MaxEnv {
		return nil, errorf(ErrInvalid, "spawn of %q has too many arguments or environment variables (at most %d and %d)", req.Name, MaxArgs, MaxEnv)
	}
	if err := checkSpawnSize(req); err != nil {
		return nil, err
	}
	for _, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errorf(ErrInvalid, "spawn of %q: an argument contains a NUL byte, which no program can receive", req.Name)
		}
	}
	var keys []string
	for _, kv := range req.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, errorf(ErrInvalid, "environment entry %q is not valid; give KEY=value with a non-empty KEY without '='", kv)
		}
		keys = append(keys, k)
	}
	if req.Cols == 0 {
		req.Cols = DefaultCols
	}
	if req.Rows == 0 {
		req.Rows = DefaultRows
	}
	if err := validateSize(req.Cols, req.Rows); err != nil {
		return nil, err
	}
	if err := req.Limits.Validate(); err != nil {
		return nil, err
	}
	policy, err := ParseRestartPolicy(string(req.Restart))
	if err != nil {
		return nil, err
	}
	if req.Cwd == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/"
		}
		req.Cwd = home
	}
	if !filepath.IsAbs(req.Cwd) {
		return nil, errorf(ErrInvalid, "working directory %q is relative; give an absolute path", req.Cwd)
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	if len(m.live)+m.spawning >= m.opts.MaxSessions {
		m.mu.Unlock()
		return nil, errorf(ErrBusy, "%d sessions are running, agentd's limit (max_sessions); stop or remove one first, or raise max_sessions in the config", m.opts.MaxSessions)
	}
	if m.spawningNames[req.Name] {
		m.mu.Unlock()
		return nil, errorf(ErrExists, "session %q is being spawned; pick another name", req.Name)
	}
	m.spawning++
	m.spawningNames[req.Name] = true
	delete(m.stopAsked, req.Name)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.spawning--
		delete(m.spawningNames, req.Name)
		m.mu.Unlock()
	}()

	dir := m.dir(req.Name)
	// The directory is the name's claim: mkdir is atomic, so one spawn wins.
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, errorf(ErrExists, "session %q exists; pick another name, or remove it first with agentctl rm %s", req.Name, req.Name)
		}
		return nil, fmt.Errorf("create session directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	var wt *Worktree
	if req.Worktree != nil {
		rec, cwd, err := m.createWorktree(ctx, req)
		if err != nil {
			return nil, err
		}
		defer func() {
			if !ok {
				discardWorktree(rec)
			}
		}()
		wt, req.Cwd = rec, cwd
	}
	// A first manifest (starting, no worker yet) before anything starts:
	// on a full disk the spawn fails here, at once, with nothing running
	// and nothing left (the deferred RemoveAll needs no space).
	created := time.Now().UTC()
	keep := RestartState{Restart: policy, BootID: m.bootID(), Agent: spawnAgent(req), Desktop: req.Desktop, KeepDesktop: req.KeepDesktop, NoHooks: req.NoHooks}
	if keep.Restart == RestartNo {
		keep.Restart = ""
	}
	if err := writeManifest(dir, &Manifest{Name: req.Name, Argv: req.Argv, Cwd: req.Cwd, EnvKeys: keys,
		Cols: req.Cols, Rows: req.Rows, Status: StatusStarting, CreatedAt: created, Worktree: wt, RestartState: keep}); err != nil {
		m.log.Warn().Err(err).Str("session", req.Name).Msg("spawn failed: cannot write the manifest")
		return nil, &SpawnError{Name: req.Name, Reason: storageReason(err, m.sessions)}
	}
	if err := writeRestartSpec(dir, &restartSpec{Env: req.Env, Unset: req.Unset, Limits: req.Limits}); err != nil {
		m.log.Warn().Err(err).Str("session", req.Name).Msg("spawn failed: cannot write what a restart needs")
		return nil, &SpawnError{Name: req.Name, Reason: storageReason(err, m.sessions)}
	}
	env := programEnv(withoutKeys(os.Environ(), req.Unset), req.Env, req.Name, m.opts.DaemonSocket)
	spec := workerSpec{Name: req.Name, Argv: req.Argv, Cwd: req.Cwd, Env: env, EnvKeys: keys,
		Cols: req.Cols, Rows: req.Rows, SessionDir: dir, Socket: m.socket(req.Name), LogCap: m.opts.LogCap,
		CreatedAt: created, Worktree: wt, Keep: keep}
	spec.Hooks, spec.HooksOff = m.hooksFor(keep.Agent, keep.NoHooks)
	ready, exited, err := m.startWorker(ctx, spec, req.Limits)
	if err != nil {
		return nil, err
	}
	if !ready.OK {
		// Let the worker exit before its directory goes; a caller that
		// gives up stops the wait, not the cleanup.
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		m.log.Info().Str("session", req.Name).Str("reason", ready.Error).Msg("spawn failed")
		return nil, &SpawnError{Name: req.Name, Reason: ready.Error}
	}
	ok = true
	h, ended, err := m.attachStarted(ctx, req.Name, dir, exited, "started")
	if err != nil {
		return nil, err
	}
	if ended != nil {
		m.log.Info().Str("session", req.Name).Int("pid", ready.ProgramPID).Msg("session spawned and ended")
		return ended, nil
	}
	m.log.Info().Str("session", req.Name).Int("pid", ready.ProgramPID).Int("worker_pid", ready.WorkerPID).
		Str("launcher", m.opts.Launcher.Kind()).Str("unit", UnitOf(ready.WorkerPID)).Msg("session spawned")
	return m.infoLive(ctx, h)
}

// attachStarted attaches to a session whose worker has just started
// (spawned, or restarted: what says which). A program that ends at once
// takes its worker with it before we connect: that is a session that ran,
// not a failure, and its Info comes back instead of a handle.
func (m *Manager) attachStarted(ctx context.Context, name, dir string, exited <-chan struct{}, what string) (*handle, *Info, error) {
	h, err := m.attach(ctx, name)
	if err == nil {
		return h, nil, nil
	}
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if man, merr := readManifest(dir); merr == nil && man.Status.Terminal() {
		m.afterEnd(name)
		return nil, infoFromManifest(man), nil
	}
	return nil, nil, fmt.Errorf("session %q %s but its worker cannot be reached: %w", name, what, err)
}

// programEnv is the program's environment: the daemon's, then the
// request's, with TERM defaulted and AGENTD_SESSION/AGENTD_SOCKET forced.
func programEnv(base, extra []string, name, sock string) []string {
	idx := map[string]int{}
	var env []string
	set := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			env[i] = kv
			return
		}
		idx[k] = len(env)
		env = append(env, kv)
	}
	set("TERM=xterm-256color")
	for _, kv := range base {
		if strings.HasPrefix(kv, "TERM=") {
			continue // the program's terminal is ours, not the daemon's
		}
		set(kv)
	}
	for _, kv := range extra {
		set(kv)
	}
	set("AGENTD_SESSION=" + name)
	set("AGENTD_SOCKET=" + sock)
	return env
}

// withoutKeys drops the variables named in keys from env.
func withoutKeys(env, keys []string) []string {
	if len(keys) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}

// startWorker starts a worker process and exchanges the specification and
// the start report with it over a socket pair. exited is closed when the
// worker process has ended (and been reaped).
func (m *Manager) startWorker(ctx context.Context, spec workerSpec, limits Limits) (*workerReady, <-chan struct{}, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("start worker: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "spawn-parent"), os.NewFile(uintptr(fds[1]), "spawn-child")
	defer child.Close()
	conn, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("start worker: %w", err)
	}
	defer conn.Close()
	logf, err := openNoFollow(filepath.Join(spec.SessionDir, "worker.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return nil, nil, fmt.Errorf("start worker: %w", err)
	}
	// The worker's environment names its session directory, so a worker
	// that lost its socket or its manifest can still be found (and ended)
	// by its process: see workersOf.
	wenv := append(append(os.Environ(), m.opts.WorkerEnv...), workerDirEnv+"="+spec.SessionDir)
	launched, err := m.opts.Launcher.Launch(ctx, LaunchSpec{Session: spec.Name, Argv: m.opts.WorkerCommand, Env: wenv,
		Spec: child, Log: logf, Limits: limits, Description: Describe(spec.Name, spec.Argv)})
	logf.Close()
	if err != nil {
		return nil, nil, err
	}
	child.Close()
	exited := launched.Exited()
	deadline := time.Now().Add(m.opts.SpawnTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	var ready workerReady
	err = writeJSONFrame(conn, spec)
	if err == nil {
		var body []byte
		if body, err = rpc.ReadFrame(conn); err == nil {
			err = json.Unmarshal(body, &ready)
		}
	}
	if err != nil {
		launched.Kill()
		<-exited
		reason := "the session worker ended before reporting"
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			reason = fmt.Sprintf("the session worker did not report within %s", m.opts.SpawnTimeout)
		}
		if tail := logTail(filepath.Join(spec.SessionDir, "worker.log")); tail != "" {
			reason += ": " + tail
		}
		return &workerReady{Error: reason}, exited, nil
	}
	return &ready, exited, nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	return s
}

// DefaultAttachTimeout bounds one attach's dial and hello, counted from
// when the session's lock is held: a healthy worker answers hello in
// milliseconds, and a stopped one must not hold a caller for long.
const DefaultAttachTimeout = 2 * time.Second

// attachTimeout is ManagerOptions.AttachTimeout or its default.
func (m *Manager) attachTimeout() time.Duration {
	if m.opts.AttachTimeout > 0 {
		return m.opts.AttachTimeout
	}
	return DefaultAttachTimeout
}

// attach connects to a live worker and starts watching it. It holds the
// session's lock across the dial and hello, and only that.
func (m *Manager) attach(ctx context.Context, name string) (*handle, error) {
	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m.mu.Lock()
	if h := m.live[name]; h != nil && h.client.Err() == nil {
		m.mu.Unlock()
		return h, nil
	}
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	dctx, cancel := context.WithTimeout(ctx, m.attachTimeout())
	defer cancel()
	c, err := rpc.Dial(dctx, m.socket(name), rpc.ClientOptions{})
	if err != nil {
		return nil, err
	}
	var st liveStatus
	if err := c.Call(dctx, mHello, nil, &st); err != nil {
		c.Close()
		return nil, decodeError(err)
	}
	h := &handle{name: name, client: c, workerPID: st.WorkerPID, programPID: st.ProgramPID, tokenDigest: st.digest(),
		socket: m.socket(name), gone: make(chan struct{})}
	h.hl.stalled = make(chan struct{})
	h.record(&st)
	if ps, ok := readProcStat(st.WorkerPID); ok {
		h.workerStart = ps.start
	}
	m.manifests.add(h, m.dir(name))
	m.loadManifest(h)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return nil, errClosed
	}
	m.live[name] = h
	delete(m.unanswered, name)
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watch(h)
	return h, nil
}

// watch waits for a worker's connection to end and then settles the
// session: ended normally, worker dead (host_death), or reconnect later.
func (m *Manager) watch(h *handle) {
	defer m.wg.Done()
	// After gone is closed: a restart attaches a new handle.
	defer m.afterEnd(h.name)
	defer close(h.gone)
	defer m.manifests.remove(h)
	if !m.heartbeat(h) {
		h.client.Close()
		return
	}
	m.mu.Lock()
	if m.live[h.name] == h {
		delete(m.live, h.name)
	}
	m.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for {
		// A manifest of another worker is a restart's (being started, or
		// running): this worker's end is not to be settled on it.
		man, err := readManifest(m.dir(h.name))
		if err != nil || man.Status.Terminal() || man.WorkerPID != h.workerPID {
			return
		}
		if !processAlive(h.workerPID, h.workerStart) {
			// Not bounded by the Manager's life: a settle begun is finished.
			unlock, _ := m.lockSession(context.Background(), h.name)
			if man, err := m.readState(h.name); err == nil && !man.Status.Terminal() && man.Status != StatusBroken && man.WorkerPID == h.workerPID {
				m.settleGone(h.name, man, fmt.Sprintf("worker %d died", h.workerPID), h.knownExit())
			}
			unlock()
			return
		}
		if time.Now().After(deadline) {
			// The worker lives but our connection broke; the next call
			// attaches again.
			return
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-m.closing:
			return
		}
	}
}

// lookup returns the live handle of name (attaching if need be) or, for a
// session without a live worker, nil and its manifest.
func (m *Manager) lookup(ctx context.Context, name string) (*handle, *Manifest, error) {
	if err := ValidateName(name); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	h := m.live[name]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, nil, errClosed
	}
	if h != nil && h.client.Err() == nil {
		return h, nil, nil
	}
	if h != nil {
		// Its watcher is settling it; let it finish.
		select {
		case <-h.gone:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	man, err := m.readState(name)
	if err != nil {
		return nil, nil, err
	}
	if !man.Status.Allows().Live || man.Status == StatusStarting && man.WorkerPID == 0 {
		// Ended, broken, or being spawned by this Manager (no worker to
		// attach to yet).
		return nil, man, nil
	}
	h, err = m.attach(ctx, name)
	if err == nil {
		return h, nil, nil
	}
	// No worker answers: judge it.
	unlock, lerr := m.lockSession(ctx, name)
	if lerr != nil {
		return nil, nil, lerr
	}
	defer unlock()
	man, rerr := m.readState(name)
	if rerr != nil {
		return nil, nil, rerr
	}
	if man.Status == StatusStarting && man.WorkerPID == 0 {
		// Restarted meanwhile (restart.go): its worker is being started.
		return nil, man, nil
	}
	if man.Status.Allows().Live && !processAlive(man.WorkerPID, man.WorkerStart) {
		m.markDead(name, man, fmt.Sprintf("worker %d is gone", man.WorkerPID))
	}
	if !man.Status.Allows().Live {
		return nil, man, nil
	}
	m.noteUnanswered(name)
	why := fmt.Sprintf("its worker (pid %d) does not answer (%v)", man.WorkerPID, err)
	return nil, nil, &unresponsiveError{msg: fmt.Sprintf("session %q is unresponsive: %s; try again, or agentctl stop --force %s ends it%s", name, why, name, resumeHint(man.WorkerPID)),
		why: why, workerPID: man.WorkerPID, workerStart: man.WorkerStart, programPID: man.ProgramPID}
}

// noteUnanswered records that name's worker lives but did not answer an
// attach (the first time only: silence is counted from then).
func (m *Manager) noteUnanswered(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.unanswered[name]; !ok {
		m.unanswered[name] = time.Now()
	}
}

// settleEnded returns the manifest of h's session when it has ended (after
// its worker has exited, so nothing writes to its files any more), or nil
// while it runs.
func (m *Manager) settleEnded(ctx context.Context, h *handle) (*Manifest, error) {
	man, err := m.readState(h.name)
	if err != nil || !man.Status.Terminal() {
		return nil, err
	}
	if _, err := waitGone(ctx, h.workerPID, h.workerStart, 3*time.Second); err != nil {
		return nil, err
	}
	return man, nil
}

// call runs the worker call c for name's live worker, within c.timeout
// and only while the worker answers (callWorker); see workercalls.go.
func (m *Manager) call(ctx context.Context, name string, c callSpec, params, result any) error {
	op := c.op
	h, man, err := m.lookup(ctx, name)
	if err != nil {
		return err
	}
	if h == nil {
		return statusError(name, man.Status, man.Termination, op)
	}
	err = m.callWorker(ctx, h, op, c.method, params, result, c.timeout)
	if err == nil {
		if c.ended != nil && c.ended() {
			// The program has ended: what List shows must say so before
			// the caller, told it ended, looks. Failing that, the worker
			// is exiting and its watcher settles the session from disk.
			m.statusOf(ctx, h)
		}
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isUnresponsive(err) {
		if c.abandoned != nil {
			c.abandoned(h)
		}
		return err
	}
	if errors.As(err, new(*callDeadlineError)) {
		return err
	}
	var we *rpc.Error
	if errors.As(err, &we) {
		return decodeError(err)
	}
	// The connection broke under the call: the worker closes its
	// connections once its program has ended, and a stop or rm --force
	// may have done that (and removed the session) meanwhile. Say which,
	// as a sentinel: a race with a stop is the session's state, never an
	// internal error (issue 21, D5).
	select {
	case <-h.gone:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.brokeDuring(name, op)
}

// brokeDuring is the error of an op whose worker connection ended under
// it: ErrNotFound when the session was removed meanwhile, ErrInvalidStatus
// with the status it ended in, or, while the session still reads as live
// (its watcher has not settled it yet), ErrInvalidStatus saying the outcome
// is unknown.
func (m *Manager) brokeDuring(name, op string) error {
	man, err := m.readState(name)
	if err != nil {
		return err
	}
	if man.Status.Terminal() || man.Status == StatusBroken {
		return statusError(name, man.Status, man.Termination, op)
	}
	return errorf(ErrInvalidStatus, "session %q: the connection to its worker broke during %s (the session is %s), so the outcome is unknown; agentctl status %s shows the session", name, op, man.Status, name)
}

func (m *Manager) infoLive(ctx context.Context, h *handle) (*Info, error) {
	st, err := m.statusOf(ctx, h)
	switch {
	case err == nil:
		return m.infoFromLive(h.name, st)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case isUnresponsive(err):
		return m.infoSilent(h), nil
	}
	return m.Status(ctx, h.name)
}

// infoSilent is the Info of a session whose worker does not answer: the
// last status it gave, as StatusUnresponsive, with how long it has been
// silent and what to do in Reason.
func (m *Manager) infoSilent(h *handle) *Info {
	st, have, silent := h.snapshot()
	var man Manifest
	if ms := h.man.Load(); ms != nil {
		man = *ms.man
	}
	info := &Info{Name: h.name, Status: StatusUnresponsive, Allows: StatusUnresponsive.Allows(), WorkerPID: h.workerPID,
		ProgramPID: h.programPID, Cols: man.Cols, Rows: man.Rows, SilentFor: max(silent, time.Millisecond), Manifest: man,
		Reason: fmt.Sprintf("%s; agentctl stop --force %s ends it%s", silentReason(h.workerPID, silent), h.name, resumeHint(h.workerPID))}
	if have {
		info.Cols, info.Rows, info.Bytes, info.Events, info.Asks, info.LastActivity = st.Cols, st.Rows, st.Bytes, st.Events, st.Asks, st.LastActivity
	}
	return info
}

func (m *Manager) infoFromLive(name string, st *liveStatus) (*Info, error) {
	man, err := m.readState(name)
	if err != nil {
		return nil, err
	}
	if man.Status == StatusBroken {
		// The worker runs, but its record is damaged: say so, as List does,
		// with what the worker says of itself.
		info := infoFromManifest(man)
		info.WorkerPID, info.ProgramPID, info.Cols, info.Rows = st.WorkerPID, st.ProgramPID, st.Cols, st.Rows
		return info, nil
	}
	return &Info{Name: name, Status: st.Status, Allows: st.Status.Allows(), WorkerPID: st.WorkerPID, ProgramPID: st.ProgramPID,
		Termination: st.Exit.Termination, ExitCode: st.Exit.ExitCode, Signal: st.Exit.Signal,
		Cols: st.Cols, Rows: st.Rows, Bytes: st.Bytes, Events: st.Events, Asks: st.Asks, LastActivity: st.LastActivity, Input: st.Input,
		Agent: st.Agent, State: st.State, Since: st.Since, Detail: st.Detail, Hooks: st.Hooks, Manifest: *man}, nil
}

func infoFromManifest(man *Manifest) *Info {
	return &Info{Name: man.Name, Status: man.Status, Allows: man.Status.Allows(), Termination: man.Termination,
		ExitCode: man.ExitCode, Signal: man.Signal, Reason: man.Reason, WorkerPID: man.WorkerPID, ProgramPID: man.ProgramPID,
		Cols: man.Cols, Rows: man.Rows, Bytes: man.Bytes, Events: man.Events, Asks: man.Asks, Manifest: *man}
}

// Status returns a session's status, what it allows, and its counters.
// ErrNotFound when there is no such session. A live session's worker is
// asked (within statusCallTimeout), so the counters are those of the
// moment; a worker known not to answer is not asked at all, and its
// session is reported StatusUnresponsive from what it last said.
func (m *Manager) Status(ctx context.Context, name string) (*Info, error) {
	h, man, err := m.lookup(ctx, name)
	var ue *unresponsiveError
	if errors.As(err, &ue) && ue.workerPID > 0 {
		// A worker this Manager never reached: say so as a status.
		if man, rerr := m.readState(name); rerr == nil {
			m.mu.Lock()
			since, ok := m.unanswered[name]
			m.mu.Unlock()
			info := infoFromManifest(man)
			info.Status, info.Allows, info.SilentFor = StatusUnresponsive, StatusUnresponsive.Allows(), time.Millisecond
			if ok {
				info.SilentFor = max(time.Since(since), time.Millisecond)
			}
			info.Reason = fmt.Sprintf("%s; agentctl stop --force %s ends it%s", ue.why, name, resumeHint(ue.workerPID))
			return info, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if h != nil {
		if _, _, silent := h.snapshot(); silent > 0 {
			return m.infoSilent(h), nil
		}
		st, err := m.statusOf(ctx, h)
		switch {
		case err == nil:
			return m.infoFromLive(name, st)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isUnresponsive(err):
			return m.infoSilent(h), nil
		}
		select {
		case <-h.gone:
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if man, err = m.readState(name); err != nil {
			return nil, err
		}
	}
	return infoFromManifest(man), nil
}

// List returns the sessions, by name, optionally only those in the given
// statuses. It answers from memory for the sessions it is attached to (the
// status their workers last gave, kept by the heartbeat) and from the
// manifests for the others; it never calls a worker, so a hung one cannot
// slow it.
func (m *Manager) List(ctx context.Context, req ListRequest) ([]ListEntry, error) {
	names, err := m.sessionNames()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	m.manifests.drain()
	hs := make([]*handle, len(names))
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	for i, name := range names {
		hs[i] = m.live[name]
	}
	var unanswered map[string]time.Time
	if len(m.unanswered) > 0 {
		unanswered = maps.Clone(m.unanswered)
	}
	m.mu.Unlock()
	now := time.Now()
	out := make([]ListEntry, 0, len(names))
	for i, name := range names {
		le, ok := m.liveEntry(hs[i], now)
		if !ok {
			man, err := m.readState(name)
			if err != nil {
				continue // removed meanwhile
			}
			le = manifestEntry(man, now)
			if since, ok := unanswered[name]; ok && man.Status.Allows().Live {
				le.Status, le.SilentFor = StatusUnresponsive, max(now.Sub(since), time.Millisecond)
				le.Reason = fmt.Sprintf("its worker (pid %d) has not answered since %s", man.WorkerPID, since.Format(time.TimeOnly))
			}
		}
		if len(req.Status) > 0 && !slices.Contains(req.Status, le.Status) {
			continue
		}
		if le.Status.Terminal() {
			le.PID = 0 // the program is gone; its number may be another's now
		}
		le.Lease = m.LeaseOf(name)
		out = append(out, le)
	}
	return out, nil
}

// manifestEntry is the list row of a session from its manifest.
func manifestEntry(man *Manifest, now time.Time) ListEntry {
	le := ListEntry{Name: man.Name, Status: man.Status, PID: man.ProgramPID, Command: man.Argv, CreatedAt: man.CreatedAt,
		Termination: man.Termination, ExitCode: man.ExitCode, Signal: man.Signal, Reason: man.Reason, Restarts: man.Restarts}
	if !man.CreatedAt.IsZero() {
		le.Age = now.Sub(man.CreatedAt)
	}
	if man.EndedAt != nil {
		le.LastActivity = *man.EndedAt
	}
	return le
}

// liveEntry is the list row of an attached session, from memory: the
// status its worker last gave and its manifest as last read (read again
// when the manifest watch says it changed). ok is false when h cannot say
// (nil, its connection ended, or its manifest is not a live session's),
// and the manifest on disk must.
func (m *Manager) liveEntry(h *handle, now time.Time) (le ListEntry, ok bool) {
	if h == nil {
		return le, false
	}
	select {
	case <-h.client.Done():
		return le, false // ended: its watcher settles it from disk
	default:
	}
	ms := h.man.Load()
	if ms == nil || !ms.current(h) {
		if ms = m.loadManifest(h); ms == nil {
			return le, false
		}
	}
	st, have, silent := h.snapshot()
	le = manifestEntry(ms.man, now)
	if !have {
		return le, true
	}
	le.Status, le.LastActivity = st.Status, st.LastActivity
	if st.Status == StatusRunning {
		le.Input, le.Agent, le.State, le.Since = st.Input, st.Agent, st.State, st.Since
	}
	if st.Status.Terminal() {
		// The worker has recorded the end and is about to exit.
		x := st.Exit
		le.Termination, le.ExitCode, le.Signal = x.Termination, x.ExitCode, x.Signal
		if !x.EndedAt.IsZero() {
			le.LastActivity = x.EndedAt
		}
	}
	if silent > 0 {
		le.Input, le.State = "", ""
		le.Status, le.SilentFor = StatusUnresponsive, silent
		le.Reason = silentReason(h.workerPID, silent)
	}
	return le, true
}

// ParseSignal reads a signal name ("TERM", "SIGTERM", "term") or number.
func ParseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return syscall.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, errorf(ErrInvalid, "unknown signal %q; use a name such as TERM, INT, HUP or KILL, or a number", s)
}

// Stop sends the signal (SIGTERM by default) to the program's process
// group, its session and every descendant, waits Grace (DefaultStopGrace),
// then kills them all, and returns once the program is gone, with how it
// ended. Stopping an ended session reports how it ended (AlreadyEnded).
func (m *Manager) Stop(ctx context.Context, req StopRequest) (*ExitInfo, error) {
	sig, err := ParseSignal(req.Signal)
	if err != nil {
		return nil, err
	}
	if req.Grace < 0 {
		return nil, errorf(ErrInvalid, "grace %s is negative; give a duration of zero or more", req.Grace)
	}
	// The one place the default grace is applied: the worker and
	// stopBroken get it filled in.
	grace := req.Grace
	if grace == 0 {
		grace = DefaultStopGrace
	}
	m.noteStopAsked(req.Name)
	h, man, err := m.lookup(ctx, req.Name)
	if err != nil {
		var ue *unresponsiveError
		if req.Force && errors.As(err, &ue) && ue.workerPID > 0 {
			return m.forceKill(ctx, req.Name, ue.workerPID, ue.workerStart, ue.programPID, "killed by stop --force: "+ue.why)
		}
		return nil, err
	}
	if h == nil {
		if man.Status == StatusBroken {
			return m.stopBroken(ctx, req.Name, sig, grace)
		}
		if !man.Status.Terminal() {
			return nil, statusError(req.Name, man.Status, "", "stop")
		}
		return exitFromManifest(man), nil
	}
	var info ExitInfo
	err = m.callWorker(ctx, h, "stop", mStop, stopParams{Signal: int(sig), Grace: grace}, &info, grace+stopCallSlack)
	if err == nil {
		h.recordExit(&info)
		m.log.Info().Str("session", req.Name).Str("termination", string(info.Termination)).Msg("session stopped")
		return &info, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var late *callDeadlineError
	if isUnresponsive(err) || errors.As(err, &late) {
		if !req.Force {
			return nil, err
		}
		_, _, silent := h.snapshot()
		why := silentReason(h.workerPID, silent)
		if late != nil {
			why = fmt.Sprintf("its worker (pid %d) did not finish the stop within %s", h.workerPID, late.timeout)
		}
		x, err := m.forceKill(ctx, req.Name, h.workerPID, h.workerStart, h.programPID, "killed by stop --force: "+why)
		if err != nil {
			return nil, err
		}
		// List and Status read the session from disk once its watcher
		// has seen the connection end.
		select {
		case <-h.gone:
		case <-time.After(killWait):
		case <-ctx.Done():
		}
		return x, nil
	}
	var we *rpc.Error
	if errors.As(err, &we) {
		return nil, decodeError(err)
	}
	// The worker ended under us (it exits right after the program); the
	// manifest says how.
	select {
	case <-h.gone:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	man, err = m.readState(req.Name)
	if err != nil {
		return nil, err // removed meanwhile (rm --force): ErrNotFound
	}
	if !man.Status.Terminal() {
		return nil, errorf(ErrInvalidStatus, "session %q: lost its worker while stopping (the session is %s); agentctl status %s shows the session", req.Name, man.Status, req.Name)
	}
	return exitFromManifest(man), nil
}

func exitFromManifest(man *Manifest) *ExitInfo {
	info := &ExitInfo{Name: man.Name, Status: man.Status, Termination: man.Termination, ExitCode: man.ExitCode,
		Signal: man.Signal, AlreadyEnded: true}
	if man.EndedAt != nil {
		info.EndedAt = *man.EndedAt
	}
	return info
}

// Remove deletes an ended session and its files. A live session is
// ErrInvalidStatus unless force, which stops it first (DefaultStopGrace). A
// broken session (StatusBroken) is removed too; while a worker of it still
// runs, only with force, which ends that worker first. Removal writes
// nothing, so it works on a full disk. A session's own git worktree
// (spawn --worktree) goes first: refused (ErrInvalidStatus, naming the work)
// while it holds uncommitted changes or commits on no other branch, unless
// force, which removes the directory and keeps the branch.
func (m *Manager) Remove(ctx context.Context, name string, force bool) error {
	h, man, err := m.lookup(ctx, name)
	if err != nil {
		return err
	}
	if h == nil && man.Status == StatusBroken {
		if pid, how := m.liveWorker(ctx, name); pid > 0 {
			if !force {
				return errorf(ErrInvalidStatus, "session %q is broken (%s) and its worker (pid %d, found by %s) still runs; stop it first (agentctl stop %s) or remove it with --force",
					name, man.Reason, pid, how, name)
			}
			if _, err := m.stopBroken(ctx, name, syscall.SIGTERM, DefaultStopGrace); err != nil {
				return err
			}
		}
		if err := m.removeWorktree(ctx, name, force); err != nil {
			return err
		}
		return m.removeSession(ctx, name)
	}
	if h != nil {
		if man, err = m.settleEnded(ctx, h); err != nil {
			return err
		}
		if man != nil {
			h = nil
		}
	}
	if h != nil || !man.Status.Terminal() {
		st := StatusRunning
		if man != nil {
			st = man.Status
		}
		if !force || (h == nil && st == StatusStarting) {
			return errorf(ErrInvalidStatus, "session %q is %s; stop it first (agentctl stop %s) or remove it with --force", name, st, name)
		}
		if _, err := m.Stop(ctx, StopRequest{Name: name, Force: true}); err != nil {
			return err
		}
		if h != nil {
			// Let the worker finish writing before its files go.
			if _, err := waitGone(ctx, h.workerPID, h.workerStart, 3*time.Second); err != nil {
				return err
			}
		}
	}
	if err := m.removeWorktree(ctx, name, force); err != nil {
		return err
	}
	return m.removeSession(ctx, name)
}

// removeSession deletes name's files under its lock.
func (m *Manager) removeSession(ctx context.Context, name string) error {
	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	if err := m.removeDir(name); err != nil {
		return err
	}
	m.log.Info().Str("session", name).Msg("session removed")
	return nil
}
