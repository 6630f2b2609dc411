package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// nativeViewers are TigerVNC's viewer under the names Debian installs
// (tigervnc-viewer): both take a Unix socket's path as the server.
var nativeViewers = []string{"vncviewer", "xtigervncviewer"}

func desktopViewVerb() command {
	var print, native, input bool
	return verb[*viewResult]{
		use:     "view NAME [--print] [--native [--input]]",
		summary: "watch a desktop, live, in agentd's page (view only until you take it over), or in TigerVNC's viewer with --native",
		long: "Open agentd's page on the desktop: its screen, live, in noVNC, view only; Take over gives you its\n" +
			"keyboard and pointer (agents' batches on it get busy until you hand back or close the page).\n" +
			"The page is served on 127.0.0.1 only behind a one-time link, as agentctl view's is. Only Xvnc\n" +
			"desktops serve the screen (RFB); Xvfb ones cannot be watched. --native runs TigerVNC's own viewer\n" +
			"(Debian package tigervnc-viewer) on the desktop's 0600 RFB socket instead, view only, and waits for\n" +
			"it to close; --input lets that viewer type and click too, without holding agents off (their batches\n" +
			"and your input interleave: the page's Take over is the way to hold them off).",
		example: "  agentctl desktop view d1\n  agentctl desktop view d1 --print\n  agentctl desktop view d1 --native",
		args:    exactArgs(1), quick: true,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&print, "print", false, "print the page's URL instead of opening a browser")
			fs.BoolVar(&native, "native", false, "open TigerVNC's vncviewer (view only) on the desktop's RFB socket instead of the page")
			fs.BoolVar(&input, "input", false, "with --native: the viewer types and clicks too, without holding agents' batches off")
		},
		run: func(ctx context.Context, e *env, args []string) (*viewResult, error) {
			if input && !native {
				return nil, usagef("--input is for --native: in the page, Take over gives the keyboard and pointer")
			}
			if native {
				return nil, nativeView(ctx, e, args[0], input)
			}
			return openView(ctx, e, wire.ViewParams{Desktop: args[0]}, print)
		},
		human: viewHuman("the desktop's page"),
	}
}

// nativeView runs TigerVNC's viewer on the desktop's RFB socket until it
// exits: view only unless input.
func nativeView(ctx context.Context, e *env, name string, input bool) error {
	var viewer string
	for _, n := range nativeViewers {
		if p, err := exec.LookPath(n); err == nil {
			viewer = p
			break
		}
	}
	if viewer == "" {
		return wire.Errorf(wire.CodeSpawnFailed, "TigerVNC's viewer (vncviewer) is not installed: install the Debian package tigervnc-viewer (apt install tigervnc-viewer), or drop --native to watch the desktop in agentd's page")
	}
	l, err := e.client().DesktopList(ctx)
	if err != nil {
		return err
	}
	for _, d := range l.Desktops {
		if d.Name != name {
			continue
		}
		if d.RFB == "" {
			return wire.Errorf(wire.CodeScreenUnavailable, "desktop %q runs on %s, which serves no RFB: make desktops with --server xvnc (Debian package tigervnc-standalone-server) to watch them", name, d.Server)
		}
		if d.Status != wire.DesktopRunning {
			return wire.Errorf(wire.CodeScreenUnavailable, "desktop %q is %s: only a running desktop can be watched", name, d.Status)
		}
		args := []string{d.RFB}
		if !input {
			args = []string{"-ViewOnly", d.RFB}
		}
		cmd := exec.CommandContext(ctx, viewer, args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", viewer, d.RFB, err)
		}
		return errPrinted
	}
	return wire.Errorf(wire.CodeScreenUnavailable, "desktop %q does not exist; agentctl desktop ls shows the desktops", name)
}
