package desktop

import (
	"fmt"
	"os/exec"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
)

// The window manager starts with the first window. A desktop with no
// window on it needs none, and openbox alone is about 19.5 MB resident
// (13 MB of it pages no other process maps): more than the rest of an idle
// desktop over its X server. So the worker watches the root window
// (SubstructureNotify, which any client may select; SubstructureRedirect
// is the window manager's own) and starts openbox when a top-level window
// is first mapped: a child of the root that is not override-redirect.
// Windows nobody shows (the clipboard owners' 1x1 InputOnly windows, the
// worker's and the daemon's) and menus or tooltips (override-redirect) do
// not count. openbox adopts the windows already mapped when it starts:
// it reparents them into decorated frames as if they had been mapped
// under it.
//
// openbox gives the keyboard focus at its start to the window the root's
// _NET_ACTIVE_WINDOW names (what a window manager it replaces left), and
// otherwise to none of the windows it adopts: keys typed into the program
// would go nowhere until something clicked it. So the worker names the
// window that started it there before it starts openbox.
//
// The price: a program's first window is shown for a moment without a
// frame, and a program that asks at its start whether a window manager
// runs (_NET_SUPPORTING_WM_CHECK) before it maps anything is told none
// does. Programs agents run (terminals, toolkits, browsers) map first and
// cope with a manager arriving later, as they do when a person restarts
// theirs.
//
// Once started the window manager stays. One that exits is started
// again, at most wmRestarts times in the desktop's life, so a manager that
// cannot run (another one holds the screen) cannot loop; after that the
// desktop goes on without one and its Reason says why.

// wmRestarts is how many times a window manager that exited is started
// again.
const wmRestarts = 3

// watchFirstWindow connects to the desktop and selects SubstructureNotify
// on its root: w.wmWanted is closed when a top-level window is first
// mapped. serve then starts the window manager (startWM) and closes the
// connection (stopWatch).
func (w *worker) watchFirstWindow() error {
	c, err := xgb.NewConnDisplay(w.d.Display)
	if err != nil {
		return fmt.Errorf("watch the desktop for its first window: connect to %s: %v", w.d.Display, err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	err = xproto.ChangeWindowAttributesChecked(c, root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskSubstructureNotify}).Check()
	if err != nil {
		c.Close()
		return fmt.Errorf("watch the desktop for its first window: select SubstructureNotify on the root: %v", err)
	}
	active, err := xproto.InternAtom(c, false, uint16(len("_NET_ACTIVE_WINDOW")), "_NET_ACTIVE_WINDOW").Reply()
	if err != nil {
		c.Close()
		return fmt.Errorf("watch the desktop for its first window: %v", err)
	}
	// shown names win as the window to focus and ends the watch.
	wanted := make(chan struct{})
	shown := func(win xproto.Window) {
		// xgb panics on a request after Close: stopWatch waits.
		w.watchMu.Lock()
		defer w.watchMu.Unlock()
		if w.wmWatch != c {
			return // the desktop ends
		}
		b := []byte{byte(win), byte(win >> 8), byte(win >> 16), byte(win >> 24)}
		if err := xproto.ChangePropertyChecked(c, xproto.PropModeReplace, root, active.Atom, xproto.AtomWindow, 32, 1, b).Check(); err != nil {
			fmt.Fprintf(w.log, "naming the first window %#x the active one: %v\n", win, err)
		}
		close(wanted)
	}
	w.watchMu.Lock()
	w.wmWatch, w.wmWanted = c, wanted
	w.watchMu.Unlock()
	// A window mapped before the selection took effect sends no event.
	// No client but the worker knows the display before the desktop is
	// reported ready, so there is none; the check costs one round trip.
	if win, err := topLevelShown(c, root); err != nil {
		w.stopWatch()
		return fmt.Errorf("watch the desktop for its first window: %v", err)
	} else if win != 0 {
		shown(win)
		return nil
	}
	go func() {
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return // closed: the window manager started, or the desktop ends
			}
			if e, ok := ev.(xproto.MapNotifyEvent); ok && e.Event == root && !e.OverrideRedirect {
				shown(e.Window)
				return
			}
		}
	}()
	return nil
}

// topLevelShown returns a child of root that is mapped and not
// override-redirect, 0 when there is none.
func topLevelShown(c *xgb.Conn, root xproto.Window) (xproto.Window, error) {
	tree, err := xproto.QueryTree(c, root).Reply()
	if err != nil {
		return 0, err
	}
	for _, win := range tree.Children {
		a, err := xproto.GetWindowAttributes(c, win).Reply()
		if err != nil {
			continue // gone since
		}
		if a.MapState != xproto.MapStateUnmapped && !a.OverrideRedirect {
			return win, nil
		}
	}
	return 0, nil
}

// stopWatch closes the watching connection, if any; its goroutine ends.
func (w *worker) stopWatch() {
	w.watchMu.Lock()
	defer w.watchMu.Unlock()
	if w.wmWatch != nil {
		w.wmWatch.Close()
		w.wmWatch = nil
	}
	w.wmWanted = nil
}

// startWM starts the window manager and records it in the manifest.
func (w *worker) startWM() error {
	cmd := exec.Command(w.spec.WMPath, "--sm-disable")
	cmd.Env = w.programEnv()
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the window manager %s: %v", w.spec.WMPath, err)
	}
	w.wm, w.wmDone = cmd, waitFor(cmd)
	w.wmStarts++
	w.d.WMPending = false
	w.d.WindowManager = memberOf(cmd.Process.Pid)
	return writeManifest(w.spec.Dir, &w.d)
}

// wmExited handles the window manager's exit: it is started again unless
// it was already restarted wmRestarts times.
func (w *worker) wmExited(err error) {
	w.wm, w.wmDone = nil, nil
	w.d.WindowManager = member{}
	if restarts := w.wmStarts - 1; restarts < wmRestarts {
		fmt.Fprintf(w.log, "the window manager exited (%v); starting it again (%d of %d)\n", exitText(err), restarts+1, wmRestarts)
		serr := w.startWM()
		if serr == nil {
			return
		}
		err = serr
	}
	fmt.Fprintf(w.log, "the window manager exited (%v) and was restarted %d times; the desktop goes on without one\n", exitText(err), wmRestarts)
	w.d.Reason = fmt.Sprintf("the window manager exited (%s) after %d restarts; the desktop goes on without one", exitText(err), wmRestarts)
	writeManifest(w.spec.Dir, &w.d)
}

// WMState says which window manager the desktop has and whether it runs:
// "none"; "openbox" while it runs; "openbox (starts with the first
// window)" before a window was shown; "openbox (not running)" once it
// exited for good (Reason says why).
func (d *Desktop) WMState() string {
	switch {
	case d.WM == WMNone || d.WM == "":
		return WMNone
	case d.WMPending:
		return d.WM + " (starts with the first window)"
	case d.WindowManager.PID == 0:
		return d.WM + " (not running)"
	}
	return d.WM
}
