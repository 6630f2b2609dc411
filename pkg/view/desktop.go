package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/rfbproxy"
)

// The desktop page shows one of the agents' desktops, live, with noVNC
// (static/novnc, copied by go generate from the release pinned in
// assets/novnc.sh; loaded as ES modules from this server, so the policy
// stays 'self'), and lets the person take its input over.
//
// A page opens two WebSockets. /ws/desktop is the viewer: it counts
// towards the desktop's MaxViewers (the ninth page is told busy), says
// where the desktop is and why it ended, and carries Take over and Hand
// back. /ws/rfb carries RFB for that viewer, relayed to the desktop's own
// RFB server (Xvnc's 0600 Unix socket) by internal/rfbproxy, which frames
// every message the page sends and drops key, pointer, clipboard and
// resize messages unless this viewer holds the desktop's lease: view-only
// is the server's rule, not the page's. The lease is the daemon's
// (Desktops.TakeOver): while a page holds it agents' batches on the
// desktop get busy naming it; Hand back, the viewer's WebSocket closing
// or the server stopping ends it.
//
//go:generate sh assets/novnc.sh

// Desktops is what the desktop page needs from the daemon.
type Desktops interface {
	// RFB returns the path of the desktop's RFB socket; an error names why
	// the desktop cannot be watched (none of that name, not running, an
	// Xvfb desktop, which serves no RFB).
	RFB(ctx context.Context, name string) (string, error)
	// TakeOver gives the desktop's input to holder: agents' batches on it
	// get busy naming holder until release is called (more than once is
	// fine). An error when another holds it.
	TakeOver(ctx context.Context, name, holder string) (release func(), err error)
	// Watch says a page watches the desktop until release is called:
	// a desktop watched is in use, not idle.
	Watch(name string) (release func())
	// List returns every desktop, for the list page.
	List(ctx context.Context) ([]DeskRow, error)
}

// DeskRow is one desktop as the list page shows it: what a person needs
// to pick one to watch, and no paths (the RFB socket and the cookie file
// stay in the daemon).
type DeskRow struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Server is xvnc or xvfb; only an Xvnc desktop can be watched
	// (Watchable), and Why says why not otherwise.
	Server    string    `json:"server"`
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	Session   string    `json:"session,omitempty"`
	Watchable bool      `json:"watchable"`
	Why       string    `json:"why,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// DeskMessage is one JSON text message between the desktop page and the
// server on /ws/desktop.
type DeskMessage struct {
	// Type, from the server: "start" (Name, Viewer: the id /ws/rfb takes),
	// "lease" (Held: whether this page holds the input now), "end" (the
	// desktop's stream ended: Message) or "error" (Code, Message). From
	// the page: "take" or "hand_back".
	Type   string `json:"type"`
	Name   string `json:"name,omitempty"`
	Viewer string `json:"viewer,omitempty"`
	Held   bool   `json:"held,omitempty"`
	// Code is "not_found" (no such desktop, not running, no RFB), "busy"
	// (too many viewers, or another holds the lease), "protocol" (the
	// page sent RFB the proxy would not pass) or "failed".
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// DesktopURL returns a URL that opens the desktop page on name once, as
// URL does for the list. ErrClosed when the server stopped.
func (s *Server) DesktopURL(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	q := url.Values{"t": {s.guard.newToken()}, "d": {name}}
	if s.pages == 0 {
		s.idle.Reset(s.opts.Idle)
	}
	return "http://127.0.0.1:" + strconv.Itoa(s.port) + "/desktop?" + q.Encode(), nil
}

// deskViewers are the pages watching each desktop.
type deskViewers struct {
	mu sync.Mutex
	by map[string]map[string]*deskViewer // desktop → viewer id → viewer
	n  int                               // viewers ever, for their names
}

// deskViewer is one page's viewer of one desktop.
type deskViewer struct {
	id, name string
	who      string // the lease holder's name in messages and logs
	path     string // the RFB socket
	ctx      context.Context
	send     func(DeskMessage) error

	leased atomic.Bool

	mu      sync.Mutex
	release func()             // the lease's, nil when not held
	stopRFB context.CancelFunc // the relay running for it, nil when none
	rfbDone chan struct{}
}

// desktopRoutes adds the desktop page and its WebSockets to mux.
func (s *Server) desktopRoutes(mux *http.ServeMux) {
	v := &deskViewers{by: map[string]map[string]*deskViewer{}}
	mux.HandleFunc("GET /desktop", s.desktopPage)
	mux.Handle("GET /ws/desktop", s.authed(s.deskSocket(v.serveViewer)))
	mux.Handle("GET /ws/rfb", s.authed(s.deskSocket(v.serveRFB)))
}

// desktopPage trades a one-time token for a cookie, or serves the page.
func (s *Server) desktopPage(w http.ResponseWriter, r *http.Request) {
	if t := r.URL.Query().Get("t"); t != "" {
		s.tradeToken(w, r, t, "/desktop#"+url.PathEscape(r.URL.Query().Get("d")), "open the desktop", "agentctl desktop view NAME")
		return
	}
	s.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := static.ReadFile("static/desktop.html")
		if err != nil {
			http.Error(w, "page missing from this build", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(b)
	})).ServeHTTP(w, r)
}

// deskSocket checks the Origin, upgrades and runs serve until it returns.
// Unlike the list's and the terminal's, these sockets are read: the
// viewer's carries the page's requests, the RFB one the page's RFB.
func (s *Server) deskSocket(serve func(s *Server, conn *websocket.Conn, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); !originAllowed(origin, r.Host) {
			s.log.Warn().Str("origin", origin).Str("remote", r.RemoteAddr).Msg("view WebSocket refused: foreign Origin")
			http.Error(w, "WebSocket from another origin refused", http.StatusForbidden)
			return
		}
		s.handlers.Add(1)
		defer s.handlers.Done()
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{})
		if err != nil {
			return
		}
		s.pageOpened()
		defer s.pageClosed()
		serve(s, conn, r)
		conn.Close(websocket.StatusNormalClosure, "")
	})
}

// serveViewer is one page's viewer: it takes a place among the desktop's
// viewers, says where to find the RFB stream, and serves Take over and
// Hand back until the page goes.
func (v *deskViewers) serveViewer(s *Server, conn *websocket.Conn, r *http.Request) {
	conn.SetReadLimit(1 << 10)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	send := func(m DeskMessage) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		wctx, c := context.WithTimeout(ctx, s.opts.WriteTimeout)
		defer c()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		send(DeskMessage{Type: "error", Code: "not_found", Message: "no desktop named in the request"})
		return
	}
	if s.opts.Desktops == nil {
		send(DeskMessage{Type: "error", Code: "not_found", Name: name, Message: "this agentd shows no desktops"})
		return
	}
	path, err := s.opts.Desktops.RFB(ctx, name)
	if err != nil {
		send(DeskMessage{Type: "error", Code: "not_found", Name: name, Message: err.Error()})
		return
	}
	dv := &deskViewer{id: secret(), name: name, path: path, ctx: ctx, send: send}
	v.mu.Lock()
	viewers := v.by[name]
	if len(viewers) >= MaxViewers {
		v.mu.Unlock()
		send(DeskMessage{Type: "error", Code: "busy", Name: name,
			Message: fmt.Sprintf("desktop %q already has %d viewers, the most it may have: close another page watching it", name, MaxViewers)})
		return
	}
	if viewers == nil {
		viewers = map[string]*deskViewer{}
		v.by[name] = viewers
	}
	viewers[dv.id] = dv
	v.n++
	dv.who = fmt.Sprintf("a person in agentd's view page (viewer %d, from %s)", v.n, clientOf(r))
	v.mu.Unlock()
	unwatch := s.opts.Desktops.Watch(name)
	defer unwatch()
	log := s.log.With().Str("desktop", name).Str("viewer", dv.who).Logger()
	defer func() {
		v.mu.Lock()
		delete(viewers, dv.id)
		if len(viewers) == 0 {
			delete(v.by, name)
		}
		v.mu.Unlock()
		cancel()
		dv.stopRelay()
		if dv.handBack() {
			log.Info().Msg("desktop handed back: the page went away")
		}
	}()
	if send(DeskMessage{Type: "start", Name: name, Viewer: dv.id}) != nil {
		return
	}
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m DeskMessage
		if typ != websocket.MessageText || json.Unmarshal(b, &m) != nil {
			send(DeskMessage{Type: "error", Code: "failed", Message: "the page sent a message the server does not read"})
			return
		}
		switch m.Type {
		case "take":
			if err := dv.take(s); err != nil {
				log.Info().Err(err).Msg("take-over refused")
				send(DeskMessage{Type: "error", Code: "busy", Name: name, Message: err.Error()})
				continue
			}
			log.Info().Msg("desktop taken over: agents' batches on it get busy until hand back")
			send(DeskMessage{Type: "lease", Name: name, Held: true})
		case "hand_back":
			if dv.handBack() {
				log.Info().Msg("desktop handed back")
			}
			send(DeskMessage{Type: "lease", Name: name, Held: false})
		default:
			send(DeskMessage{Type: "error", Code: "failed", Message: fmt.Sprintf("unknown request %q: the page asks take or hand_back", m.Type)})
			return
		}
	}
}

// take asks the daemon for the desktop's lease.
func (dv *deskViewer) take(s *Server) error {
	dv.mu.Lock()
	defer dv.mu.Unlock()
	if dv.release != nil {
		return nil
	}
	release, err := s.opts.Desktops.TakeOver(dv.ctx, dv.name, dv.who)
	if err != nil {
		return err
	}
	dv.release = release
	dv.leased.Store(true)
	return nil
}

// handBack ends the lease; whether one was held.
func (dv *deskViewer) handBack() bool {
	dv.mu.Lock()
	defer dv.mu.Unlock()
	dv.leased.Store(false)
	if dv.release == nil {
		return false
	}
	dv.release()
	dv.release = nil
	return true
}

// stopRelay ends the RFB relay running for the viewer, if any, and waits
// for it.
func (dv *deskViewer) stopRelay() {
	dv.mu.Lock()
	stop, done := dv.stopRFB, dv.rfbDone
	dv.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// serveRFB relays a viewer's RFB stream to its desktop's server. A new
// stream for the same viewer (the page reconnecting) ends the old one.
func (v *deskViewers) serveRFB(s *Server, conn *websocket.Conn, r *http.Request) {
	name, id := r.URL.Query().Get("name"), r.URL.Query().Get("viewer")
	v.mu.Lock()
	dv := v.by[name][id]
	v.mu.Unlock()
	if dv == nil {
		conn.Close(websocket.StatusPolicyViolation, "no viewer of that desktop: open /ws/desktop first")
		return
	}
	dv.stopRelay()
	ctx, cancel := context.WithCancel(dv.ctx)
	done := make(chan struct{})
	defer close(done)
	defer cancel()
	dv.mu.Lock()
	dv.stopRFB, dv.rfbDone = cancel, done
	dv.mu.Unlock()
	// The page's own RFB messages are small; a clipboard's is the
	// largest, bounded by the proxy.
	conn.SetReadLimit(rfbproxy.MaxCutText + 64)
	var d net.Dialer
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	server, err := d.DialContext(dctx, "unix", dv.path)
	dcancel()
	if err != nil {
		msg := fmt.Sprintf("desktop %q serves no RFB now (%v): it was removed or its X server exited", name, err)
		dv.send(DeskMessage{Type: "end", Name: name, Message: msg})
		conn.Close(websocket.StatusGoingAway, "desktop gone")
		return
	}
	defer server.Close()
	nc := websocket.NetConn(ctx, conn, websocket.MessageBinary)
	var stats rfbproxy.Stats
	err = rfbproxy.Relay(ctx, nc, server, rfbproxy.Options{Input: dv.leased.Load, WriteTimeout: s.opts.WriteTimeout}, &stats)
	log := s.log.With().Str("desktop", name).Str("viewer", dv.who).Int64("passed", stats.Passed).Int64("dropped", stats.Dropped).Logger()
	var pe *rfbproxy.ProtocolError
	switch {
	case errors.Is(err, rfbproxy.ErrServerGone):
		msg := fmt.Sprintf("desktop %q is gone: it was removed or its X server exited", name)
		if _, rerr := s.opts.Desktops.RFB(dv.ctx, name); rerr != nil {
			msg = rerr.Error()
		}
		log.Info().Msg("desktop stream ended: the desktop's RFB server closed")
		dv.send(DeskMessage{Type: "end", Name: name, Message: msg})
		conn.Close(websocket.StatusGoingAway, "desktop gone")
	case errors.As(err, &pe):
		log.Warn().Err(err).Msg("desktop stream ended: the page sent RFB the proxy does not pass")
		dv.send(DeskMessage{Type: "error", Code: "protocol", Name: name, Message: pe.Error()})
		conn.Close(websocket.StatusPolicyViolation, shortReason(pe.Reason))
	case errors.Is(err, rfbproxy.ErrSlowViewer):
		log.Warn().Dur("write_timeout", s.opts.WriteTimeout).Msg("desktop viewer dropped: it did not read")
		conn.CloseNow()
	default:
		log.Debug().Err(err).Msg("desktop stream ended")
	}
}

// shortReason fits a close frame's reason (at most 123 bytes).
func shortReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
