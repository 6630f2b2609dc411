package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// checkTarget refuses, before any capture, a path that is a symbolic
// link, a directory, or a file that exists without force.
func checkTarget(path string, force bool) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode()&os.ModeSymlink != 0:
		return usagef("%s is a symbolic link; give the real path", path)
	case !st.Mode().IsRegular():
		return usagef("%s is not a regular file; give a file name", path)
	case !force:
		return usagef("%s exists; pass --force to replace it", path)
	}
	return nil
}

// writeImage writes data to path whole or not at all: into a temporary
// file beside it (0600, as the daemon wrote them: a screen may show
// secrets), then linked into place (which fails if a file appeared
// meanwhile) or, with force, renamed over the old one.
func writeImage(path string, data []byte, force bool) error {
	if err := checkTarget(path, force); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usagef("%s exists; pass --force to replace it", path)
		}
		return err
	}
	return nil
}

// defaultJPEGQuality is the quality of a screenshot whose file is named
// .jpg without --jpeg: the name says which format is wanted.
const defaultJPEGQuality = 80

func screenshotVerb() command {
	var out, region string
	var monitor, maxWidth, jpeg int
	var force bool
	var desk string
	return verb[*wire.ScreenshotResult]{
		use:     "screenshot -o FILE|- [--region X,Y,W,H] [--monitor N] [--max-width N] [--jpeg QUALITY] [--force] [--desktop NAME]",
		summary: "save a screenshot (PNG, or JPEG with --jpeg); -o - writes it to stdout",
		long: "Save a screenshot of the display. The format is PNG, or JPEG with --jpeg QUALITY (1-100) or a\n" +
			"file named .jpg or .jpeg (quality 80). The image comes back over the socket and agentctl writes\n" +
			"the file, so over a forwarded socket it lands on this machine. An existing file is replaced only\n" +
			"with --force; a symbolic link is never written through. -o - writes the image to stdout, and is\n" +
			"refused when stdout is a terminal.\n\n" +
			"The file's name must not claim another format: .png is PNG (so --jpeg refuses it), .jpg and .jpeg\n" +
			"are JPEG, a name without an extension takes either; any other extension (.gif, .webp) is refused.",
		example: "  agentctl screenshot -o shot.png --region 0,0,800,600\n  agentctl screenshot -o - --jpeg 80 > shot.jpg",
		flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&out, "output", "o", "", "file to write, or - for stdout")
			fs.StringVar(&region, "region", "", "X,Y,W,H in screen pixels")
			fs.IntVar(&monitor, "monitor", -1, "monitor index (agentctl screen lists them)")
			fs.IntVar(&maxWidth, "max-width", -1, "scale down to at most this width")
			fs.IntVar(&jpeg, "jpeg", 0, "JPEG with this quality (1-100) instead of PNG")
			fs.BoolVar(&force, "force", false, "replace an existing file")
			desktopFlag(fs, &desk)
		},
		flagComplete: map[string]completeKind{"output": completeFiles},
		run: func(ctx context.Context, e *env, args []string) (*wire.ScreenshotResult, error) {
			if out == "" {
				return nil, usagef("screenshot needs -o FILE, or -o - for stdout; see agentctl screenshot --help")
			}
			p := wire.ScreenshotParams{Desktop: desk}
			var err error
			if region != "" {
				if p.Region, err = parseRegion(region); err != nil {
					return nil, err
				}
			}
			if monitor >= 0 {
				p.Monitor = &monitor
			}
			if maxWidth != -1 {
				p.MaxWidth = &maxWidth
			}
			ext := strings.ToLower(filepath.Ext(out))
			switch ext {
			case "", ".png", ".jpg", ".jpeg":
			default:
				// PNG bytes in shot.gif would fool whatever opens it.
				return nil, usagef("%s is named %s, but screenshot writes PNG (.png) or JPEG (.jpg, .jpeg, or --jpeg); name the file for one of those", out, ext)
			}
			switch {
			case e.cmd.Flags().Changed("jpeg"):
				// 0 used to mean PNG, silently, even into x.jpg.
				if jpeg < 1 || jpeg > 100 {
					return nil, usagef("--jpeg %d: the quality is 1 to 100 (80 is a good start); leave --jpeg out for PNG", jpeg)
				}
				if ext == ".png" {
					return nil, usagef("--jpeg writes JPEG, but %s is named .png; name it .jpg, or leave --jpeg out", out)
				}
				p.Format, p.Quality = "jpeg", &jpeg
			case ext == ".jpg" || ext == ".jpeg":
				q := defaultJPEGQuality
				p.Format, p.Quality = "jpeg", &q
			}
			if out == "-" {
				// Image bytes would garble a terminal (curl refuses too).
				if f, ok := e.stdout.(*os.File); ok && isTerminal(f) {
					return nil, usagef("screenshot -o - writes image bytes, and stdout is a terminal; redirect it (> shot.png) or give -o FILE")
				}
			}
			// The image comes back in the answer and agentctl writes the
			// file: over a forwarded socket (README: SSH) the file is on
			// this machine, not the daemon's. It is checked before the
			// screen is captured.
			var path string
			if out != "-" {
				if path, err = filepath.Abs(out); err != nil {
					return nil, err
				}
				if err := checkTarget(path, force); err != nil {
					return nil, err
				}
			}
			r, err := e.client().Screenshot(ctx, p)
			if err != nil {
				return nil, err
			}
			if out == "-" {
				if _, err := e.stdout.Write(r.Image); err != nil {
					return nil, err
				}
				return nil, errPrinted
			}
			if err := writeImage(path, r.Image, force); err != nil {
				return nil, err
			}
			r.Path, r.Bytes, r.Image = path, len(r.Image), nil
			return r, nil
		},
		human: func(w io.Writer, s *wire.ScreenshotResult) error {
			fmt.Fprintf(w, "%s: %dx%d %s, %d bytes (capture %.1f ms, encode %.1f ms)\n", s.Path, s.Width, s.Height, s.Format, s.Bytes, s.CaptureMS, s.EncodeMS)
			return nil
		},
	}
}

func parseRegion(s string) (*wire.Region, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return nil, usagef("region %q is not X,Y,W,H", s)
	}
	var n [4]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, usagef("region %q is not X,Y,W,H of whole numbers", s)
		}
		n[i] = v
	}
	return &wire.Region{X: n[0], Y: n[1], Width: n[2], Height: n[3]}, nil
}

func actVerb() command {
	var desk string
	return verb[*wire.ActResult]{
		use:     "act JSON|- [--desktop NAME]",
		summary: "run an input batch: a JSON array of actions, or {actions, observe, settle_ms}; - reads stdin",
		example: "  agentctl act '[{\"kind\":\"click\",\"x\":640,\"y\":400},{\"kind\":\"type\",\"text\":\"hello\\n\"}]'",
		args:    exactArgs(1),
		flags:   func(fs *pflag.FlagSet) { desktopFlag(fs, &desk) },
		run: func(ctx context.Context, e *env, args []string) (*wire.ActResult, error) {
			text, err := e.stdinText(args[0])
			if err != nil {
				return nil, err
			}
			p, err := parseBatch(text)
			if err != nil {
				return nil, err
			}
			if desk != "" {
				p.Desktop = desk
			}
			return e.client().Act(ctx, p)
		},
		human: func(w io.Writer, a *wire.ActResult) error {
			fmt.Fprintf(w, "%s: %s in %.0f ms\n", a.Outcome, count(a.ActionsRun, "action"), a.DurationMS)
			if o := a.Observation; o != nil {
				state := fmt.Sprintf("%d bytes of %s", o.Bytes, o.Format)
				if o.Unchanged {
					state = "unchanged"
				}
				fmt.Fprintf(w, "observation: frame %d, %dx%d, %s, pointer %d,%d, window %q\n", o.FrameID, o.Width, o.Height, state, o.Pointer.X, o.Pointer.Y, o.ActiveWindow)
			}
			return nil
		},
	}
}

// parseBatch reads the batch as an array of actions or a whole request
// object, strictly: an unknown field is an error naming it.
func parseBatch(text string) (wire.ActParams, error) {
	var p wire.ActParams
	trimmed := strings.TrimSpace(text)
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var err error
	switch {
	case strings.HasPrefix(trimmed, "["):
		err = dec.Decode(&p.Actions)
	case strings.HasPrefix(trimmed, "{"):
		err = dec.Decode(&p)
	default:
		return p, usagef("the batch must be a JSON array of actions or an object {\"actions\": [...]}")
	}
	if err != nil {
		return p, usagef("the batch is not valid: %v", err)
	}
	if dec.More() {
		return p, usagef("the batch has trailing data after the JSON value")
	}
	return p, nil
}

func screenVerb() command {
	var desk string
	return verb[*wire.ScreenResult]{
		use: "screen [--desktop NAME]", summary: "the display: size, monitors, extensions, keyboard layout, consent, kill switch, holder",
		flags: func(fs *pflag.FlagSet) { desktopFlag(fs, &desk) },
		run: func(ctx context.Context, e *env, args []string) (*wire.ScreenResult, error) {
			c := e.client()
			if desk != "" {
				return c.ScreenOf(ctx, wire.ScreenParams{Desktop: desk})
			}
			return c.Screen(ctx)
		},
		human: func(w io.Writer, s *wire.ScreenResult) error {
			var b bytes.Buffer
			if s.Desktop != "" {
				fmt.Fprintf(&b, "desktop:     %s\n", s.Desktop)
			}
			fmt.Fprintf(&b, "display:     %s\n", s.Display)
			if !s.Connected {
				fmt.Fprintf(&b, "connected:   no (%s)\n", s.Reason)
			} else {
				fmt.Fprintf(&b, "size:        %dx%d\n", s.Width, s.Height)
				for _, m := range s.Monitors {
					fmt.Fprintf(&b, "monitor %d:   %s %dx%d+%d+%d\n", m.Index, m.Name, m.Width, m.Height, m.X, m.Y)
				}
				fmt.Fprintf(&b, "extensions:  %s\n", strings.Join(s.Extensions, ", "))
				fmt.Fprintf(&b, "capture:     %s (%s)\n", s.CaptureMethod, s.CaptureWhy)
				fmt.Fprintf(&b, "keyboard:    %s %s\n", s.KeyboardLayout, s.KeyboardVariant)
			}
			consent := "no (start agentd with --allow-act to allow it)"
			if s.Desktop != "" {
				consent = "no (set desktops = true in config.toml to allow it)"
			}
			if s.AllowAct {
				consent = "yes"
			}
			fmt.Fprintf(&b, "acting:      %s\n", consent)
			fmt.Fprintf(&b, "kill switch: %s\n", s.KillSwitch)
			if h := s.Holder; h != nil {
				fmt.Fprintf(&b, "held by:     pid %d %s %s since %s (%d waiting)\n", h.PID, h.Executable, h.Session, h.Since.Format("15:04:05"), s.Waiting)
			}
			_, err := w.Write(b.Bytes())
			return err
		},
	}
}
