package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/daemon"
)

const usage = `agentd — the per-user daemon for agent sessions and the X11 screen

Usage:
  agentd [flags]        run the daemon in the foreground
  agentd version        print the version and build

Flags:
`

// run is agentd's whole life; it returns the process exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "version" {
		fp, _ := buildinfo.SelfFingerprint()
		fmt.Fprintf(stderr, "agentd %s (build %s)\n", buildinfo.Version, fp)
		return 0
	}
	fs := flag.NewFlagSet("agentd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       daemon.Config
		logLevel  = fs.String("log-level", "info", "log level: debug, info, warn, error")
		logFormat = fs.String("log-format", "", "log format: json or console (default: console on a terminal, json otherwise)")
	)
	fs.StringVar(&cfg.SocketPath, "socket", "", "socket path (default $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "state directory (default $XDG_STATE_HOME/agentd)")
	fs.IntVar(&cfg.MaxConnections, "max-connections", daemon.DefaultMaxConnections, "most client connections at once; more are answered busy")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", 10*time.Second, "how long a frame may take to arrive once begun")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", daemon.DefaultShutdownGrace, "how long in-flight requests may finish on stop")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd: unexpected argument %q; see agentd --help\n", fs.Arg(0))
		return 2
	}
	log, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		return 2
	}
	cfg.Logger = log
	if err := daemon.New(cfg).Run(ctx); err != nil {
		log.Error().Err(err).Msg("agentd failed")
		return 1
	}
	return 0
}

// newLogger builds the one logger: JSON lines for journald, or a console
// format for a person at a terminal.
func newLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("unknown --log-level %q; use debug, info, warn or error", level)
	}
	switch format {
	case "":
		if isTerminal(w) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	case "json":
	default:
		return zerolog.Logger{}, fmt.Errorf("unknown --log-format %q; use json or console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
