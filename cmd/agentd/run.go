package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/limits"
	"github.com/agentd/agentd/pkg/daemon"
	"github.com/agentd/agentd/pkg/desktop"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

const usage = `agentd — the per-user daemon for agent sessions and the X11 screen

Usage:
  agentd [flags]          run the daemon in the foreground
  agentd --check-config   validate the config file and flags, then exit
  agentd --print-config   print the effective settings and where each came from
  agentd version          print the version and build
  agentd worker ...       a session's worker (started by agentd itself)
  agentd desktop-worker   a desktop's worker (started by agentd itself)

Every setting can be given in $XDG_CONFIG_HOME/agentd/config.toml (see
config.example.toml); flags override the file. agentd reads the file again
when it changes and on SIGHUP (systemctl --user reload agentd), and logs what
it applied; a bad file keeps the running settings.

Flags:
`

// run is agentd's whole life; it returns the process exit status. What was
// asked for (help, version, the config) goes to stdout; errors and the log
// to stderr.
// hup delivers the SIGHUPs that ask for a reload of the config.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, hup <-chan os.Signal) int {
	if len(args) > 0 && args[0] == "worker" {
		// The per-session worker: started by the daemon (forked, or as a
		// unit by the user manager), never by hand.
		if err := session.PrepareWorker(args[1:]); err != nil {
			fmt.Fprintf(stderr, "agentd worker: %v\n", err)
			return 2
		}
		return session.RunWorker(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == desktop.WorkerArg {
		// A desktop's worker: started by the daemon, never by hand.
		return desktop.RunWorker(ctx, args[1:], stderr)
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "agentd: %s takes no arguments; run agentd version\n", args[0])
			return 2
		}
		fp, _ := buildinfo.SelfFingerprint()
		fmt.Fprintf(stdout, "agentd %s (build %s)\n", buildinfo.Version, fp)
		return 0
	}
	fs := flag.NewFlagSet("agentd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := config.Flags(fs)
	configPath := fs.String("config", config.DefaultPath(), "config file")
	check := fs.Bool("check-config", false, "validate the config and exit")
	print := fs.Bool("print-config", false, "print the effective settings with their sources and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	// The flag package would print the whole usage after a bad flag, and
	// the one line that matters would scroll away: print only that line.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "agentd: %v; see agentd --help\n", explainDuration(fs, err))
		return 2
	}
	fs.SetOutput(stderr)
	if fs.NArg() > 0 {
		if a := fs.Arg(0); a == "version" {
			fmt.Fprintf(stderr, "agentd: version takes no arguments or flags; run agentd version\n")
		} else {
			fmt.Fprintf(stderr, "agentd: unexpected argument %q; see agentd --help\n", a)
		}
		return 2
	}
	load := config.Load
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "config" {
			load = config.LoadNamed
		}
	})
	loaded, err := load(*configPath, flags)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		return 2
	}
	for _, w := range loaded.Warnings {
		fmt.Fprintf(stderr, "agentd: warning: %s\n", w)
	}
	// The config checks a socket it was given; one left to the
	// environment is only known here, and --check-config must fail on
	// it as the daemon would. A socket systemd passes has no path to check.
	if os.Getenv("LISTEN_FDS") == "" || *check {
		if err := checkSocketPath(loaded.Settings.Socket); err != nil {
			fmt.Fprintf(stderr, "agentd: %v\n", err)
			return 2
		}
	}
	switch {
	case *print:
		resolve(loaded)
		var b bytes.Buffer
		loaded.Print(&b)
		stdout.Write(b.Bytes())
		return 0
	case *check:
		fmt.Fprintf(stdout, "agentd: config ok (%s)\n", describePath(loaded))
		return 0
	}
	s := loaded.Settings
	setMemoryLimit(s.MemoryBudget)
	level := &atomic.Value{}
	log, err := newLogger(stderr, s.LogLevel, s.LogFormat, level)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		return 2
	}
	cfg := daemonConfig(s)
	cfg.Logger = log
	cfg.ConfigPath = *configPath
	cfg.Hangup = hup
	cfg.Reload = func() (daemon.Config, error) {
		l, err := load(*configPath, flags)
		if err != nil {
			return daemon.Config{}, err
		}
		return daemonConfig(l.Settings), nil
	}
	cfg.SetLogLevel = func(name string) error {
		lvl, err := zerolog.ParseLevel(name)
		if err == nil {
			level.Store(lvl)
		}
		return err
	}
	if err := daemon.New(cfg).Run(ctx); err != nil {
		log.Error().Err(err).Msg("agentd failed")
		return 1
	}
	return 0
}

// checkSocketPath refuses a socket path left to the environment (socket
// is empty) that is too long for a Unix socket, naming the variable it
// came from and the settings that choose another. A socket given in the
// config or by flag is checked by the config itself.
func checkSocketPath(socket string) error {
	if socket != "" {
		return nil
	}
	path := wire.DefaultSocketPath()
	if len(path) <= limits.MaxSocketPath {
		return nil
	}
	const choose = "or choose the socket with socket in the config, $AGENTD_SOCKET or --socket"
	switch {
	case os.Getenv(wire.SocketEnv) != "":
		return fmt.Errorf("socket path %s (from $%s) is %d bytes, over the %d a Unix socket path holds; set a shorter $%s, %s",
			path, wire.SocketEnv, len(path), limits.MaxSocketPath, wire.SocketEnv, "or choose the socket with socket in the config or --socket")
	case os.Getenv("XDG_RUNTIME_DIR") != "":
		return fmt.Errorf("socket path %s (from $XDG_RUNTIME_DIR) is %d bytes, over the %d a Unix socket path holds; set a shorter $XDG_RUNTIME_DIR, %s",
			path, len(path), limits.MaxSocketPath, choose)
	}
	return fmt.Errorf("socket path %s (from $TMPDIR, as $XDG_RUNTIME_DIR is not set) is %d bytes, over the %d a Unix socket path holds; set $XDG_RUNTIME_DIR or a shorter $TMPDIR, %s",
		path, len(path), limits.MaxSocketPath, choose)
}

// explainDuration makes a duration flag's parse error say what a duration
// looks like: the flag package says only "parse error". (Its message is
// rewritten rather than the flag's value wrapped, which would cost --help
// the flags' type and defaults.)
func explainDuration(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	explained := err
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		if _, ok := g.Get().(time.Duration); ok && strings.HasSuffix(msg, " for flag -"+f.Name+": parse error") {
			explained = fmt.Errorf("%s: not a duration; give a number with its unit, such as 1.5s, 500ms or 10m", strings.TrimSuffix(msg, ": parse error"))
		}
	})
	return explained
}

func describePath(l *config.Loaded) string {
	if l.Path == "" {
		return "no config file; defaults and flags"
	}
	return l.Path
}

// setMemoryLimit makes the Go runtime collect hard as the heap nears the
// memory budget plus a margin for everything else, and hand memory back
// after a burst, unless the user set GOMEMLIMIT.
func setMemoryLimit(budget int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(budget + memoryMargin)
	}
}

// memoryMargin is what the daemon needs beside the budget: sessions'
// screens, caches and the runtime.
const memoryMargin = 128 << 20

// resolve records the values the daemon will use where the settings leave
// them to the environment, for --print-config.
func resolve(l *config.Loaded) {
	s := l.Settings
	if s.Socket == "" {
		why := "$XDG_RUNTIME_DIR"
		switch {
		case os.Getenv(wire.SocketEnv) != "":
			why = "$" + wire.SocketEnv
		case os.Getenv("XDG_RUNTIME_DIR") == "":
			why = "a private directory under " + os.TempDir() + " ($XDG_RUNTIME_DIR is not set)"
		}
		l.Resolve("socket", wire.DefaultSocketPath(), why)
	}
	if s.StateDir == "" {
		why := "$XDG_STATE_HOME"
		if os.Getenv("XDG_STATE_HOME") == "" {
			why = "~/.local/state ($XDG_STATE_HOME is not set)"
		}
		l.Resolve("state_dir", daemon.DefaultStateDir(), why)
	}
	if s.Display == "" {
		why := "$DISPLAY"
		if os.Getenv("DISPLAY") == "" {
			why = "$DISPLAY, which is not set: the screen is unavailable"
		}
		l.Resolve("display", os.Getenv("DISPLAY"), why)
	}
	if s.LogFormat == "" {
		format, why := "json", "stderr is not a terminal"
		if isTerminal(os.Stderr) {
			format, why = "console", "stderr is a terminal"
		}
		l.Resolve("log_format", format, why)
	}
}

// daemonConfig turns settings into the daemon's configuration.
func daemonConfig(s config.Settings) daemon.Config {
	display := s.Display
	switch display {
	case "":
		display = os.Getenv("DISPLAY")
	case config.DisplayNone:
		display = ""
	}
	return daemon.Config{
		SocketPath: s.Socket, StateDir: s.StateDir, MaxConnections: s.MaxConnections, MaxSessions: s.MaxSessions,
		ReadTimeout: s.ReadTimeout.D(), ShutdownGrace: s.ShutdownGrace.D(), EventLogCap: s.EventLogCap,
		WriteTimeout: s.WriteTimeout.D(), IdleTimeout: s.IdleTimeout.D(),
		Display: display, AllowAct: s.AllowAct, AuditMaxBytes: s.AuditLogCap,
		AskTimeout: s.AskTimeout.D(), AskIdle: s.AskIdle.D(), LockTimeout: s.LockTimeout.D(),
		ChannelQueue: s.ChannelQueue, LogLevel: s.LogLevel, MemoryBudget: s.MemoryBudget,
		RecordScreen: s.RecordScreen, RecordScreenMaxBytes: s.RecordScreenCap,
		SessionLauncher: s.SessionLauncher, SessionMemoryMax: s.SessionMemoryMax, SessionCPUWeight: s.SessionCPUWeight,
		SessionRestart: s.SessionRestart, NoHooks: !s.Hooks,
		Desktops: s.Desktops, MaxDesktops: s.MaxDesktops, DesktopIdleTimeout: s.DesktopIdle.D(), DesktopServer: s.DesktopServer,
		View: s.View, ViewIdle: s.ViewIdle.D(),
		Notifications: s.Notifications, NotifyWaitingAfter: s.NotifyWaitingAfter.D(), NotifyTerminal: strings.Fields(s.NotifyTerminal),
	}
}

// newLogger builds the one logger: JSON lines for journald, or a console
// format for a person at a terminal. Its level lives in level, so a config
// reload can change it.
func newLogger(w io.Writer, levelName, format string, level *atomic.Value) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(levelName)
	if err != nil || levelName == "" {
		return zerolog.Logger{}, fmt.Errorf("unknown log level %q; use debug, info, warn or error", levelName)
	}
	level.Store(lvl)
	switch format {
	case "":
		if isTerminal(w) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	case "json":
	default:
		return zerolog.Logger{}, fmt.Errorf("unknown log format %q; use json or console", format)
	}
	return zerolog.New(w).Hook(levelHook{level}).With().Timestamp().Logger(), nil
}

// levelHook drops events below the current level, which can change while
// the daemon runs.
type levelHook struct{ level *atomic.Value }

func (h levelHook) Run(e *zerolog.Event, l zerolog.Level, _ string) {
	if l < h.level.Load().(zerolog.Level) {
		e.Discard()
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
