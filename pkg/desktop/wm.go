package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

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
// While openbox starts, the windows already shown are adopted: each is
// reparented into a frame, which takes the keyboard focus from it until
// openbox gives it back. Keys an agent types then go nowhere. openbox
// runs its --startup command once it has adopted them and focused the
// active one, just before its event loop, so that command tells the
// worker (the worker's own binary, `agentd desktop-worker wm-running`,
// over the control socket). Until then the manifest says WMStarting, and
// an input batch on the desktop waits for it (AwaitWindowManager asks the
// worker, "await_wm") at most wmStartWait. A batch can also come
// before the worker has heard of the first window (the agent saw it in a
// screenshot at once): the worker looks for a shown window on its
// watching connection, and when there is one, the batch waits for the
// manager that window starts.
//
// Once started the window manager stays. One that exits is started
// again, at most wmRestarts times in the desktop's life, so a manager that
// cannot run (another one holds the screen) cannot loop; after that the
// desktop goes on without one and its Reason says why.

// wmRestarts is how many times a window manager that exited is started
// again.
const wmRestarts = 3

// wmRunningArg makes `agentd desktop-worker` the window manager's
// --startup command: `agentd desktop-worker wm-running CONTROL` tells the
// worker on the control socket CONTROL that the manager runs.
const wmRunningArg = "wm-running"

// wmStartWait bounds how long an input batch waits for a starting window
// manager. openbox says it runs 35-80 ms after its first window shows
// here; a manager that never says so (one without --startup) costs one
// batch this wait, then no more (awaitWM).
const wmStartWait = 5 * time.Second

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
	args := []string{"--sm-disable"}
	if w.spec.ControlPath != "" {
		// /proc/PID/exe is the worker's own binary even when agentd was
		// upgraded or removed since. openbox splits the command as a shell
		// would (g_shell_parse_argv) and runs it without one.
		args = append(args, "--startup", shellQuote(fmt.Sprintf("/proc/%d/exe", os.Getpid()))+
			" "+WorkerArg+" "+wmRunningArg+" "+shellQuote(w.spec.ControlPath))
	}
	cmd := exec.Command(w.spec.WMPath, args...)
	cmd.Env = w.programEnv()
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the window manager %s: %v", w.spec.WMPath, err)
	}
	w.wm, w.wmDone = cmd, waitFor(cmd)
	w.wmStarts++
	w.d.WMPending = false
	w.d.WMStarting = w.spec.ControlPath != ""
	if w.d.WMStarting {
		w.unsettleWM()
	}
	w.d.WindowManager = memberOf(cmd.Process.Pid)
	return writeManifest(w.spec.Dir, &w.d)
}

// wmExited handles the window manager's exit: it is started again unless
// it was already restarted wmRestarts times.
func (w *worker) wmExited(err error) {
	w.wm, w.wmDone = nil, nil
	w.d.WindowManager = member{}
	w.d.WMStarting = false
	if restarts := w.wmStarts - 1; restarts < wmRestarts {
		fmt.Fprintf(w.log, "the window manager exited (%v); starting it again (%d of %d)\n", exitText(err), restarts+1, wmRestarts)
		serr := w.startWM()
		if serr == nil {
			return
		}
		err = serr
	}
	w.settleWM()
	fmt.Fprintf(w.log, "the window manager exited (%v) and was restarted %d times; the desktop goes on without one\n", exitText(err), wmRestarts)
	w.d.Reason = fmt.Sprintf("the window manager exited (%s) after %d restarts; the desktop goes on without one", exitText(err), wmRestarts)
	writeManifest(w.spec.Dir, &w.d)
}

// markWMRunning records that the window manager said it runs.
func (w *worker) markWMRunning() {
	if w.d.WMStarting {
		w.d.WMStarting = false
		fmt.Fprintf(w.log, "the window manager runs\n")
		writeManifest(w.spec.Dir, &w.d)
		go w.nudgeWM()
	}
	// After the manifest: a batch woken reads the state it waited for.
	w.settleWM()
}

// wmNudgeProperty is the root window property the worker sets once the
// window manager says it runs (nudgeWM).
const wmNudgeProperty = "_AGENTD_WM_RUNNING"

// nudgeWM sends the window manager one event once it runs. openbox 3.6
// can stall at its start: a window's MapRequest read while it adopts the
// windows already shown waits in its own queue, and its loop polls only
// the X socket, so it sleeps until the next X event; the window is never
// shown (10 starts in 73 with three xterms mapped beside it, on a quiet
// machine). The focus it gives the first window is usually that event;
// this makes it one whatever openbox focuses: a property set on the root,
// which openbox watches.
func (w *worker) nudgeWM() {
	c, err := xgb.NewConnDisplay(w.d.Display)
	if err != nil {
		fmt.Fprintf(w.log, "nudging the window manager: %v\n", err)
		return
	}
	defer c.Close()
	root := xproto.Setup(c).DefaultScreen(c).Root
	atom, err := xproto.InternAtom(c, false, uint16(len(wmNudgeProperty)), wmNudgeProperty).Reply()
	if err == nil {
		pid := uint32(os.Getpid())
		b := []byte{byte(pid), byte(pid >> 8), byte(pid >> 16), byte(pid >> 24)}
		err = xproto.ChangePropertyChecked(c, xproto.PropModeReplace, root, atom.Atom, xproto.AtomCardinal, 32, 1, b).Check()
	}
	if err != nil {
		fmt.Fprintf(w.log, "nudging the window manager: %v\n", err)
	}
}

// settleWM wakes the batches waiting for the window manager (awaitWM).
func (w *worker) settleWM() {
	w.wmMu.Lock()
	defer w.wmMu.Unlock()
	if w.wmSettled == nil {
		return // a worker made by a test
	}
	select {
	case <-w.wmSettled:
	default:
		close(w.wmSettled)
	}
}

// unsettleWM makes later batches wait again: a window manager starts
// (again) and will adopt the windows shown.
func (w *worker) unsettleWM() {
	w.wmMu.Lock()
	defer w.wmMu.Unlock()
	select {
	case <-w.wmSettled:
		w.wmSettled = make(chan struct{})
	default:
	}
}

// awaitWM is the control socket's "await_wm": it returns once no window
// manager is adopting windows, or after wmStartWait.
func (w *worker) awaitWM() error {
	if w.d.WM != WMOpenbox || w.spec.ControlPath == "" {
		return nil
	}
	w.watchMu.Lock()
	if c := w.wmWatch; c != nil {
		// No manager yet. A window shown starts one, maybe not heard of
		// yet: then wait for it; else nothing will adopt anything.
		win, err := topLevelShown(c, xproto.Setup(c).DefaultScreen(c).Root)
		if err != nil || win == 0 {
			w.watchMu.Unlock()
			return nil
		}
	}
	w.watchMu.Unlock()
	w.wmMu.Lock()
	settled := w.wmSettled
	w.wmMu.Unlock()
	select {
	case <-settled:
		return nil
	case <-time.After(wmStartWait):
		// A manager that never says so (one without --startup) must not
		// hold every batch: take it as running from now on.
		fmt.Fprintf(w.log, "the window manager did not say it runs within %s; batches no longer wait for it\n", wmStartWait)
		select {
		case w.wmRunning <- struct{}{}:
		default:
		}
		return fmt.Errorf("the window manager did not say it runs within %s", wmStartWait)
	}
}

// reportWMRunning is `agentd desktop-worker wm-running CONTROL`, the
// window manager's --startup command.
func reportWMRunning(control string, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	r, err := askWorker(ctx, control, ctlRequest{Op: "wm_running"})
	if err == nil && !r.OK {
		err = errors.New(r.Error)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentd desktop-worker wm-running: the desktop's worker: %v\n", err)
		return 1
	}
	return 0
}

// shellQuote quotes s for a command line split as a POSIX shell would.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WMState says which window manager the desktop has and whether it runs:
// "none"; "openbox" while it runs; "openbox (starts with the first
// window)" before a window was shown; "openbox (starting)" until it has
// adopted the windows shown; "openbox (not running)" once it exited for
// good (Reason says why).
func (d *Desktop) WMState() string {
	switch {
	case d.WM == WMNone || d.WM == "":
		return WMNone
	case d.WMPending:
		return d.WM + " (starts with the first window)"
	case d.WindowManager.PID == 0:
		return d.WM + " (not running)"
	case d.WMStarting:
		return d.WM + " (starting)"
	}
	return d.WM
}

// AwaitWindowManager returns once desktop d's window manager has adopted
// the windows shown (at once when none is starting and no window is
// waiting for one), or after wmStartWait, or when ctx ends. d is the
// desktop's record as the caller just read it (Manager.Get): a manager
// that runs says so there, and nothing more is asked. Input batches call
// it: keys typed while openbox reparents a window go nowhere. waited says
// how long it took.
func AwaitWindowManager(ctx context.Context, d *Desktop) (waited time.Duration, err error) {
	if d.Status != StatusRunning || d.WM != WMOpenbox || d.Control == "" || !(d.WMPending || d.WMStarting) {
		// Ended (the batch finds out and says so), or nothing to wait
		// for: no manager, or one that runs (the worker writes
		// WMStarting before it starts one again).
		return 0, nil
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(ctx, wmStartWait+time.Second)
	defer cancel()
	r, err := askWorker(ctx, d.Control, ctlRequest{Op: "await_wm"})
	if err == nil && !r.OK {
		if strings.HasPrefix(r.Error, "unknown op") {
			return 0, nil // a worker of an older agentd: it cannot say
		}
		err = errors.New(r.Error)
	}
	if err != nil {
		return time.Since(t0), fmt.Errorf("desktop %q: %v", d.Name, err)
	}
	return time.Since(t0), nil
}
