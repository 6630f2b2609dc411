package desktop

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/limits"
)

// Limits of a desktop's screen: TigerVNC's bounds, which every X server
// here can serve; smaller is no use for a program's window, larger than 8K
// costs a quarter of a gigabyte of framebuffer.
const (
	MinSide = 320
	MaxSide = 7680
)

// Defaults of a new desktop.
const (
	DefaultWidth  = 1280
	DefaultHeight = 800
	DefaultWM     = WMOpenbox
	DefaultLayout = "us"
)

// Window managers a desktop can run.
const (
	WMOpenbox = "openbox"
	WMNone    = "none"
)

// X servers a desktop can run on. Xvnc (TigerVNC) is one process for the
// framebuffer, RandR resize and RFB (what a viewer of the desktop speaks);
// Xvfb is the framebuffer alone, always in Debian. Spec.Server "" picks
// Xvnc when it is installed, else Xvfb.
const (
	ServerXvfb = "xvfb"
	ServerXvnc = "xvnc"
)

// Spec is what a new desktop should be.
type Spec struct {
	// Name is the desktop's name (ValidateName); empty picks the first
	// free "desktop-N".
	Name string
	// Width and Height are the screen's size; zero is 1280x800.
	Width, Height int
	// WM is openbox or none; empty is openbox.
	WM string
	// Layout is the XKB keyboard layout, e.g. "us" (the default), "de",
	// "ru".
	Layout string
	// Server is xvfb or xvnc; empty takes the Manager's default
	// (Options.DefaultServer), else Xvnc when installed, else Xvfb.
	Server string
	// Session, when set, is the session the desktop was made for (spawn
	// --desktop new): it goes away with that session unless Keep.
	Session string
	Keep    bool
}

// ValidateName checks a desktop name: the session names' shape, so it is
// safe as a path.
func ValidateName(name string) error {
	if !limits.ValidName(name) || name == "new" {
		if name == "new" {
			return errorf(ErrInvalid, "desktop name \"new\" is reserved (spawn --desktop new makes a desktop); pick another name")
		}
		return errorf(ErrInvalid, "desktop name %q is not valid: use 1-63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// ParseSize reads "WxH" with each side in MinSide..MaxSide.
func ParseSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || strings.HasPrefix(ws, "+") || strings.HasPrefix(hs, "+") {
		return 0, 0, errorf(ErrInvalid, "size %q is not WIDTHxHEIGHT; give one such as 1280x800", s)
	}
	if err := checkSize(w, h); err != nil {
		return 0, 0, err
	}
	return w, h, nil
}

func checkSize(w, h int) error {
	if w < MinSide || w > MaxSide || h < MinSide || h > MaxSide {
		return errorf(ErrInvalid, "size %dx%d is out of range: each side must be %d to %d pixels", w, h, MinSide, MaxSide)
	}
	return nil
}

var layoutPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// xkbSymbols is where xkb-data keeps the layouts.
const xkbSymbols = "/usr/share/X11/xkb/symbols"

// normalize fills the defaults and validates everything that can be
// checked without starting anything; found looks programs up (exec.LookPath
// in the Manager).
func (s *Spec) normalize(found func(string) (string, error)) error {
	if s.Name != "" {
		if err := ValidateName(s.Name); err != nil {
			return err
		}
	}
	if s.Width == 0 && s.Height == 0 {
		s.Width, s.Height = DefaultWidth, DefaultHeight
	}
	if err := checkSize(s.Width, s.Height); err != nil {
		return err
	}
	switch s.WM {
	case "":
		s.WM = DefaultWM
	case WMOpenbox, WMNone:
	default:
		return errorf(ErrInvalid, "unknown window manager %q; use openbox or none", s.WM)
	}
	if s.WM == WMOpenbox {
		if _, err := found("openbox"); err != nil {
			return errorf(ErrStartFailed, "the window manager openbox is not installed; install the Debian package openbox (apt install openbox), or make the desktop with --wm none")
		}
	}
	switch s.Server {
	case "", ServerXvfb, ServerXvnc:
	default:
		return errorf(ErrInvalid, "unknown X server %q; use xvfb or xvnc", s.Server)
	}
	if s.Layout == "" {
		s.Layout = DefaultLayout
	}
	if !layoutPattern.MatchString(s.Layout) {
		return errorf(ErrInvalid, "keyboard layout %q is not an XKB layout name such as us, de or ru", s.Layout)
	}
	if _, err := os.Stat(xkbSymbols + "/" + s.Layout); err != nil {
		return errorf(ErrInvalid, "keyboard layout %q is unknown: there is no %s/%s; pick one listed there (the Debian package xkb-data holds them)", s.Layout, xkbSymbols, s.Layout)
	}
	if s.Layout != DefaultLayout {
		if _, err := found("setxkbmap"); err != nil {
			return errorf(ErrStartFailed, "keyboard layout %q needs setxkbmap, which is not installed; install the Debian package x11-xkb-utils", s.Layout)
		}
	}
	if s.Session != "" && !limits.ValidName(s.Session) {
		return errorf(ErrInvalid, "session name %q is not valid", s.Session)
	}
	return nil
}

// lookPath is exec.LookPath with the error the package gives.
func lookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: %w", name, err)
	}
	return p, nil
}
