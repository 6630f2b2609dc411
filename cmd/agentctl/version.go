package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// versionResult is what `agentctl version` reports.
type versionResult struct {
	Client         string            `json:"client"`
	Daemon         *wire.HelloResult `json:"daemon"`
	InstalledBuild string            `json:"installed_build,omitempty"`
	InstalledPath  string            `json:"installed_path,omitempty"`
	// Stale is true when the running daemon is not the installed binary:
	// restart it to run the upgrade.
	Stale bool `json:"stale"`
}

func versionVerb() command {
	return verb[*versionResult]{
		use: "version", quick: true,
		summary: "print client and daemon versions; warn when the running daemon is not the installed build",
		run: func(ctx context.Context, e *env, args []string) (*versionResult, error) {
			r := &versionResult{Client: buildinfo.Version}
			h, err := e.hello(ctx)
			if err != nil {
				if !e.json {
					fmt.Fprintf(e.stdout, "agentctl %s\n", r.Client)
				}
				// The client's version is known without the daemon: the
				// envelope's error carries it.
				return nil, &detailedError{err: err, details: r}
			}
			r.Daemon = h
			if path := installedDaemon(); path != "" {
				r.InstalledPath = path
				if fp, err := buildinfo.Fingerprint(path); err == nil {
					r.InstalledBuild = fp
					r.Stale = fp != h.Build
				}
			}
			return r, nil
		},
		human: func(w io.Writer, r *versionResult) error {
			fmt.Fprintf(w, "agentctl %s\n", r.Client)
			fmt.Fprintf(w, "agentd   %s (build %s, pid %d, protocol %d, socket %s)\n",
				r.Daemon.Version, r.Daemon.Build, r.Daemon.PID, r.Daemon.Protocol, r.Daemon.Socket)
			if r.Stale {
				fmt.Fprintf(w, "warning: the running agentd (build %s) is not the installed %s (build %s); restart it to run the installed one (systemctl --user restart agentd)\n",
					r.Daemon.Build, r.InstalledPath, r.InstalledBuild)
			}
			return nil
		},
	}
}

// installedDaemon finds the agentd binary a restart would run: the one
// beside agentctl, else the first on PATH.
func installedDaemon() string {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "agentd"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("agentd"); err == nil {
		return p
	}
	return ""
}

func helloVerb() command {
	return verb[*wire.HelloResult]{
		use: "hello", quick: true,
		summary: "the handshake: the daemon's version, build, limits and methods",
		run:     func(ctx context.Context, e *env, args []string) (*wire.HelloResult, error) { return e.hello(ctx) },
	}
}

// hello is the handshake, as agentctl of this version.
func (e *env) hello(ctx context.Context) (*wire.HelloResult, error) {
	return e.client().Hello(ctx, wire.HelloParams{Version: wire.ProtocolVersion, Client: "agentctl " + buildinfo.Version})
}
