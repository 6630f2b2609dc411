package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// Defaults for Config.
const (
	// DefaultMaxConnections stays well below the usual 1024 open-file limit,
	// leaving room for sessions, logs and the X connection.
	DefaultMaxConnections = 512
	// DefaultShutdownGrace is how long in-flight requests may run after a
	// stop is requested.
	DefaultShutdownGrace = 5 * time.Second
	// DefaultIdleTimeout closes connections with nothing in flight and
	// nothing open (no channel, stream or follow) for this long: long
	// enough for any interactive pause, short enough that forgotten
	// clients do not hold the connection limit.
	DefaultIdleTimeout = 5 * time.Minute
)

// peerShare is the part of MaxConnections one peer process may hold, so a
// runaway client cannot lock every other one out: limit/peerShare.
const peerShare = 2

// peerSlotWait is how long a connection over its process's share waits for
// one of that process's connections to end before it is refused: a process
// that closes a connection and opens the next at once (a script calling a
// client in a loop, a client reconnecting) is over its share only until the
// daemon has read the close.
const peerSlotWait = 500 * time.Millisecond

// Config is what the daemon needs to run. Zero values take defaults.
type Config struct {
	// SocketPath is where to listen; "" means wire.DefaultSocketPath().
	// Ignored when systemd passes a socket (LISTEN_FDS).
	SocketPath string
	// StateDir holds sessions and the audit log; "" means
	// $XDG_STATE_HOME/agentd (~/.local/state/agentd).
	StateDir string
	// MaxConnections bounds open client connections; beyond it a new
	// connection is answered busy and closed.
	MaxConnections int
	// MaxSessions bounds the live sessions (max_sessions); zero is the
	// session package's default. It needs a restart.
	MaxSessions int
	// ReadTimeout bounds how long a frame may take once it has begun.
	ReadTimeout time.Duration
	// WriteTimeout bounds one frame written to a client: a client that has
	// not read for this long is dropped (a channel listener with it, and
	// logged). Zero is rpc.DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection with no request in flight and no
	// channel, follow or stream open for this long; zero is
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ShutdownGrace bounds how long in-flight requests may finish on stop.
	ShutdownGrace time.Duration
	// Logger receives the daemon's logs. The zero Logger discards them.
	Logger zerolog.Logger
	// EventLogCap caps each session's event log on disk; zero is the
	// session package's default (64 MiB).
	EventLogCap int64
	// WorkerCommand starts a session worker; nil is this executable with
	// the argument "worker".
	WorkerCommand []string
	// ReconcileTimeout bounds the reconcile that runs at start; zero is
	// DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// Display is the X display to serve ("" means none: the screen methods
	// answer screen_unavailable). cmd/agentd passes $DISPLAY.
	Display string
	// AllowAct is the user's consent to agent.act; off by default.
	AllowAct bool
	// AuditMaxBytes caps the audit log; zero is the capture package's default.
	AuditMaxBytes int64
	// AskTimeout, AskIdle and LockTimeout are what agent.ask (through a
	// session or a channel) and the lock wait of agent.act get when a
	// request leaves them zero (live). The daemon hands them to the
	// components (applyTimeouts), which apply them, each in one place;
	// zero here keeps the component's own default.
	AskTimeout, AskIdle, LockTimeout time.Duration
	// ChannelQueue bounds each channel's queue; zero is channel.DefaultQueue.
	ChannelQueue int
	// RecordScreen keeps every act batch's observation for the screen
	// record (live); RecordScreenMaxBytes caps them (zero: capture's
	// default).
	RecordScreen         bool
	RecordScreenMaxBytes int64
	// Desktops lets agents have desktops of their own (agent.desktop_new,
	// spawn --desktop, the screen methods' desktop target); live.
	// MaxDesktops caps running desktops (zero: desktop's default, 8);
	// DesktopIdleTimeout removes a desktop unused for that long with no
	// live session on it (zero: never). Both live.
	Desktops           bool
	MaxDesktops        int
	DesktopIdleTimeout time.Duration
	// DesktopServer is a new desktop's X server when its request names
	// none: "xvnc", "xvfb", or "" / "auto" for Xvnc when installed; live.
	DesktopServer string
	// DesktopWorkerCommand starts a desktop worker; nil is this
	// executable with the argument "desktop-worker".
	DesktopWorkerCommand []string
	// MemoryBudget bounds the bytes held at once, across connections, in
	// large requests being read and large answers being written (see
	// rpc.Budget); zero is DefaultMemoryBudget. It needs a restart.
	MemoryBudget int64

	// ConfigPath is the config file to watch for live reload; "" watches
	// nothing. Reload reads it again (with the command line's flags on
	// top); SetLogLevel changes the log level of Logger.
	ConfigPath  string
	Reload      func() (Config, error)
	SetLogLevel func(level string) error
	// LogLevel is the level the logger was built with, for reload.
	LogLevel string
	// Hangup delivers SIGHUP, which reloads the config as a change of the
	// file does (cmd/agentd catches it); nil is no signal.
	Hangup <-chan os.Signal

	// SessionLauncher is how session workers start: "auto" (""), "systemd"
	// or "fork" (see sessionLauncher). It needs a restart.
	SessionLauncher string
	// SessionMemoryMax and SessionCPUWeight are the limits of a spawn that
	// gives none (live); they need the systemd launcher.
	SessionMemoryMax int64
	SessionCPUWeight int
	// SessionRestart is the restart policy of a spawn that gives none
	// (live): "no" (or ""), "on-reboot" or "always".
	SessionRestart string
	// NoHooks leaves agent CLIs' hooks unwired when a spawn does not say
	// (live; the config's hooks = false).
	NoHooks bool

	// View starts the view (pkg/view) at start; agent.view starts it
	// anyway. ViewIdle stops it after that long with no page (zero:
	// view.DefaultIdle). Both need a restart.
	View     bool
	ViewIdle time.Duration

	// Notifications turns on desktop notifications of the agents' states
	// (notifier.go) when a session bus answers; NotifyBus is its address
	// ("": $DBUS_SESSION_BUS_ADDRESS). NotifyWaitingAfter is the shortest
	// turn whose end is notified (zero: none); NotifyTerminal the terminal
	// command Open runs agentctl attach in (nil: x-terminal-emulator -e,
	// else xterm -e). They need a restart.
	Notifications      bool
	NotifyBus          string
	NotifyWaitingAfter time.Duration
	NotifyTerminal     []string
}

// closeConnsTimeout bounds the wait for connections to end once their
// requests are cancelled at stop.
const closeConnsTimeout = 5 * time.Second

// DefaultReconcileTimeout bounds the start-up reconcile: sessions it could
// not judge by then are left as they are and reported.
const DefaultReconcileTimeout = 10 * time.Second

// DefaultStateDir is $XDG_STATE_HOME/agentd, or ~/.local/state/agentd.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "agentd")
}

func (c *Config) setDefaults() {
	if c.SocketPath == "" {
		c.SocketPath = wire.DefaultSocketPath()
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = rpc.DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = rpc.DefaultWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.ReconcileTimeout <= 0 {
		c.ReconcileTimeout = DefaultReconcileTimeout
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = DefaultMemoryBudget
	}
}

// stateLockName is the lock file in the state directory that makes one
// daemon per state directory.
const stateLockName = "agentd.lock"

// DefaultMemoryBudget is the daemon-wide memory budget of large requests
// and answers.
const DefaultMemoryBudget = 256 << 20

// Daemon is a running agentd: the listener, its connections and components.
type Daemon struct {
	// cfg is what was fixed at start; live what reloads (fixedConfig).
	// configured is cfg as the config gave it, before a socket passed by
	// systemd replaced its path: what a reload compares against.
	cfg        fixedConfig
	configured fixedConfig
	log        zerolog.Logger
	router     *router
	started    time.Time

	// The domain components. sessions and screen are built in Run, before
	// the first connection is accepted, and channels in New, unless they
	// were given (Components).
	sessions Sessions
	screen   Screen
	channels Channels
	// launcher starts session workers (set in Run, before the config
	// watch starts; reload hands it new default limits).
	launcher session.Launcher
	// desktops is built in Run (desktops.go).
	desktops *desktopHub
	view     viewHub        // view.go
	notices  *stateNotifier // statenotify.go; set in Run
	build    func() string
	budget   *rpc.Budget // shared by every connection
	// vouch checks that a peer runs inside a session before a channel is
	// bound to it (vouchPeer; tests of other logic may replace it).
	vouch func(ctx context.Context, session string, peer Peer, token string) error
	// refusals rate-limits the log of permission_denied refusals.
	refusals struct {
		sync.Mutex
		last       time.Time
		suppressed int
	}

	// conns counts the goroutines serving or refusing a connection: the
	// stop waits for them (up to closeConnsTimeout), so none outlives Run.
	conns sync.WaitGroup
	// openConns counts the admitted connections (max_connections).
	openConns atomic.Int64
	nextConn  atomic.Uint64
	// perPeer counts the open connections of each peer process (by pid),
	// for the fairness rule (peerShare).
	perPeer struct {
		sync.Mutex
		n map[int]int
		// admitting counts, by peer pid, the connections accepted and
		// not yet admitted or refused.
		admitting map[int]int
		// freed is closed (and replaced) when any connection ends, for a
		// connection waiting for its process's share to have room.
		freed chan struct{}
		// lastLog and suppressed rate-limit the log of refusals, so a
		// runaway client cannot flood the journal.
		lastLog    time.Time
		suppressed int
	}
	// stopCtx ends when a stop begins: long calls (streams, follows,
	// waits; Route.Lasts) and raw streams end at once with it, instead of
	// holding the stop for the grace period.
	stopCtx  context.Context
	stopLong context.CancelFunc
	// live holds the settings that can change while running (limits,
	// timeouts, defaults, consent); reload swaps it.
	live atomic.Pointer[liveConfig]
	// logLevel is the level requests are logged at or above; it mirrors
	// the logger's, so a request below it costs no log event at all.
	logLevel atomic.Int32
	// helloJSON caches agent.hello's answer; reload clears it.
	helloJSON atomic.Pointer[helloTemplate]

	// inflight counts requests being handled; stopping waits for it.
	mu       sync.Mutex
	stopping bool
	inflight sync.WaitGroup
}

// Components are the domain components the daemon serves. A nil one is
// built from the Config: the session manager and the screen by Run (they
// touch the state directory and the display), the channel registry by
// New. Tests give fakes to check the routing and error tables without
// workers or an X server; agentd gives none.
type Components struct {
	Sessions Sessions
	Screen   Screen
	Channels Channels
}

// New builds a daemon from cfg, with the real components, without
// touching the file system.
func New(cfg Config) *Daemon { return NewWith(cfg, Components{}) }

// NewWith builds a daemon from cfg that serves the components given (the
// nil ones built as New builds them).
func NewWith(cfg Config, given Components) *Daemon {
	cfg.setDefaults()
	fixed, live := cfg.split()
	d := &Daemon{
		cfg:        fixed,
		configured: fixed,
		log:        cfg.Logger.With().Str("component", "daemon").Logger(),
		router:     newRouter(),
		started:    time.Now(),
		sessions:   given.Sessions,
		screen:     given.Screen,
		channels:   given.Channels,
		budget:     rpc.NewBudget(cfg.MemoryBudget),
	}
	if d.channels == nil {
		r := channel.NewRegistry()
		// Queued messages count in the memory budget with everything
		// else held for clients.
		r.SetMemory(budgetMemory{d.budget})
		d.channels = r
	}
	d.vouch = d.vouchPeer
	d.perPeer.n = map[int]int{}
	d.perPeer.admitting = map[int]int{}
	d.perPeer.freed = make(chan struct{})
	d.stopCtx, d.stopLong = context.WithCancel(context.Background())
	d.channels.SetQueueCap(cfg.ChannelQueue)
	d.channels.OnDrop(d.logChannelDrop)
	d.setLogLevel(cfg.LogLevel)
	d.live.Store(&live)
	// The fingerprint reads the whole binary; do it once, off the start-up
	// path, and let the first hello wait for it if it comes that early.
	d.build = sync.OnceValue(func() string {
		fp, err := buildinfo.SelfFingerprint()
		if err != nil {
			return "unknown"
		}
		return fp
	})
	go d.build()
	d.router.register(d.helloRoutes()...)
	d.router.register(d.sessionRoutes()...)
	d.router.register(d.screenRoutes()...)
	d.router.register(d.channelRoutes()...)
	d.router.register(d.desktopRoutes()...)
	d.router.register(d.viewRoutes()...)
	return d
}

// Run serves until ctx is cancelled, then stops in order: stop accepting,
// answer new requests shutting_down, let in-flight requests finish within
// the grace period, close connections, release the socket and the lock. A
// requested stop returns nil. Start-up failures (another daemon running, an
// unsafe socket directory) return an error before anything is served.
func (d *Daemon) Run(ctx context.Context) error {
	l, built, err := d.assemble(ctx)
	if err != nil {
		return err
	}
	defer built.close()
	return d.serve(ctx, l)
}

// undoStack is what assemble built, as the functions that release it: close
// runs them in the reverse order, once, so what was built last (the
// desktops) goes first and the listener and its lock last.
type undoStack []func()

func (u *undoStack) add(f func()) { *u = append(*u, f) }

func (u *undoStack) close() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// assemble does what Run needs before it serves, in order: the listener
// and its lock, the state directory and its lock, the components it was not
// given (the session launcher and manager, the screen and its goroutine),
// the desktops. It returns what releases them; on an error it has released
// what it built.
func (d *Daemon) assemble(ctx context.Context) (_ net.Listener, _ *undoStack, err error) {
	built := &undoStack{}
	defer func() {
		if err != nil {
			built.close()
		}
	}()
	l, cleanup, err := d.listen()
	if err != nil {
		return nil, nil, err
	}
	built.add(cleanup)
	// The state directory holds the sessions and the audit log: another
	// user able to write in it could plant a session or rename one.
	if err := stateDir.ensure(d.cfg.StateDir); err != nil {
		return nil, nil, err
	}
	// One daemon per state directory too, whatever its socket: a second
	// one would take the first one's live sessions for unresponsive ones
	// (their workers answer the first) and offer to kill them.
	stateLock, err := acquireLock(filepath.Join(d.cfg.StateDir, stateLockName))
	if err != nil {
		return nil, nil, fmt.Errorf("state directory %s: %w; or give this agentd a state directory of its own (state_dir, $XDG_STATE_HOME)", d.cfg.StateDir, err)
	}
	built.add(stateLock.release)
	// The components are built here unless the daemon was given them
	// (NewWith).
	if d.sessions == nil {
		sessionLog := d.cfg.Logger
		launcher, closeLauncher, err := d.sessionLauncher(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("sessions: %w", err)
		}
		built.add(closeLauncher)
		d.launcher = launcher
		mgr, err := session.NewManager(session.ManagerOptions{
			Launcher:      launcher,
			StateDir:      d.cfg.StateDir,
			RuntimeDir:    filepath.Join(filepath.Dir(d.cfg.SocketPath), "sessions"),
			DaemonSocket:  d.cfg.SocketPath,
			WorkerCommand: d.cfg.WorkerCommand,
			LogCap:        d.cfg.EventLogCap,
			MaxSessions:   d.cfg.MaxSessions,
			HookCommand:   hookCommand(d.cfg.WorkerCommand),
			Logger:        &sessionLog,
			// A restarted session gets its desktop again: a "new" one is
			// made anew (a reboot took the old), a named one must run.
			Desktop: func(ctx context.Context, name, target string, keep bool) ([]string, []string, error) {
				set, unset, _, err := d.desktopForSpawn(ctx, target, name, keep)
				return set, unset, err
			},
		})
		if err != nil {
			return nil, nil, fmt.Errorf("sessions: %w", err)
		}
		built.add(func() { mgr.Close() }) // sessions keep running: their workers own them
		d.sessions = mgr
	}
	if d.screen == nil {
		scr, err := capture.New(capture.Options{
			Display:       d.cfg.Display,
			AllowAct:      d.live.Load().AllowAct,
			AuditPath:     filepath.Join(d.cfg.StateDir, "audit.jsonl"),
			AuditMaxBytes: d.cfg.AuditMaxBytes,
			RecordScreen:  d.live.Load().RecordScreen, RecordScreenMaxBytes: d.cfg.RecordScreenMaxBytes,
			Logger: d.cfg.Logger, // capture names its own component
		})
		if err != nil {
			return nil, nil, fmt.Errorf("screen: %w", err)
		}
		built.add(func() { scr.Close() })
		d.screen = scr
		screenCtx, stopScreen := context.WithCancel(context.WithoutCancel(ctx))
		screenDone := make(chan struct{})
		go func() {
			defer close(screenDone)
			if err := scr.Run(screenCtx); err != nil {
				d.log.Error().Err(err).Msg("screen stopped")
			}
		}()
		built.add(func() { stopScreen(); <-screenDone })
	}

	// The agents' desktops keep running when the daemon stops: their
	// workers own them; only the daemon's Screens of them close.
	desktopCtx, stopDesktops := context.WithCancel(context.WithoutCancel(ctx))
	closeDesktops, err := d.startDesktops(desktopCtx)
	if err != nil {
		stopDesktops()
		return nil, nil, fmt.Errorf("desktops: %w", err)
	}
	built.add(func() { stopDesktops(); closeDesktops() })
	built.add(d.startView())
	built.add(d.startStateNotifier(ctx))
	return l, built, nil
}

// serve serves on l until ctx ends, then stops in order (Run).
func (d *Daemon) serve(ctx context.Context, l net.Listener) error {
	d.applyTimeouts(d.live.Load())

	n := newNotifier()
	// Connections end with a cause: at stop each is told shutting_down
	// (rpc.Conn.Serve sends it) before it closes.
	connCtx, cancelConns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelConns(errShuttingDown)
	defer d.stopLong()

	acceptDone := make(chan error, 1)
	go func() { acceptDone <- d.acceptLoop(connCtx, l) }()

	d.log.Info().Str("socket", d.cfg.SocketPath).Str("state_dir", d.cfg.StateDir).
		Int("pid", os.Getpid()).Str("version", buildinfo.Version).Msg("agentd serving")
	if err := n.notify("READY=1\nSTATUS=serving on " + d.cfg.SocketPath); err != nil {
		d.log.Warn().Err(err).Msg("sd_notify READY failed")
	}
	stopWatchdog := d.startWatchdog(n)
	reconciled := make(chan struct{})
	go func() { defer close(reconciled); d.reconcileAtStart(connCtx) }()
	// Components close (deferred above) only after the reconcile using them.
	defer func() { <-reconciled }()
	stopWatching := d.watchConfig()
	defer stopWatching()

	var runErr error
	acceptEnded := false
	select {
	case <-ctx.Done():
		d.log.Info().Msg("stop requested")
	case runErr = <-acceptDone:
		acceptEnded = true
		d.log.Error().Err(runErr).Msg("accepting connections failed")
	}
	stopWatchdog()
	n.notify("STOPPING=1")

	// 1. Stop accepting, and wait for the accept loop, so no connection
	// starts after the wait for connections below. 2. New requests get
	// shutting_down.
	l.Close()
	if !acceptEnded {
		<-acceptDone
	}
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	// 3. Streams, follows and waits end at once with shutting_down: they
	// would run until their client or their deadline ends them, and a
	// stop is not worth waiting for them.
	d.stopLong()
	// 4. Let in-flight requests finish within the grace period.
	drained := make(chan struct{})
	go func() { d.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(d.live.Load().ShutdownGrace):
		d.log.Warn().Dur("grace", d.live.Load().ShutdownGrace).Msg("in-flight requests did not finish in time; cancelling them")
	}
	// 5. Close connections, each told shutting_down; their handlers see
	// their contexts end. A handler that ignores its context must not
	// hold the stop forever.
	cancelConns(errShuttingDown)
	connsDone := make(chan struct{})
	go func() { d.conns.Wait(); close(connsDone) }()
	select {
	case <-connsDone:
	case <-time.After(closeConnsTimeout):
		d.log.Error().Dur("waited", closeConnsTimeout).Msg("connections did not close after cancellation; stopping anyway")
	}
	d.log.Info().Msg("agentd stopped")
	return runErr
}

// listen returns the listener, from systemd or made here, and the cleanup
// that releases it. A socket made here is removed on stop while the lock is
// still held; a socket systemd passed is never unlinked or re-created.
func (d *Daemon) listen() (net.Listener, func(), error) {
	l, err := activationListener()
	if err != nil {
		return nil, nil, err
	}
	if l != nil {
		if a, ok := l.Addr().(*net.UnixAddr); ok && a.Name != "" {
			d.cfg.SocketPath = a.Name
		}
		d.log.Info().Str("socket", d.cfg.SocketPath).Msg("using the socket passed by systemd")
		return l, func() {}, nil
	}
	dir := filepath.Dir(d.cfg.SocketPath)
	if err := ensurePrivateDir(dir); err != nil {
		return nil, nil, err
	}
	lock, err := acquireLock(d.cfg.SocketPath + ".lock")
	if err != nil {
		return nil, nil, err
	}
	ul, err := listenOwned(d.cfg.SocketPath)
	if err != nil {
		lock.release()
		return nil, nil, err
	}
	return ul, func() {
		ul.Close()
		os.Remove(d.cfg.SocketPath)
		lock.release()
	}, nil
}

// reconcileAtStart re-attaches to the sessions of a previous daemon while
// this one already serves. It never aborts start-up: what it cannot judge
// in time is left as it is and logged.
func (d *Daemon) reconcileAtStart(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReconcileTimeout)
	defer cancel()
	rep, err := d.sessions.Reconcile(ctx)
	if err != nil {
		d.log.Warn().Err(err).Msg("start-up reconcile failed; run agentctl reconcile to retry")
		return
	}
	counts := map[string]int{}
	for _, s := range rep.Sessions {
		counts[s.Action]++
		if s.Action != session.ActionAttached && s.Action != session.ActionEnded {
			d.log.Warn().Str("session", s.Name).Str("action", s.Action).Str("detail", s.Detail).Msg("reconcile")
		}
	}
	d.log.Info().Int("sessions", len(rep.Sessions)).Interface("actions", counts).Dur("took", rep.Took).Msg("start-up reconcile done")
}

func (d *Daemon) startWatchdog(n *notifier) (stop func()) {
	every := watchdogInterval()
	if every == 0 {
		return func() {}
	}
	t := time.NewTicker(every)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-t.C:
				n.notify("WATCHDOG=1")
			case <-done:
				return
			}
		}
	}()
	// stop returns once the goroutine has: no WATCHDOG=1 after STOPPING=1.
	return func() { t.Stop(); close(done); <-exited }
}

func (d *Daemon) acceptLoop(ctx context.Context, l net.Listener) error {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: wait and go on rather
			// than spin or die.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			d.log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			continue
		}
		// A connection not yet admitted (its credentials being read, its
		// process's share being waited for, a refusal being written) is
		// counted apart from the admitted ones, so a flood being refused
		// does not fill max_connections; these are bounded too, as
		// goroutines and descriptors, and past that closed unanswered.
		limit := d.live.Load().MaxConnections
		done, pid, ok := d.startAdmitting(uc, limit)
		if !ok {
			// Refused at once, without the wait for the share, and
			// counted against no limit: a refusal is a short goroutine
			// that writes one frame. The stop waits for it with the
			// connections.
			e := wire.Errorf(wire.CodeBusy,
				"this process (pid %d) already holds its share (half) of agentd's limit of %d connections (max_connections) and has as many more waiting; close idle ones or reuse one", pid, limit)
			d.conns.Add(1)
			go func() {
				defer d.conns.Done()
				d.refuse(uc, e)
			}()
			continue
		}
		d.conns.Add(1)
		go func() {
			defer d.conns.Done()
			d.serveConn(ctx, uc, done)
		}()
	}
}

// refuseLinger bounds how long a refused connection is drained before it
// is closed.
const refuseLinger = 200 * time.Millisecond

// refuse answers a connection with one error frame (id 0) and closes it.
// It drains what the client already sent before closing: closing a socket
// with unread data resets it, and the client would lose the answer.
func (d *Daemon) refuse(c *net.UnixConn, e *wire.Error) {
	// The answer gets its own deadline: on a busy machine this goroutine
	// may start late, and a linger that had already run out would drop the
	// answer and leave the client with a bare EOF.
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	if body, err := rpc.AppendResponse(nil, 0, nil, e); err == nil {
		rpc.WriteFrame(c, body)
	}
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(refuseLinger))
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	c.Close()
}

// refuseWriteTimeout bounds writing a refusal to a client that does not
// read it.
const refuseWriteTimeout = 5 * time.Second

// startAdmitting counts a just-accepted connection as being admitted, under
// its peer's pid (SO_PEERCRED, one getsockopt), and returns what ends that;
// false when its process already has MaxConnections being admitted, and it
// is to be refused at once. A process that floods the socket so fills only
// its own part.
func (d *Daemon) startAdmitting(uc *net.UnixConn, limit int) (done func(), pid int, ok bool) {
	pid = -1 // credentials unreadable: one shared bucket; serveConn refuses them
	if raw, err := uc.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
				pid = int(cred.Pid)
			}
		})
	}
	d.perPeer.Lock()
	defer d.perPeer.Unlock()
	if d.perPeer.admitting[pid] >= limit {
		return nil, pid, false
	}
	d.perPeer.admitting[pid]++
	var once sync.Once
	return func() {
		once.Do(func() {
			d.perPeer.Lock()
			defer d.perPeer.Unlock()
			if d.perPeer.admitting[pid]--; d.perPeer.admitting[pid] <= 0 {
				delete(d.perPeer.admitting, pid)
			}
		})
	}, pid, true
}

// serveConn admits (or refuses) and serves one connection; admitted ends
// its count among those being admitted (startAdmitting).
func (d *Daemon) serveConn(ctx context.Context, uc *net.UnixConn, admitted func()) {
	defer admitted()
	id := d.nextConn.Add(1)
	peer, err := peerOf(uc)
	if err != nil {
		d.log.Warn().Err(err).Uint64("conn", id).Msg("cannot read peer credentials; closing")
		d.refuse(uc, wire.Errorf(wire.CodeInternal, "agentd could not read this connection's credentials (%v); connect again", err))
		return
	}
	log := d.log.With().Uint64("conn", id).Int("peer_pid", peer.PID).Logger()
	if peer.UID != os.Getuid() {
		log.Warn().Int("peer_uid", peer.UID).Str("peer_exe", peer.Exe).Msg("connection from another user refused")
		d.refuse(uc, wire.Errorf(wire.CodePermissionDenied,
			"uid %d may not use this agentd (it serves uid %d); run agentctl as that user", peer.UID, os.Getuid()))
		return
	}
	live := d.live.Load()
	release, held, share := d.takePeerSlot(ctx, peer.PID, live.MaxConnections)
	if release == nil {
		if suppressed, ok := d.peerRefusalLog(); ok {
			log.Warn().Int("held", held).Int("share", share).Str("peer_exe", peer.Exe).Int("suppressed", suppressed).
				Msg("connection refused: the process holds its share of the connection limit")
		}
		d.refuse(uc, wire.Errorf(wire.CodeBusy,
			"this process (pid %d) already holds %d connections, its share (half) of agentd's limit of %d (max_connections); close idle ones or reuse one", peer.PID, held, live.MaxConnections))
		return
	}
	defer release()
	// Only a connection within its process's share counts against the
	// limit: one process's refused flood leaves room for the others.
	if n := d.openConns.Add(1); n > int64(live.MaxConnections) {
		d.openConns.Add(-1)
		d.refuse(uc, wire.Errorf(wire.CodeBusy, "agentd already has %d connections, its limit; close idle clients or raise max_connections", live.MaxConnections))
		return
	}
	defer d.openConns.Add(-1)
	admitted()
	conn := &Conn{ID: id, Peer: peer, log: log}
	conn.OnClose(func() { d.screen.ForgetCaller(connCallerKey(id)) })
	conn.sc = rpc.NewServerConn(uc, rpc.ServeOptions{
		ReadTimeout:  live.ReadTimeout,
		WriteTimeout: live.WriteTimeout,
		IdleTimeout:  live.IdleTimeout,
		// A connection holding a channel waits for pushes; it is not idle.
		KeepAlive: func() bool { return d.channels.Holds(conn) },
		ToError:   toWireError,
		Budget:    d.budget,
		MayUpgrade: func(method string) bool {
			rt, ok := d.router.routes[method]
			return ok && rt.Upgrades
		},
		Inline: func(method string) bool {
			rt, ok := d.router.routes[method]
			return ok && rt.Quick
		},
		OnRequestDone: func(req *wire.Request, took time.Duration, e *wire.Error) {
			d.logRequest(log, req, took, e)
		},
		OnPanic: func(req *wire.Request, v any, stack []byte) {
			log.Error().Str("method", req.Method).Interface("panic", v).Bytes("stack", stack).Msg("handler panicked")
		},
	})
	log.Debug().Str("peer_exe", peer.Exe).Msg("connection opened")
	err = conn.sc.Serve(ctx, func(ctx context.Context, req *wire.Request) (any, error) {
		return d.dispatch(ctx, conn, req)
	})
	conn.closed()
	switch {
	case errors.Is(err, rpc.ErrIdle):
		log.Debug().Dur("idle_timeout", live.IdleTimeout).Msg("idle connection closed")
	case err != nil:
		log.Info().Err(err).Msg("connection closed")
	default:
		log.Debug().Msg("connection closed")
	}
}

// peerRefusalLog says whether a share refusal may be logged now (at most
// one per refusalLogEvery), and how many were left out since the last.
func (d *Daemon) peerRefusalLog() (suppressed int, ok bool) {
	d.perPeer.Lock()
	defer d.perPeer.Unlock()
	now := time.Now()
	if now.Sub(d.perPeer.lastLog) < refusalLogEvery {
		d.perPeer.suppressed++
		return 0, false
	}
	d.perPeer.lastLog = now
	suppressed, d.perPeer.suppressed = d.perPeer.suppressed, 0
	return suppressed, true
}

// takePeerSlot counts a connection of the process pid against its share of
// limit (limit/peerShare, at least 1), waiting up to peerSlotWait for room.
// It returns the function that gives the slot back, or nil (with what the
// process holds and its share) when the process still holds its share.
func (d *Daemon) takePeerSlot(ctx context.Context, pid, limit int) (release func(), held, share int) {
	share = max(limit/peerShare, 1)
	var timeout <-chan time.Time
	for {
		d.perPeer.Lock()
		held = d.perPeer.n[pid]
		if held < share {
			d.perPeer.n[pid] = held + 1
			d.perPeer.Unlock()
			return func() { d.givePeerSlot(pid) }, held, share
		}
		freed := d.perPeer.freed
		d.perPeer.Unlock()
		if timeout == nil {
			t := time.NewTimer(peerSlotWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, held, share
		case <-ctx.Done():
			return nil, held, share
		}
	}
}

// givePeerSlot returns a slot taken by takePeerSlot.
func (d *Daemon) givePeerSlot(pid int) {
	d.perPeer.Lock()
	defer d.perPeer.Unlock()
	if d.perPeer.n[pid]--; d.perPeer.n[pid] <= 0 {
		delete(d.perPeer.n, pid)
	}
	close(d.perPeer.freed)
	d.perPeer.freed = make(chan struct{})
}

// setLogLevel records the level below which requests are not logged; an
// empty or unknown name means debug (log everything the logger takes).
func (d *Daemon) setLogLevel(name string) {
	lvl, err := zerolog.ParseLevel(name)
	if err != nil || name == "" {
		lvl = zerolog.DebugLevel
	}
	d.logLevel.Store(int32(lvl))
}

func (d *Daemon) logRequest(log zerolog.Logger, req *wire.Request, took time.Duration, e *wire.Error) {
	level := zerolog.DebugLevel
	if rt, ok := d.router.routes[req.Method]; ok && rt.Mutates {
		level = zerolog.InfoLevel
	}
	if e != nil && e.Code == wire.CodeInternal {
		level = zerolog.ErrorLevel
	}
	if level < zerolog.Level(d.logLevel.Load()) {
		return
	}
	ev := log.WithLevel(level)
	if !ev.Enabled() {
		return
	}
	ev = ev.Str("method", req.Method).Uint64("id", req.ID).Dur("took", took)
	switch {
	case e == errCallCanceled:
		ev = ev.Str("outcome", "canceled")
	case e != nil:
		// The message may quote user input; the code says enough.
		ev = ev.Str("code", string(e.Code))
	}
	ev.Msg("request")
}

// dispatch routes one request, refusing new work while stopping and
// counting the work in flight so a stop can wait for it.
func (d *Daemon) dispatch(ctx context.Context, conn *Conn, req *wire.Request) (any, error) {
	rt, err := d.router.lookup(req.Method)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		return nil, errShuttingDown
	}
	d.inflight.Add(1)
	d.mu.Unlock()
	defer d.inflight.Done()
	call := &Call{Method: req.Method, Params: req.Params, Conn: conn, stop: d.stopCtx}
	if rt.Lasts == Long {
		ctx = call.Long(ctx)
	}
	res, err := rt.Handle(ctx, call)
	if call.long != nil {
		call.long.unlong()
		return d.endLong(rt, call, res, err)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		d.mu.Lock()
		stopping := d.stopping
		d.mu.Unlock()
		if !stopping {
			return nil, errCallCanceled // the caller went away
		}
	}
	return res, err
}

// endLong answers a long call (Call.Long): one that ends when its client or
// its own deadline says, not when the daemon's work is done. Cut by a stop,
// it answers shutting_down; the raw stream of an upgrade it returns ends
// at once with a stop too.
func (d *Daemon) endLong(rt Route, call *Call, res any, err error) (any, error) {
	if d.stopCtx.Err() != nil && (err != nil || rt.Stream) {
		// Whatever the handler made of its cancellation, the client
		// should hear that the daemon stopped, and may retry.
		return nil, errShuttingDown
	}
	if err != nil && call.long.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil, errCallCanceled
	}
	if up, ok := res.(*rpc.Upgrade); ok && err == nil {
		stream := up.Stream
		up.Stream = func(ctx context.Context, rw io.ReadWriter) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(d.stopCtx, cancel)
			defer stop()
			return stream(ctx, rw)
		}
	}
	return res, err
}

// logChannelDrop logs a channel listener that was dropped for not reading,
// or that left with messages queued: pushes were answered when queued, so
// this line is where the loss shows (with channel list's dropped count).
func (d *Daemon) logChannelDrop(info channel.DropInfo) {
	if info.Stalled {
		d.log.Warn().Int("peer_pid", info.Listener.PID).Str("peer_exe", info.Listener.Exe).Strs("channels", info.Channels).
			Int("dropped", info.Undelivered).Dur("write_timeout", d.live.Load().WriteTimeout).AnErr("error", info.Err).
			Msg("channel listener dropped: it did not read its messages within the write timeout")
		return
	}
	d.log.Info().Int("peer_pid", info.Listener.PID).Strs("channels", info.Channels).Int("undelivered", info.Undelivered).
		Msg("channel listener left with messages not yet written to it")
}

// Conn is one client connection: its peer, and a way to send it
// notifications. Components that keep per-connection state (channels)
// register a cleanup with OnClose.
type Conn struct {
	ID   uint64
	Peer Peer
	sc   *rpc.Conn
	log  zerolog.Logger

	mu       sync.Mutex
	onClose  []func()
	isClosed bool

	// peerSession is the agentd session the peer runs in, read once (see
	// Conn.agentSession).
	peerSession     string
	peerSessionOnce sync.Once
}

// Notify sends a notification on this connection.
func (c *Conn) Notify(method string, params any) error {
	return c.sc.Notify(method, params)
}

// NotifyContext is Notify cut short when ctx ends (rpc.Conn.NotifyContext):
// what a stream to this client writes with, so a client that never reads
// does not hold a stop or a cancel for the write timeout.
func (c *Conn) NotifyContext(ctx context.Context, method string, params any) error {
	return c.sc.NotifyContext(ctx, method, params)
}

// Stalled returns the write timeout that closed the connection because the
// client stopped reading, or nil (channel.Staller).
func (c *Conn) Stalled() error {
	err := c.sc.WriteFailure()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return nil
}

// OnClose registers f to run once when the connection ends (at once if it
// already has).
func (c *Conn) OnClose(f func()) {
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		f()
		return
	}
	c.onClose = append(c.onClose, f)
	c.mu.Unlock()
}

func (c *Conn) closed() {
	c.mu.Lock()
	fs := c.onClose
	c.onClose, c.isClosed = nil, true
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// String names the connection for messages.
func (c *Conn) String() string { return fmt.Sprintf("conn %d (pid %d)", c.ID, c.Peer.PID) }
