package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/limits"
	"github.com/agentd/agentd/pkg/desktop"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/view"
	"github.com/agentd/agentd/pkg/wire"
)

// viewHub owns the view server (pkg/view): none until the config's view
// or the first agent.view starts one, none again once it stops after its
// idle time, and the next agent.view starts another (on a new port, with
// new tokens and cookies).
type viewHub struct {
	mu     sync.Mutex
	srv    *view.Server
	closed bool // the daemon is stopping: no server starts again
}

// viewRoutes are agent.view.
func (d *Daemon) viewRoutes() []Route {
	return []Route{{Method: wire.MethodView, Mutates: true, Handle: d.viewURL}}
}

// startView starts the view server at start-up when the config asks for
// it, and returns what stops it at the end (assemble's undo stack).
func (d *Daemon) startView() func() {
	// A view that ran when agentd last stopped starts again, so that the
	// pages left open reconnect (pkg/view resumes from its state file and
	// stops again after its idle time if none does).
	_, err := os.Stat(d.viewStateFile())
	if d.cfg.View || err == nil {
		if _, err := d.viewServer(); err != nil {
			// The view is for people; the daemon serves without it.
			d.log.Error().Err(err).Msg("view not started")
		}
	}
	return func() {
		d.view.mu.Lock()
		d.view.closed = true
		srv := d.view.srv
		d.view.srv = nil
		d.view.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
	}
}

// viewServer returns the running view server, starting one if none runs.
func (d *Daemon) viewServer() (*view.Server, error) {
	d.view.mu.Lock()
	defer d.view.mu.Unlock()
	if d.view.closed {
		return nil, errShuttingDown
	}
	if srv := d.view.srv; srv != nil {
		select {
		case <-srv.Done():
		default:
			return srv, nil
		}
	}
	srv, err := view.Start(d.stopCtx, view.Options{
		Sessions:     viewSessions{d},
		Idle:         d.viewIdle(),
		WriteTimeout: d.live.Load().WriteTimeout,
		Logger:       d.cfg.Logger,
		Desktops:     viewDesktops{d},
		StateFile:    d.viewStateFile(),
	})
	if err != nil {
		return nil, err
	}
	d.view.srv = srv
	return srv, nil
}

// viewStateFile is where the view keeps what open pages need to
// reconnect after a restart of agentd.
func (d *Daemon) viewStateFile() string { return filepath.Join(d.cfg.StateDir, "view.json") }

// viewIdle is view_idle, or the view's default.
func (d *Daemon) viewIdle() time.Duration {
	if d.cfg.ViewIdle > 0 {
		return d.cfg.ViewIdle
	}
	return view.DefaultIdle
}

// viewURL answers agent.view: a URL that opens the page once.
func (d *Daemon) viewURL(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ViewParams](call)
	if err != nil {
		return nil, err
	}
	if p.Desktop != "" {
		if p.Name != "" {
			return nil, wire.Errorf(wire.CodeInvalidParams, "name a session or a desktop, not both")
		}
		if err := desktop.ValidateName(p.Desktop); err != nil {
			return nil, err
		}
	}
	if p.Name != "" {
		if !limits.ValidName(p.Name) {
			return nil, wire.Errorf(wire.CodeInvalidParams, "%q is not a session name: names are letters, digits, '.', '_' and '-', starting with a letter or digit", p.Name)
		}
	}
	// A server stopping for idleness between the look and the URL
	// answers ErrClosed; the next look starts another.
	for {
		srv, err := d.viewServer()
		if err != nil {
			return nil, err
		}
		u, err := srv.URL(p.Name)
		if p.Desktop != "" {
			u, err = srv.DesktopURL(p.Desktop)
		}
		if errors.Is(err, view.ErrClosed) {
			<-srv.Done()
			continue
		}
		if err != nil {
			return nil, err
		}
		return &wire.ViewResult{URL: u, Port: srv.Port(), IdleMS: d.viewIdle().Milliseconds()}, nil
	}
}

// viewSessions is what the page shows, from the daemon's sessions.
type viewSessions struct{ d *Daemon }

func (v viewSessions) List(ctx context.Context) ([]wire.SessionRow, error) {
	entries, err := v.d.sessions.List(ctx, session.ListRequest{})
	if err != nil {
		return nil, err
	}
	rows := make([]wire.SessionRow, len(entries))
	for i := range entries {
		rows[i] = sessionRow(&entries[i])
	}
	return rows, nil
}

func (v viewSessions) Size(ctx context.Context, name string) (int, int, error) {
	info, err := v.d.sessions.Status(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	if !info.Allows.Attach {
		return 0, 0, fmt.Errorf("session %q is %s: only a running session's terminal can be watched", name, info.Status)
	}
	return info.Cols, info.Rows, nil
}

// Detail is what a session that needs a person asks, from its status.
func (v viewSessions) Detail(ctx context.Context, name string) (*wire.StateDetail, error) {
	info, err := v.d.sessions.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	return stateDetail(info.Detail), nil
}

// Watch is an attach, as agentctl watch makes over the socket, whose
// input is the keys the view passes on: those of the page that holds the
// session's lease.
func (v viewSessions) Watch(ctx context.Context, name string, w io.Writer, keys <-chan []byte) error {
	return v.d.sessions.Attach(ctx, name, &viewStream{ctx: ctx, w: w, keys: keys})
}

// leaseSessions is the session manager's keyboard leases (take over);
// see session.Manager.TakeOver.
type leaseSessions interface {
	TakeOver(ctx context.Context, name, holder string) (*session.Lease, error)
	HandBack(name, id, why string) bool
	LeaseOf(name string) *session.Lease
}

func (v viewSessions) TakeOver(ctx context.Context, name, holder string) (string, error) {
	ls, ok := v.d.sessions.(leaseSessions)
	if !ok {
		return "", wire.Errorf(wire.CodeInternal, "this agentd's sessions cannot be taken over")
	}
	l, err := ls.TakeOver(ctx, name, holder)
	if err != nil {
		return "", toWireError(err)
	}
	return l.ID, nil
}

func (v viewSessions) HandBack(name, id, why string) {
	if ls, ok := v.d.sessions.(leaseSessions); ok {
		ls.HandBack(name, id, why)
	}
}

// Approve is agent.approve from the page, as the lease's holder when the
// page holds it.
func (v viewSessions) Approve(ctx context.Context, name string, deny bool, promptID, lease string) (*wire.ApproveResult, error) {
	if lease != "" {
		ctx = session.WithLease(ctx, lease)
	}
	r, err := v.d.sessions.Approve(ctx, name, deny, promptID)
	if err != nil {
		return nil, toWireError(err)
	}
	return &wire.ApproveResult{Name: r.Name, PromptID: r.PromptID, Choice: r.Choice, Kind: r.Kind, Tool: r.Tool, Subject: r.Subject}, nil
}

// viewStream is a page's side of an attach: output goes to the page, and
// reading returns the keys the view passes on, until the page goes.
type viewStream struct {
	ctx     context.Context
	w       io.Writer
	keys    <-chan []byte
	pending []byte // the rest of keys longer than a read
}

func (s *viewStream) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s *viewStream) Read(p []byte) (int, error) {
	if len(s.pending) == 0 {
		select {
		case k := <-s.keys:
			s.pending = k
		case <-s.ctx.Done():
			return 0, io.EOF
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}
