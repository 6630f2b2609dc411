// Package sdunit starts agentd's session workers through the systemd user
// manager, each as a transient service of its own
// (agentd-session-NAME.service), over the manager's D-Bus API. It
// implements session.Launcher; pkg/daemon chooses it when a user manager
// answers and falls back to session.ForkLauncher otherwise.
//
// Why a unit per session, and a service rather than a scope: seccomp
// filters and the no_new_privs bit pass from a process to everything it
// forks and execs, so every program a hardened agentd.service forked would
// lose the network (RestrictAddressFamilies), setuid helpers
// (NoNewPrivileges) and user namespaces (RestrictNamespaces). Moving a
// forked worker into another cgroup (a scope) lifts none of that; only a
// process the manager starts fresh has exactly the rights of a program
// started from the person's terminal. A unit of its own also gives each
// session a cgroup (systemctl --user status, systemd-cgtop; MemoryMax and
// CPUWeight per session) and lets it outlive the daemon's unit without
// KillMode=process: the daemon's cgroup holds only the daemon.
//
// The worker gets its spawn specification as before, over a socket pair,
// but as its standard input (StandardInputFileDescriptor): a transient
// service can be handed its standard streams and no other descriptor.
// The worker's argv ends with session.SpecOnStdin, and `agentd worker`
// moves the socket to fd 3 before it starts. Its stdout and stderr are the
// session's worker.log, as for a forked worker. The unit is Type=exec (the
// start job ends once the worker runs), KillMode=control-group (what a
// session's program leaves behind ends with the worker, as the worker
// itself ensures) and CollectMode=inactive-or-failed (an ended session
// leaves no failed unit behind to block its name).
//
// The connection goes to the manager's private socket
// ($XDG_RUNTIME_DIR/systemd/private, as systemctl --user does), else to
// the user bus of the same directory ($XDG_RUNTIME_DIR/bus); never to
// $DBUS_SESSION_BUS_ADDRESS, which may be a bus without a manager or of
// another runtime directory, and never over a network.
//
// It must not import pkg/daemon or pkg/wire.
package sdunit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/pkg/session"
)

// UnitPrefix begins every session unit's name.
const UnitPrefix = "agentd-session-"

// startTimeout bounds the manager's start job: the worker only has to be
// exec'd, which is quick; past it the manager is stuck and the spawn fails.
const startTimeout = 15 * time.Second

// Options configure a Launcher.
type Options struct {
	// Instance sets daemons with different state directories apart under
	// one user manager: "" for the default state directory (units are
	// agentd-session-NAME.service), else a short tag added to each name
	// (InstanceOf makes one).
	Instance string
	// Defaults are the limits a spawn that gives none gets (live: see
	// SetDefaults).
	Defaults session.Limits
}

// InstanceOf is the Instance for a state directory: "" for the default
// one, else 8 hex digits of its path's hash.
func InstanceOf(stateDir, defaultStateDir string) string {
	if filepath.Clean(stateDir) == filepath.Clean(defaultStateDir) {
		return ""
	}
	sum := sha256.Sum256([]byte(filepath.Clean(stateDir)))
	return hex.EncodeToString(sum[:4])
}

// Launcher starts session workers as transient user units. It is safe for
// concurrent use.
type Launcher struct {
	opts     Options
	defaults atomic.Pointer[session.Limits]

	mu   sync.Mutex // guards conn; held across a (re)dial, never across a start
	conn *sddbus.Conn
	addr string
}

// Connect reaches the user manager and returns a Launcher, or an error
// saying why no user manager answers (then the daemon forks).
func Connect(ctx context.Context, opts Options) (*Launcher, error) {
	l := &Launcher{opts: opts}
	l.defaults.Store(&opts.Defaults)
	if _, err := l.connection(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Kind is "systemd".
func (l *Launcher) Kind() string { return "systemd" }

// Address is where the manager was reached, for the log.
func (l *Launcher) Address() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr
}

// SetDefaults changes the limits later spawns that give none get.
func (l *Launcher) SetDefaults(d session.Limits) { l.defaults.Store(&d) }

// Close drops the connection; units already started run on.
func (l *Launcher) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
	return nil
}

// UnitName is the unit a session's worker runs as.
func (l *Launcher) UnitName(session string) string {
	if l.opts.Instance != "" {
		return UnitPrefix + session + "-" + l.opts.Instance + ".service"
	}
	return UnitPrefix + session + ".service"
}

// connection returns a live connection, dialling again after the manager
// went away (a daemon-reexec, a restart of the user manager).
func (l *Launcher) connection(ctx context.Context) (*sddbus.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && l.conn.Connected() {
		return l.conn, nil
	}
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
	c, addr, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	l.conn, l.addr = c, addr
	return c, nil
}

// dial tries the manager's private socket, then the user bus.
func dial(ctx context.Context) (*sddbus.Conn, string, error) {
	var tried []string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		private := filepath.Join(rt, "systemd", "private")
		if _, err := os.Stat(private); err == nil {
			c, err := sddbus.NewConnection(func() (*dbus.Conn, error) {
				return authed(ctx, "unix:path="+private, false)
			})
			if err == nil {
				if err = probe(c); err == nil {
					return c, private, nil
				}
				c.Close()
			}
			tried = append(tried, fmt.Sprintf("%s: %v", private, err))
		} else {
			tried = append(tried, private+": no such socket")
		}
	} else {
		tried = append(tried, "$XDG_RUNTIME_DIR is not set")
	}
	// The user bus of the same runtime directory; never
	// $DBUS_SESSION_BUS_ADDRESS, which may name a bus no user manager is
	// on (dbus-launch) or one of another runtime directory than the
	// daemon's (a test's private one).
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		bus := "unix:path=" + filepath.Join(rt, "bus")
		if _, err := os.Stat(filepath.Join(rt, "bus")); err == nil {
			c, err := sddbus.NewConnection(func() (*dbus.Conn, error) { return authed(ctx, bus, true) })
			if err == nil {
				if err = probe(c); err == nil {
					return c, bus, nil
				}
				c.Close()
			}
			tried = append(tried, fmt.Sprintf("%s: %v", bus, err))
		}
	}
	return nil, "", fmt.Errorf("no systemd user manager answers (%s)", strings.Join(tried, "; "))
}

func authed(ctx context.Context, addr string, hello bool) (*dbus.Conn, error) {
	c, err := dbus.Dial(addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		c.Close()
		return nil, err
	}
	if hello {
		if err := c.Hello(); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// probeTimeout bounds the first exchange with a manager: a hung one must
// not hold the daemon's start-up.
const probeTimeout = 5 * time.Second

// probe checks that a systemd manager answers on c, and subscribes to its
// job signals (a direct connection gets none without), within
// probeTimeout; on a timeout c is closed, which ends the calls.
func probe(c *sddbus.Conn) error {
	done := make(chan error, 1)
	go func() {
		if _, err := c.GetManagerProperty("Version"); err != nil {
			done <- err
			return
		}
		if err := c.Subscribe(); err != nil {
			done <- fmt.Errorf("subscribe to the manager's signals: %w", err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(probeTimeout):
		c.Close()
		return fmt.Errorf("the manager did not answer within %s", probeTimeout)
	}
}

// Launch starts the worker as a transient service named after the session
// and returns once it runs.
func (l *Launcher) Launch(ctx context.Context, s session.LaunchSpec) (session.Launched, error) {
	limits := s.Limits
	d := *l.defaults.Load()
	if limits.MemoryMax == 0 {
		limits.MemoryMax = d.MemoryMax
	}
	if limits.CPUWeight == 0 {
		limits.CPUWeight = d.CPUWeight
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	argv := append(append([]string(nil), s.Argv...), session.SpecOnStdin)
	if !filepath.IsAbs(argv[0]) {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, fmt.Errorf("start session worker %s: %w", argv[0], err)
		}
		argv[0] = p
	}
	name := l.UnitName(s.Session)
	props := []sddbus.Property{
		sddbus.PropDescription(s.Description),
		sddbus.PropType("exec"),
		sddbus.PropExecStart(argv, false),
		{Name: "Environment", Value: dbus.MakeVariant(unitEnv(s.Env))},
		{Name: "WorkingDirectory", Value: dbus.MakeVariant("/")},
		{Name: "StandardInputFileDescriptor", Value: dbus.MakeVariant(dbus.UnixFD(s.Spec.Fd()))},
		{Name: "StandardOutputFileDescriptor", Value: dbus.MakeVariant(dbus.UnixFD(s.Log.Fd()))},
		{Name: "StandardErrorFileDescriptor", Value: dbus.MakeVariant(dbus.UnixFD(s.Log.Fd()))},
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
		{Name: "KillMode", Value: dbus.MakeVariant("control-group")},
		// The worker stops its program on SIGTERM within its grace; past
		// this the manager kills what is left.
		{Name: "TimeoutStopUSec", Value: dbus.MakeVariant(uint64(30 * time.Second / time.Microsecond))},
	}
	if limits.MemoryMax > 0 {
		props = append(props, sddbus.Property{Name: "MemoryAccounting", Value: dbus.MakeVariant(true)},
			sddbus.Property{Name: "MemoryMax", Value: dbus.MakeVariant(uint64(limits.MemoryMax))})
	}
	if limits.CPUWeight > 0 {
		props = append(props, sddbus.Property{Name: "CPUAccounting", Value: dbus.MakeVariant(true)},
			sddbus.Property{Name: "CPUWeight", Value: dbus.MakeVariant(uint64(limits.CPUWeight))})
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := l.connection(ctx)
	if err != nil {
		return nil, failed(s.Session, "the user manager cannot be reached to start unit %s: %v", name, err)
	}
	result, err := l.start(ctx, c, name, props)
	if err != nil && !isManagerError(err) {
		// The connection broke (the manager re-executed, or restarted):
		// dial again and try once more.
		if c, err = l.redial(ctx, c); err == nil {
			result, err = l.start(ctx, c, name, props)
		}
	}
	if err != nil && isUnitExists(err) {
		// A unit of this name is left over (a failed one not collected
		// yet): clear it if it is not running, and try once more.
		if state := activeState(ctx, c, name); state == "active" || state == "activating" || state == "deactivating" {
			return nil, failed(s.Session, "a unit %s already runs (%s): it belongs to another agentd or to a session this one lost; stop it (systemctl --user stop %s) or pick another name", name, state, name)
		}
		c.ResetFailedUnitContext(ctx, name)
		result, err = l.start(ctx, c, name, props)
	}
	if err != nil {
		return nil, failed(s.Session, "the user manager did not start unit %s: %v", name, err)
	}
	u := &unit{l: l, name: name, exited: make(chan struct{})}
	if result != "done" {
		close(u.exited)
		return nil, failed(s.Session, "the start job of unit %s ended %q; journalctl --user -u %s says why", name, result, name)
	}
	pid := mainPID(ctx, c, name)
	go u.watch(pid)
	return u, nil
}

// start runs the start job and waits for its result.
func (l *Launcher) start(ctx context.Context, c *sddbus.Conn, name string, props []sddbus.Property) (string, error) {
	ch := make(chan string, 1)
	if _, err := c.StartTransientUnitContext(ctx, name, "fail", props, ch); err != nil {
		return "", err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		// The job may still run; the manager's state tells.
		if activeState(context.WithoutCancel(ctx), c, name) == "active" {
			return "done", nil
		}
		return "", fmt.Errorf("the start job did not finish within %s", startTimeout)
	}
}

// failed is a spawn that failed in the manager (spawn_failed for the
// caller), naming the session.
func failed(name, format string, args ...any) error {
	return &session.Error{Kind: session.ErrSpawnFailed, Msg: fmt.Sprintf("session %q: ", name) + fmt.Sprintf(format, args...)}
}

// isManagerError says the manager answered err (a D-Bus error reply), as
// opposed to the connection failing.
func isManagerError(err error) bool {
	var de dbus.Error
	var dp *dbus.Error
	return errors.As(err, &de) || errors.As(err, &dp)
}

// redial drops c, if it is still the launcher's connection, and dials again.
func (l *Launcher) redial(ctx context.Context, c *sddbus.Conn) (*sddbus.Conn, error) {
	l.mu.Lock()
	if l.conn == c {
		l.conn.Close()
		l.conn = nil
	}
	l.mu.Unlock()
	return l.connection(ctx)
}

func isUnitExists(err error) bool {
	var de dbus.Error
	if errors.As(err, &de) {
		return de.Name == "org.freedesktop.systemd1.UnitExists"
	}
	var dp *dbus.Error
	if errors.As(err, &dp) {
		return dp.Name == "org.freedesktop.systemd1.UnitExists"
	}
	return false
}

// activeState is unit name's ActiveState ("" when systemd does not say).
func activeState(ctx context.Context, c *sddbus.Conn, name string) string {
	return property[string](ctx, c.GetUnitPropertyContext, name, "ActiveState")
}

// mainPID is service name's MainPID (0 when systemd does not say).
func mainPID(ctx context.Context, c *sddbus.Conn, name string) int {
	return int(property[uint32](ctx, c.GetServicePropertyContext, name, "MainPID"))
}

// property reads one property of unit name with get, waiting 5 s at the
// most; the zero value when it cannot be read or is not a T.
func property[T any](ctx context.Context, get func(context.Context, string, string) (*sddbus.Property, error), name, prop string) T {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var v T
	if p, err := get(ctx, name, prop); err == nil {
		v, _ = p.Value.Value().(T)
	}
	return v
}

// unitEnv is the worker's environment as the unit's Environment=: without
// what systemd set for the daemon's own unit (the manager sets the
// worker's), and without entries systemd would refuse, which would fail
// the whole start (the program's own environment travels in the spawn
// specification, whole).
func unitEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(k) || !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool {
			return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f
		}) {
			continue
		}
		switch k {
		case "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
			"INVOCATION_ID", "JOURNAL_STREAM", "MANAGERPID", "SYSTEMD_EXEC_PID", "MAINPID", "MONITOR_SERVICE_RESULT":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func validEnvName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// unit is a worker started as a unit.
type unit struct {
	l      *Launcher
	name   string
	exited chan struct{}
}

func (u *unit) Exited() <-chan struct{} { return u.exited }
func (u *unit) Unit() string            { return u.name }

// Kill kills everything in the unit's cgroup.
func (u *unit) Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := u.l.connection(ctx); err == nil {
		c.KillUnitWithTarget(ctx, u.name, sddbus.All, int32(syscall.SIGKILL))
	}
}

// watch closes exited when the worker (the unit's main process) ends,
// known from a pidfd opened on it and waited on by the runtime's poller
// (no thread is held per session); without one (no such process: it has
// already ended) at once.
func (u *unit) watch(pid int) {
	defer close(u.exited)
	if pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd is readable once its process has ended; the callback says
	// whether it is, and the poller waits until it may be.
	rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return err == nil && n > 0
	})
}
