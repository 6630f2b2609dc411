package capture

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/xgb/xproto"
)

// launchWait is how long a focus action waits for the window of an
// application it started; launchAllowance in the budget covers it.
const launchWait = 20 * time.Second

// windowPoll is how often a focus action looks for a new window.
const windowPoll = 100 * time.Millisecond

type window struct {
	id    xproto.Window
	title string
	class string // instance and class, space separated
}

// windows lists the application windows: the window manager's
// _NET_CLIENT_LIST, or without one the viewable children of the root (and
// their children, for frames of window managers without EWMH).
func (x *xconn) windows() ([]window, error) {
	var ids []xproto.Window
	r, err := xproto.GetProperty(x.c, false, x.root, x.atoms.netClientList, xproto.AtomWindow, 0, 4096).Reply()
	if err == nil && r.Format == 32 && len(r.Value) >= 4 {
		for i := 0; i+4 <= len(r.Value); i += 4 {
			ids = append(ids, xproto.Window(uint32(r.Value[i])|uint32(r.Value[i+1])<<8|uint32(r.Value[i+2])<<16|uint32(r.Value[i+3])<<24))
		}
	} else {
		tree, err := xproto.QueryTree(x.c, x.root).Reply()
		if err != nil || !x.alive() {
			return nil, x.fail(errors.Join(err, errors.New("query tree")))
		}
		for _, w := range tree.Children {
			a, err := xproto.GetWindowAttributes(x.c, w).Reply()
			if err != nil || a.MapState != xproto.MapStateViewable || a.OverrideRedirect {
				continue
			}
			ids = append(ids, w)
			if sub, err := xproto.QueryTree(x.c, w).Reply(); err == nil {
				ids = append(ids, sub.Children...)
			}
		}
	}
	var out []window
	for _, id := range ids {
		w := window{id: id, title: x.windowTitle(id), class: strings.ReplaceAll(strings.TrimRight(x.windowText(id, x.atoms.wmClass), "\x00"), "\x00", " ")}
		if w.title != "" || w.class != "" {
			out = append(out, w)
		}
	}
	return out, nil
}

// findWindow returns the first window whose title or class holds name,
// ignoring case.
func (x *xconn) findWindow(name string) (window, bool, error) {
	ws, err := x.windows()
	if err != nil {
		return window{}, false, err
	}
	name = strings.ToLower(name)
	for _, w := range ws {
		if strings.Contains(strings.ToLower(w.title), name) || strings.Contains(strings.ToLower(w.class), name) {
			return w, true, nil
		}
	}
	return window{}, false, nil
}

// raise activates w: through the window manager (_NET_ACTIVE_WINDOW) when
// there is one, else by raising it and giving it the input focus directly.
func (x *xconn) raise(w xproto.Window) error {
	if r, err := xproto.GetProperty(x.c, false, x.root, x.atoms.netSupportingWMCheck, xproto.AtomWindow, 0, 1).Reply(); err == nil && r.Format == 32 && len(r.Value) >= 4 {
		ev := xproto.ClientMessageEvent{
			Format: 32, Window: w, Type: x.atoms.netActiveWindow,
			// Source 2: a pager, i.e. the user's own choice, which window
			// managers do not second-guess with focus stealing prevention.
			Data: xproto.ClientMessageDataUnionData32New([]uint32{2, 0, 0, 0, 0}),
		}
		xproto.SendEvent(x.c, false, x.root, xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes()))
		return x.sync()
	}
	xproto.MapWindow(x.c, w)
	xproto.ConfigureWindow(x.c, w, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove})
	xproto.SetInputFocus(x.c, xproto.InputFocusPointerRoot, w, xproto.TimeCurrentTime)
	return x.sync()
}

// focus raises the window named by the action, starting the application
// when no window matches.
func (r *batchRun) focus(a Action) error {
	w, ok, err := r.x.findWindow(a.Application)
	if err != nil {
		return err
	}
	if !ok {
		if err := launch(r.x.display, a.Application, a.URI); err != nil {
			return err
		}
		deadline := time.Now().Add(launchWait)
		name := filepath.Base(a.Application)
		for !ok {
			if time.Now().After(deadline) {
				return fmt.Errorf("started %q but no window with %q in its title or class appeared within %v", a.Application, name, launchWait)
			}
			if err := r.sleep(windowPoll, a.Number); err != nil {
				return err
			}
			if w, ok, err = r.x.findWindow(name); err != nil {
				return err
			}
		}
	}
	return r.x.raise(w.id)
}

// launch starts an application detached from the daemon: a shell starts it
// in the background and exits, so the application is not the daemon's child
// and outlives it.
func launch(display, app, uri string) error {
	if _, err := exec.LookPath(app); err != nil {
		return invalidf("no window matches %q and no program by that name is installed; give a window title or class, or a program name", app)
	}
	args := []string{"-c", `"$@" </dev/null >/dev/null 2>&1 &`, "sh", app}
	if uri != "" {
		args = append(args, uri)
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start %s: %w", app, err)
	}
	return nil
}
