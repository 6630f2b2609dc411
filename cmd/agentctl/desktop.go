package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// desktopVerb is `agentctl desktop ...`: the agents' own X desktops.
func desktopVerb() command {
	return group{
		use:     "desktop COMMAND",
		summary: "desktops of their own for agents: make one (new), list them (ls), resize one (resize), remove one (rm), use its clipboard (clip), watch it in a browser (view)",
		long: "A desktop is a private X server (TigerVNC's Xvnc when installed, else Xvfb) with a small window manager that agentd owns, so an agent's\n" +
			"windows, pointer and keyboard stay out of your way. Start programs on it with spawn --desktop NAME,\n" +
			"and point screenshot, act and screen at it with --desktop NAME. It is not a security boundary:\n" +
			"its programs run as you and can still reach your own display. Needs desktops = true in config.toml.",
		subs: []command{desktopNewVerb(), desktopLsVerb(), desktopResizeVerb(), desktopRmVerb(), desktopClipVerb(), desktopViewVerb()},
	}
}

func desktopNewVerb() command {
	var p wire.DesktopNewParams
	return verb[*wire.DesktopRow]{
		use:     "new [NAME] [--size WxH] [--wm openbox|none] [--layout LAYOUT] [--server xvnc|xvfb]",
		summary: "start a desktop (Xvnc if installed else Xvfb, openbox by default, US keyboard layout); NAME defaults to desktop-N",
		long: "With Xvnc (Debian package tigervnc-standalone-server) the desktop also serves RFB, for a VNC viewer,\n" +
			"on a Unix socket of mode 0600 in its private directory (desktop ls shows it); there is no TCP port.",
		example: "  agentctl desktop new d1\n  agentctl desktop new big --size 1920x1080 --wm none --layout de\n  agentctl desktop new plain --server xvfb",
		args:    rangeArgs(0, 1),
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Size, "size", "1280x800", "screen size WIDTHxHEIGHT, each side 320-7680")
			fs.StringVar(&p.WM, "wm", "openbox", "window manager: openbox or none")
			fs.StringVar(&p.Layout, "layout", "us", "XKB keyboard layout (us, de, fr, ru, ...)")
			fs.StringVar(&p.Server, "server", "", "X server: xvnc (also serves RFB on a 0600 Unix socket) or xvfb; default xvnc when installed")
		},
		run: func(ctx context.Context, e *env, args []string) (*wire.DesktopRow, error) {
			if len(args) == 1 {
				p.Name = args[0]
			}
			return e.client().DesktopNew(ctx, p)
		},
		human: func(w io.Writer, d *wire.DesktopRow) error {
			fmt.Fprintf(w, "%s %s on DISPLAY=%s (%s, %dx%d, wm %s, layout %s)\n", d.Name, d.Status, d.Display, d.Server, d.Width, d.Height, d.WM, d.Layout)
			if d.RFB != "" {
				fmt.Fprintf(w, "RFB (VNC) on the Unix socket %s\n", d.RFB)
			}
			return nil
		},
	}
}

func desktopLsVerb() command {
	return verb[*wire.DesktopListResult]{
		use:     "ls",
		summary: "list the desktops: name, status, display, server, size, window manager, layout, session, RFB socket",
		quick:   true,
		run: func(ctx context.Context, e *env, args []string) (*wire.DesktopListResult, error) {
			return e.client().DesktopList(ctx)
		},
		human: func(w io.Writer, l *wire.DesktopListResult) error {
			if len(l.Desktops) == 0 {
				fmt.Fprintln(w, "no desktops; make one with agentctl desktop new")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATUS\tDISPLAY\tSERVER\tSIZE\tWM\tLAYOUT\tAGE\tSESSION\tRFB")
			for _, d := range l.Desktops {
				status := string(d.Status)
				if d.Acting {
					status += " (acting)"
				}
				if d.Reason != "" && d.Status != wire.DesktopRunning {
					status += ": " + d.Reason
				}
				sess := d.Session
				if sess != "" && d.Keep {
					sess += " (kept)"
				}
				wm := d.WM
				if d.WMState != "" {
					wm = d.WMState
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%dx%d\t%s\t%s\t%s\t%s\t%s\n", d.Name, status, d.Display, d.Server, d.Width, d.Height, wm, d.Layout,
					time.Since(d.CreatedAt).Round(time.Second), orDash(sess), orDash(d.RFB))
			}
			return tw.Flush()
		},
	}
}

func desktopResizeVerb() command {
	return verb[*wire.DesktopRow]{
		use:     "resize NAME WxH",
		summary: "change an Xvnc desktop's screen size through RandR (each side 320-7680); Xvfb desktops cannot be resized",
		example: "  agentctl desktop resize d1 1920x1080",
		args:    exactArgs(2),
		run: func(ctx context.Context, e *env, args []string) (*wire.DesktopRow, error) {
			return e.client().DesktopResize(ctx, wire.DesktopResizeParams{Name: args[0], Size: args[1]})
		},
		human: func(w io.Writer, d *wire.DesktopRow) error {
			fmt.Fprintf(w, "%s is %dx%d\n", d.Name, d.Width, d.Height)
			return nil
		},
	}
}

func desktopRmVerb() command {
	var p wire.DesktopRmParams
	return verb[*desktopRemoved]{
		use:     "rm NAME [--force]",
		summary: "end a desktop's X server and window manager and remove its files; refused while a batch runs unless --force",
		args:    exactArgs(1),
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&p.Force, "force", false, "remove it even while a batch runs on it")
		},
		run: func(ctx context.Context, e *env, args []string) (*desktopRemoved, error) {
			p.Name = args[0]
			if err := e.client().DesktopRm(ctx, p); err != nil {
				return nil, err
			}
			return &desktopRemoved{Removed: p.Name}, nil
		},
		human: func(w io.Writer, r *desktopRemoved) error {
			fmt.Fprintf(w, "%s removed\n", r.Removed)
			return nil
		},
	}
}

// desktopRemoved is what desktop rm did: the daemon answers only success.
type desktopRemoved struct {
	Removed string `json:"removed"`
}

func desktopClipVerb() command {
	return verb[*wire.DesktopClipResult]{
		use:     "clip NAME [get | set TEXT|-]",
		summary: "print a desktop's clipboard (get, the default) or set it (set TEXT, or - for stdin); at most 64 KiB",
		long: "The clipboard is the desktop's CLIPBOARD selection as UTF-8 text. agentd holds text it sets until\n" +
			"a program on the desktop copies something else (or agentd stops). The audit log records the\n" +
			"length only, never the text.",
		example: "  agentctl desktop clip d1 set 'hello'\n  agentctl desktop clip d1 > clip.txt\n  date | agentctl desktop clip d1 set -",
		args:    rangeArgs(1, 3),
		run: func(ctx context.Context, e *env, args []string) (*wire.DesktopClipResult, error) {
			p := wire.DesktopClipParams{Name: args[0], Op: wire.ClipGet}
			switch {
			case len(args) == 1 || (len(args) == 2 && args[1] == wire.ClipGet):
			case len(args) == 3 && args[1] == wire.ClipSet:
				text, err := e.stdinText(args[2])
				if err != nil {
					return nil, err
				}
				if len(text) > wire.MaxClipBytes {
					return nil, usagef("the text is %d bytes, over the %d (64 KiB) a desktop's clipboard holds", len(text), wire.MaxClipBytes)
				}
				p.Op, p.Text = wire.ClipSet, &text
			case len(args) == 2 && args[1] == wire.ClipSet:
				return nil, usagef("clip set needs TEXT, or - to read it from stdin")
			default:
				return nil, usagef("usage: agentctl desktop clip NAME [get | set TEXT|-]")
			}
			r, err := e.client().DesktopClip(ctx, p)
			if err != nil {
				return nil, err
			}
			if p.Op == wire.ClipGet && !e.json {
				if _, err := io.WriteString(e.stdout, r.Text); err != nil {
					return nil, err
				}
				return nil, errPrinted
			}
			return r, nil
		},
		human: func(w io.Writer, r *wire.DesktopClipResult) error {
			fmt.Fprintf(w, "clipboard set (%d bytes)\n", r.Bytes)
			return nil
		},
	}
}

// desktopFlag is the screen verbs' target flag.
func desktopFlag(fs *pflag.FlagSet, v *string) {
	fs.StringVar(v, "desktop", "", "act on this agent's desktop (agentctl desktop ls) instead of your display")
}

// spawnDesktopFlags are spawn's: the desktop the program opens its windows
// on.
func spawnDesktopFlags(fs *pflag.FlagSet, desk *string, keep *bool) {
	fs.StringVar(desk, "desktop", "", "open the program's windows on this desktop, or on a new one made for the session (new)")
	fs.BoolVar(keep, "keep-desktop", false, "with --desktop new: keep the desktop when the session ends")
}

// orDash is a table cell: "-" for nothing, so columns stay readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
