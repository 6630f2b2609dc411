package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/desktop"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// desktopSweep is how often the daemon judges its desktops without being
// asked: a dead server is noticed (its worker usually marks it at once;
// this catches a whole group killed), a desktop made for a session goes
// with it, and idle desktops are removed.
const desktopSweep = 2 * time.Second

// desktopHub is the daemon's side of the agents' desktops: the Manager that
// owns their processes and one capture.Screen per running desktop (made on
// first use). Lock order: mu alone; no I/O under it.
type desktopHub struct {
	mgr *desktop.Manager
	// life ends when the daemon stops serving desktops: the root of the
	// desktops' Screens' Run, which no request owns (as session.Manager's
	// life is for its heartbeats).
	life context.Context

	mu      sync.Mutex
	screens map[string]*deskScreen
	// watched counts the view's pages watching each desktop (an idle
	// sweep spares a desktop a person watches), and unwatched is when the
	// last page of one went away: its idle time counts from then.
	watched   map[string]int
	unwatched map[string]time.Time
}

// deskScreen is a desktop's Screen, the end of its Run and its last use.
type deskScreen struct {
	scr     *capture.Screen
	stop    func()
	lastUse time.Time
}

// errDesktopsOff refuses desktop work while desktops are disabled.
var errDesktopsOff = wire.Errorf(wire.CodeRefused, "desktops are disabled; set desktops = true in config.toml (or start agentd with --desktops) to let agents have desktops of their own")

func (d *Daemon) desktopRoutes() []Route {
	return []Route{
		{Method: wire.MethodDesktopNew, Mutates: true, Handle: d.desktopNew},
		{Method: wire.MethodDesktopList, Handle: d.desktopList},
		{Method: wire.MethodDesktopRm, Mutates: true, Handle: d.desktopRm},
		{Method: wire.MethodDesktopClip, Mutates: true, Handle: d.desktopClip},
		{Method: wire.MethodDesktopResize, Mutates: true, Handle: d.desktopResize},
	}
}

// startDesktops builds the hub; the sweep runs until ctx ends. It returns
// a function that waits for the sweep and closes the desktops' Screens
// (the desktops keep running: their workers own them).
func (d *Daemon) startDesktops(ctx context.Context) (func(), error) {
	c := d.live.Load()
	mgr, err := desktop.NewManager(desktop.Options{
		StateDir:      d.cfg.StateDir,
		RuntimeDir:    filepath.Join(filepath.Dir(d.cfg.SocketPath), "desktops"),
		WorkerCommand: d.cfg.DesktopWorkerCommand,
		MaxDesktops:   c.MaxDesktops,
		Logger:        d.cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	d.desktops = &desktopHub{mgr: mgr, life: ctx, screens: map[string]*deskScreen{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(desktopSweep)
		defer t.Stop()
		for {
			d.sweepDesktops(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		<-done
		h := d.desktops
		h.mu.Lock()
		screens := h.screens
		h.screens = map[string]*deskScreen{}
		h.mu.Unlock()
		for _, s := range screens {
			s.stop()
		}
	}, nil
}

// sweepDesktops judges every desktop and acts on what it finds.
func (d *Daemon) sweepDesktops(ctx context.Context) {
	h := d.desktops
	c := d.live.Load()
	h.mgr.SetMax(c.MaxDesktops)
	for _, dk := range h.mgr.List() {
		switch {
		case dk.Session != "" && !dk.Keep && d.sessionEnded(ctx, dk.Session):
			if err := d.removeDesktop(ctx, dk.Name, true); err != nil {
				d.log.Warn().Err(err).Str("desktop", dk.Name).Str("session", dk.Session).Msg("removing the desktop of an ended session")
			} else {
				d.log.Info().Str("desktop", dk.Name).Str("session", dk.Session).Msg("desktop removed with its session")
			}
		case dk.Status == desktop.StatusDead:
			h.drop(dk.Name)
		case c.DesktopIdleTimeout > 0 && h.idleFor(dk.Name, dk.CreatedAt) > c.DesktopIdleTimeout && !h.leased(dk.Name) && !h.isWatched(dk.Name) && !d.desktopInUse(ctx, dk.Name):
			if err := d.removeDesktop(ctx, dk.Name, false); err == nil {
				d.log.Info().Str("desktop", dk.Name).Dur("idle_timeout", c.DesktopIdleTimeout).Msg("idle desktop removed")
			}
		}
	}
}

// sessionEnded reports whether a session is gone or has ended.
func (d *Daemon) sessionEnded(ctx context.Context, name string) bool {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := d.sessions.Status(cctx, name)
	if errors.Is(err, session.ErrNotFound) {
		return true
	}
	return err == nil && info.Status.Terminal()
}

// desktopInUse reports whether a live session was started on the desktop.
func (d *Daemon) desktopInUse(ctx context.Context, name string) bool {
	for _, s := range d.desktops.mgr.Users(name) {
		if !d.sessionEnded(ctx, s) {
			return true
		}
	}
	return false
}

// idleFor is how long since the desktop was last used through the daemon
// (a screen call or a spawn on it) or watched in the view; a desktop this
// daemon has not used counts from its creation or this daemon's start,
// whichever is later.
func (h *desktopHub) idleFor(name string, created time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	last := created
	if s := h.screens[name]; s != nil {
		last = s.lastUse
	}
	if w := h.unwatched[name]; w.After(last) {
		last = w
	}
	return time.Since(last)
}

// watch counts a page watching the desktop until the release it returns.
func (h *desktopHub) watch(name string) func() {
	h.mu.Lock()
	if h.watched == nil {
		h.watched, h.unwatched = map[string]int{}, map[string]time.Time{}
	}
	h.watched[name]++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.watched[name]--; h.watched[name] <= 0 {
				delete(h.watched, name)
				h.unwatched[name] = time.Now()
			}
		})
	}
}

// isWatched reports whether a page watches the desktop now.
func (h *desktopHub) isWatched(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watched[name] > 0
}

// drop closes a desktop's Screen, if it has one.
func (h *desktopHub) drop(name string) {
	h.mu.Lock()
	s := h.screens[name]
	delete(h.screens, name)
	delete(h.unwatched, name)
	h.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// personScreen is what the person's Screen offers to make desktops'
// Screens that share its audit log and kill switch.
type personScreen interface {
	Desktop(o capture.DesktopOptions) *capture.Screen
}

// screenOf resolves a screen method's target: the person's display for "",
// else a running desktop's Screen (made on first use).
func (d *Daemon) screenOf(target string) (Screen, error) {
	scr, _, err := d.desktopScreen(target)
	return scr, err
}

// desktopScreen is screenOf that also returns the desktop's record as it
// read it (nil for the person's display).
func (d *Daemon) desktopScreen(target string) (Screen, *desktop.Desktop, error) {
	if target == "" {
		return d.screen, nil, nil
	}
	if !d.live.Load().Desktops {
		return nil, nil, errDesktopsOff
	}
	h := d.desktops
	if h == nil {
		return nil, nil, wire.Errorf(wire.CodeScreenUnavailable, "desktops are not available in this agentd")
	}
	dk, err := h.mgr.Get(target)
	if err != nil {
		return nil, nil, err
	}
	if dk.Status != desktop.StatusRunning {
		h.drop(target)
		return nil, nil, wire.Errorf(wire.CodeScreenUnavailable, "desktop %q is %s (%s); remove it with agentctl desktop rm %s and make another", target, dk.Status, dk.Reason, target)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.screens[target]; s != nil && s.scr.DesktopName() == target {
		s.lastUse = time.Now()
		return s.scr, dk, nil
	}
	opts := capture.DesktopOptions{Name: target, Display: dk.Display, Authority: dk.Authority,
		RecordDir: filepath.Join(d.cfg.StateDir, "desktops", target, "screen"), AllowAct: true}
	if dk.Control != "" {
		// The worker owns the clipboard's text, so it survives agentd.
		mgr := h.mgr
		opts.ClipOwner = func(ctx context.Context, text string) error { return mgr.ClipSet(ctx, target, text) }
	}
	var scr *capture.Screen
	if p, ok := d.screen.(personScreen); ok {
		scr = p.Desktop(opts)
	} else {
		// A daemon given a fake person's screen (tests): a desktop's
		// Screen of its own, without audit.
		if scr, err = capture.New(capture.Options{Display: dk.Display, Authority: dk.Authority, AllowAct: true, Logger: d.cfg.Logger}); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithCancel(h.life)
	done := make(chan struct{})
	go func() { defer close(done); scr.Run(ctx) }()
	h.screens[target] = &deskScreen{scr: scr, lastUse: time.Now(), stop: func() { cancel(); <-done; scr.Close() }}
	return scr, dk, nil
}

// leased reports whether a person holds the desktop's input (the view
// page's Take over): such a desktop is in use, however long agents leave
// it alone.
func (h *desktopHub) leased(name string) bool {
	h.mu.Lock()
	s := h.screens[name]
	h.mu.Unlock()
	return s != nil && s.scr.LeaseHolder() != ""
}

// acting reports whether a batch runs on the desktop.
func (h *desktopHub) acting(name string) bool {
	h.mu.Lock()
	s := h.screens[name]
	h.mu.Unlock()
	return s != nil && s.scr.Busy()
}

func desktopRow(h *desktopHub, dk *desktop.Desktop) wire.DesktopRow {
	return wire.DesktopRow{Name: dk.Name, Status: wire.DesktopStatus(dk.Status), Reason: dk.Reason, Display: dk.Display,
		Width: dk.Width, Height: dk.Height, WM: dk.WM, WMState: dk.WMState(), Layout: dk.Layout, Server: dk.Kind(), RFB: dk.RFB, Authority: dk.Authority, CreatedAt: dk.CreatedAt,
		Session: dk.Session, Keep: dk.Keep, WorkerPID: dk.Worker.PID, ServerPID: dk.Server.PID, Acting: h.acting(dk.Name)}
}

func (d *Daemon) desktopNew(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.DesktopNewParams](call)
	if err != nil {
		return nil, err
	}
	dk, err := d.newDesktop(ctx, p, "", false)
	if err != nil {
		return nil, err
	}
	return desktopRow(d.desktops, dk), nil
}

func (d *Daemon) newDesktop(ctx context.Context, p wire.DesktopNewParams, forSession string, keep bool) (*desktop.Desktop, error) {
	if !d.live.Load().Desktops {
		return nil, errDesktopsOff
	}
	d.desktops.mgr.SetMax(d.live.Load().MaxDesktops) // a reload since the last sweep
	spec := desktop.Spec{Name: p.Name, WM: p.WM, Layout: p.Layout, Server: p.Server, Session: forSession, Keep: keep}
	if c := d.live.Load(); spec.Server == "" && c.DesktopServer != "auto" {
		spec.Server = c.DesktopServer // desktop_server; "auto" leaves the choice to the Manager
	}
	if p.Size != "" {
		w, h, err := desktop.ParseSize(p.Size)
		if err != nil {
			return nil, err
		}
		spec.Width, spec.Height = w, h
	}
	return d.desktops.mgr.New(ctx, spec)
}

func (d *Daemon) desktopList(ctx context.Context, call *Call) (any, error) {
	if _, err := decodeParams[struct{}](call); err != nil {
		return nil, err
	}
	out := &wire.DesktopListResult{Desktops: []wire.DesktopRow{}}
	for _, dk := range d.desktops.mgr.List() {
		out.Desktops = append(out.Desktops, desktopRow(d.desktops, &dk))
	}
	return out, nil
}

func (d *Daemon) desktopResize(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.DesktopResizeParams](call)
	if err != nil {
		return nil, err
	}
	if !d.live.Load().Desktops {
		return nil, errDesktopsOff
	}
	if p.Name == "" || p.Size == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "name the desktop and the size, e.g. agentctl desktop resize d1 1920x1080")
	}
	w, h, err := desktop.ParseSize(p.Size)
	if err != nil {
		return nil, err
	}
	dk, err := d.desktops.mgr.Resize(ctx, p.Name, w, h)
	if err != nil {
		return nil, err
	}
	return desktopRow(d.desktops, dk), nil
}

func (d *Daemon) desktopRm(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.DesktopRmParams](call)
	if err != nil {
		return nil, err
	}
	return nil, d.removeDesktop(ctx, p.Name, p.Force)
}

// removeDesktop ends a desktop; while a batch runs on it only with force.
func (d *Daemon) removeDesktop(ctx context.Context, name string, force bool) error {
	if err := desktop.ValidateName(name); err != nil {
		return err
	}
	if !force && d.desktops.acting(name) {
		return wire.Errorf(wire.CodeBusy, "a batch is running on desktop %q; wait for it, or remove the desktop anyway with agentctl desktop rm --force %s", name, name)
	}
	d.desktops.drop(name)
	return d.desktops.mgr.Remove(ctx, name)
}

func (d *Daemon) desktopClip(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.DesktopClipParams](call)
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "name the desktop whose clipboard to use")
	}
	op := p.Op
	if op == "" {
		op = wire.ClipGet
	}
	switch {
	case op != wire.ClipGet && op != wire.ClipSet:
		return nil, wire.Errorf(wire.CodeInvalidParams, "clipboard op %q is not get or set", p.Op)
	case op == wire.ClipSet && p.Text == nil:
		return nil, wire.Errorf(wire.CodeInvalidParams, "clipboard set needs text")
	case op == wire.ClipGet && p.Text != nil:
		return nil, wire.Errorf(wire.CodeInvalidParams, "clipboard get takes no text; use op set to set it")
	case p.Text != nil && len(*p.Text) > wire.MaxClipBytes:
		return nil, wire.Errorf(wire.CodeInvalidParams, "clipboard text is %d bytes, over the %d (64 KiB) a desktop's clipboard holds", len(*p.Text), wire.MaxClipBytes)
	}
	scr, err := d.screenOf(p.Name)
	if err != nil {
		return nil, err
	}
	cs, ok := scr.(*capture.Screen)
	if !ok {
		return nil, wire.Errorf(wire.CodeScreenUnavailable, "desktop %q has no clipboard here", p.Name)
	}
	caller := capture.Caller{PID: call.Conn.Peer.PID, UID: call.Conn.Peer.UID, Executable: call.Conn.Peer.Exe,
		Session: sessionOfProcess(call.Conn.Peer.PID)}
	if op == wire.ClipSet {
		if err := cs.ClipSet(ctx, caller, *p.Text); err != nil {
			return nil, err
		}
		return &wire.DesktopClipResult{Bytes: len(*p.Text)}, nil
	}
	text, err := cs.ClipGet(ctx, caller, wire.MaxClipBytes)
	if err != nil {
		return nil, err
	}
	return &wire.DesktopClipResult{Text: text, Bytes: len(text)}, nil
}

// awaitWindowManager holds a batch on a desktop whose window manager is
// adopting the windows shown: keys typed while it reparents a window go
// nowhere (pkg/desktop/wm.go). It waits a few seconds at most, then the
// batch goes on.
func (d *Daemon) awaitWindowManager(ctx context.Context, dk *desktop.Desktop) {
	waited, err := desktop.AwaitWindowManager(ctx, dk)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Warn().Err(err).Str("desktop", dk.Name).Msg("the batch goes on without the window manager")
	case waited >= time.Millisecond:
		d.log.Debug().Str("desktop", dk.Name).Dur("waited", waited).Msg("the batch waited for the window manager to adopt the windows shown")
	}
}

// desktopForSpawn resolves spawn --desktop: a running desktop by name, or
// "new" for one made for the session. It returns the environment to set
// and unset, and undo, which removes a desktop made here when the spawn
// fails.
func (d *Daemon) desktopForSpawn(ctx context.Context, target, sessionName string, keep bool) (set, unset []string, undo func(), err error) {
	if keep && target != "new" {
		return nil, nil, nil, wire.Errorf(wire.CodeInvalidParams, "keep_desktop applies to desktop \"new\" only: a desktop named %q is kept anyway", target)
	}
	if !d.live.Load().Desktops {
		return nil, nil, nil, errDesktopsOff
	}
	var dk *desktop.Desktop
	undo = func() {}
	if target == "new" {
		dk, err = d.newDesktop(ctx, wire.DesktopNewParams{Name: sessionName}, sessionName, keep)
		if errors.Is(err, desktop.ErrExists) {
			dk, err = d.newDesktop(ctx, wire.DesktopNewParams{}, sessionName, keep)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		name := dk.Name
		undo = func() { d.removeDesktop(context.WithoutCancel(ctx), name, true) }
	} else {
		if dk, err = d.desktops.mgr.Get(target); err != nil {
			return nil, nil, nil, err
		}
		if dk.Status != desktop.StatusRunning {
			return nil, nil, nil, wire.Errorf(wire.CodeScreenUnavailable, "desktop %q is %s (%s); make another with agentctl desktop new, or spawn with --desktop new", target, dk.Status, dk.Reason)
		}
	}
	d.desktops.mgr.AddUser(dk.Name, sessionName)
	set, unset = dk.Env()
	return set, unset, undo, nil
}
