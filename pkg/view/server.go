// Package view is agentd's page for people: an HTTP server on 127.0.0.1
// that lists the sessions, live (those that need a person first, with
// Approve and Deny on a permission prompt), and shows a session's
// terminal, live, in xterm.js: read-only until the person takes the
// keyboard over, and read-only again once they hand it back.
//
// Any local user can reach 127.0.0.1, so the server trusts no request for
// where it comes from: a one-time token in the URL agentctl view opens is
// the gate. The page trades it once for an HttpOnly, SameSite=Strict cookie
// and is redirected to a URL without it. Every request's Host must be
// 127.0.0.1:PORT or localhost:PORT (a page of another site that rebinds its
// name to 127.0.0.1 sends its own name), every WebSocket's and every
// POST's Origin must be the page's own, a strict content security policy
// allows only the page's own scripts and connections, and past a few bad
// tokens or cookies the bad ones are answered slowly, for twice as long
// each time (a right one always passes: guard.go). The server never binds
// another address, listens only while asked (it stops after an idle time
// with no page connected) and its cookies die with it. A page left open
// over a restart of agentd gets back in with a resume key it holds in
// memory, handed over only to a server that proved it knows it
// (resume.go); failing that it says to run agentctl view again.
//
// Taking over is a lease in the daemon (Sessions.TakeOver): while a page
// holds it, agents' asks and sends to the session are busy, naming it; the
// page's keys reach the program only then, over its terminal WebSocket;
// the lease ends when the person hands back, when no key came for
// LeaseIdle, or when the page or the session goes (lease.go).
//
// Desktops are listed beside the sessions, and a desktop's screen is shown
// live on its own page in noVNC, through agentd's RFB proxy
// (internal/rfbproxy), which drops the page's keys, pointer and clipboard
// until the person takes the desktop's input over: the same lease, held
// off agents' batches on that desktop (desktop.go).
//
// The daemon gives the server what it shows and does through Sessions and
// Desktops; the server knows nothing else of agentd.
package view

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentd/agentd/pkg/wire"
)

// static is the page: our own HTML, script and style, and the xterm.js
// release copied from assets/ by go generate.
//
//go:embed static
var static embed.FS

//go:generate sh assets/update.sh

// Defaults for Options.
const (
	// DefaultIdle is how long the server listens with no page connected.
	DefaultIdle = 15 * time.Minute
	// DefaultWriteTimeout drops a page that has not read for this long.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultPoll is how often a connected page's session list is
	// refreshed (sent only when it changed).
	DefaultPoll = time.Second
	// MaxViewers is the most pages watching one session's terminal.
	MaxViewers = 8
)

// Sessions is what the page shows and does, given by the daemon.
type Sessions interface {
	// List returns every session's row.
	List(ctx context.Context) ([]wire.SessionRow, error)
	// Detail returns what a session in needs_approval or needs_attention
	// asks (its prompt id with it), nil when it asks nothing.
	Detail(ctx context.Context, name string) (*wire.StateDetail, error)
	// Size returns a running session's terminal size; an error names why
	// the session cannot be watched (none of that name, not running).
	Size(ctx context.Context, name string) (cols, rows int, err error)
	// Watch writes the session's terminal to w (a repaint, then its
	// output) and types what arrives on keys into it, until the session
	// ends or ctx does. The server sends on keys only the keys of the
	// page that holds the session's lease.
	Watch(ctx context.Context, name string, w io.Writer, keys <-chan []byte) error
	// TakeOver gives the session's keyboard to holder: a lease whose id
	// the holder's own calls carry, or an error naming who holds it.
	TakeOver(ctx context.Context, name, holder string) (id string, err error)
	// HandBack ends the lease id on the session, recording why.
	HandBack(name, id, why string)
	// Approve answers the session's prompt promptID as agentctl approve
	// (deny: deny) --prompt does; lease is the caller's lease on the
	// session, "" for none. Its errors are *wire.Error.
	Approve(ctx context.Context, name string, deny bool, promptID, lease string) (*wire.ApproveResult, error)
}

// Options configure a Server. Zero values take the defaults.
type Options struct {
	Sessions     Sessions
	Idle         time.Duration
	WriteTimeout time.Duration
	Poll         time.Duration
	// LeaseIdle is how long a page holds a session's keyboard with no
	// key typed (DefaultLeaseIdle).
	LeaseIdle time.Duration
	Logger    zerolog.Logger
	// Desktops, when set, are shown on the desktop page (desktop.go).
	Desktops Desktops
	// StateFile, when set, is where the server keeps what a page left
	// open needs to reconnect after a restart of agentd (resume.go), and
	// what it resumes from.
	StateFile string
}

// Server is a running view server.
type Server struct {
	opts  Options
	port  int
	ln    net.Listener
	http  *http.Server
	guard *guard
	log   zerolog.Logger
	// saveMu orders writes of the state file, so the last written holds
	// every cookie handed out before it.
	saveMu  sync.Mutex
	dropped bool // the state file was removed for good (saveMu)

	ctx    context.Context // ends when the server stops
	cancel context.CancelFunc
	served chan struct{} // closed when http.Serve has returned
	// stopped is closed when the stop (Close, or the idle time's) has
	// finished, its last write of the state file included: a caller that
	// removes the state directory after Close must find nothing written
	// into it after.
	stopped chan struct{}

	// handlers counts the WebSockets' handlers (hijacked connections,
	// which http.Server.Shutdown does not wait for): Close waits for
	// them, so none uses Sessions after it returns.
	handlers sync.WaitGroup

	// pageSeq numbers the terminal pages, to name a lease's holder.
	pageSeq atomic.Int64

	mu      sync.Mutex
	pages   int                               // WebSockets open
	viewers map[string]int                    // session → terminal viewers
	leases  map[string]heldLease              // session → the lease a page holds
	terms   map[string]map[*termPage]struct{} // session → its pages watching
	idle    *time.Timer
	closed  bool
}

// Start listens on 127.0.0.1 at a port the kernel chooses and serves until
// Close, ctx's end or an idle time with no page connected.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Sessions == nil {
		return nil, errors.New("view: no sessions to show")
	}
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.LeaseIdle <= 0 {
		opts.LeaseIdle = DefaultLeaseIdle
	}
	var saved *savedView
	if opts.StateFile != "" {
		var err error
		if saved, err = loadSaved(opts.StateFile, opts.Idle, time.Now()); err != nil {
			opts.Logger.Warn().Err(err).Msg("view: open pages will not reconnect")
		}
	}
	ln, resumed, err := listenResumed(saved)
	if err != nil {
		return nil, fmt.Errorf("view: listen on 127.0.0.1: %w", err)
	}
	s := &Server{opts: opts, ln: ln, port: ln.Addr().(*net.TCPAddr).Port, guard: newGuard(),
		log: opts.Logger.With().Str("component", "view").Logger(), viewers: map[string]int{}, leases: map[string]heldLease{}, terms: map[string]map[*termPage]struct{}{}, served: make(chan struct{}), stopped: make(chan struct{})}
	if resumed {
		s.guard.restoreKeys(saved)
	}
	s.saveState()
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	stopWithCtx := context.AfterFunc(ctx, s.Close)
	s.http = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          log.New(s.log, "", 0),
	}
	s.idle = time.AfterFunc(opts.Idle, s.idleStop)
	go func() {
		defer close(s.served)
		defer stopWithCtx()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("view server failed")
			// Stopped like any other stop, so that Done is closed; not
			// from here, since Close waits for this goroutine.
			defer func() { go s.Close() }()
		}
	}()
	s.log.Info().Int("port", s.port).Dur("idle", opts.Idle).Bool("resumed", resumed).Msg("view listening on 127.0.0.1")
	return s, nil
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.port }

// ErrClosed is the answer of a stopped server.
var ErrClosed = errors.New("view: stopped")

// URL returns a URL that opens the page once: it holds a new one-time
// token. A session name opens that session's terminal. The URL counts as
// use: the idle time starts again. A server that has stopped (or is
// stopping) answers ErrClosed.
func (s *Server) URL(session string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	q := url.Values{"t": {s.guard.newToken()}}
	if session != "" {
		q.Set("s", session)
	}
	if s.pages == 0 {
		s.idle.Reset(s.opts.Idle)
	}
	return "http://127.0.0.1:" + strconv.Itoa(s.port) + "/?" + q.Encode(), nil
}

// Done is closed once the server has stopped, its state file written or
// removed.
func (s *Server) Done() <-chan struct{} { return s.stopped }

// Close stops the server: the listener, then every page's connection.
func (s *Server) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.idle.Stop()
	s.mu.Unlock()
	if already {
		<-s.stopped
		return
	}
	defer close(s.stopped)
	s.shutdown()
	// Stopped with agentd (or its view closed by it): the file is kept,
	// stamped now, for the pages left open to reconnect to the next one.
	s.saveState()
}

// shutdown stops the listener, then every page's connection; the caller
// has marked the server closed.
func (s *Server) shutdown() {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
	<-s.served
	s.handlers.Wait()
	s.log.Info().Int("port", s.port).Msg("view stopped")
}

// idleStop stops the server when its idle time passed with no page.
func (s *Server) idleStop() {
	s.mu.Lock()
	stop := s.pages == 0 && !s.closed
	// Closed at once, under the lock: no URL of it is handed out from
	// here on.
	s.closed = s.closed || stop
	s.mu.Unlock()
	if stop {
		defer close(s.stopped)
		s.log.Info().Dur("idle", s.opts.Idle).Msg("no page connected: view stops listening")
		s.dropState()
		s.shutdown()
	}
}

// pageOpened and pageClosed count the open WebSockets, which hold the
// idle time off.
func (s *Server) pageOpened() {
	s.mu.Lock()
	s.pages++
	s.idle.Stop()
	s.mu.Unlock()
}

func (s *Server) pageClosed() {
	s.mu.Lock()
	s.pages--
	if s.pages == 0 && !s.closed {
		s.idle.Reset(s.opts.Idle)
	}
	s.mu.Unlock()
}

// contentPolicy allows the page's own scripts, styles and connections
// only; xterm.js needs no inline style or eval.
const contentPolicy = "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// handler is every route behind the checks every request passes.
func (s *Server) handler() http.Handler {
	files, _ := fs.Sub(static, "static")
	fileServer := http.StripPrefix("/static/", http.FileServerFS(files))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.Handle("GET /static/", s.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // files only, no listings
			return
		}
		fileServer.ServeHTTP(w, r)
	})))
	mux.Handle("GET /check", s.authed(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })))
	mux.Handle("GET /ws/list", s.authed(s.websocket(false, s.serveList)))
	mux.Handle("GET /ws/term", s.authed(s.websocket(true, s.serveTerm)))
	mux.Handle("POST /api/approve", s.authed(http.HandlerFunc(s.approve)))
	s.desktopRoutes(mux)
	s.resumeRoutes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !hostAllowed(r.Host, s.port) {
			s.log.Warn().Str("host", r.Host).Str("remote", r.RemoteAddr).Msg("view request refused: foreign Host header")
			http.Error(w, "this server answers only to 127.0.0.1:"+strconv.Itoa(s.port)+" or localhost:"+strconv.Itoa(s.port), http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// index trades a one-time token for a cookie, or serves the page to a
// request with a cookie.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	if t := r.URL.Query().Get("t"); t != "" {
		to := "/"
		if name := r.URL.Query().Get("s"); name != "" {
			to += "#" + url.PathEscape(name)
		}
		s.tradeToken(w, r, t, to, "open agentd's view", "agentctl view")
		return
	}
	s.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := static.ReadFile("static/index.html")
		if err != nil {
			http.Error(w, "page missing from this build", http.StatusInternalServerError)
			return
		}
		// xterm.js styles its rows with <style> elements: the page's
		// nonce.js gives them this response's nonce, the only inline
		// style the policy lets in.
		nonce := secret()
		w.Header().Set("Content-Security-Policy", strings.Replace(contentPolicy, "style-src 'self'", "style-src 'self' 'nonce-"+nonce+"'", 1))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(bytes.Replace(b, []byte("{{NONCE}}"), []byte(nonce), 1))
	})).ServeHTTP(w, r)
}

// tradeToken spends the one-time token t for a cookie and leads the page
// on to to; a bad or spent token is a bad pass, its message naming again,
// the command that makes a new link.
func (s *Server) tradeToken(w http.ResponseWriter, r *http.Request, t, to, link, again string) {
	c := s.guard.trade(t)
	if c == "" {
		s.badPass(w, r, http.StatusForbidden, "this link was used already or has expired: run "+again+" for a new one")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	// The token leaves the address bar (and the history) by a refresh
	// from this page rather than a redirect: a link opened from
	// elsewhere (agentctl view's page in a file, another program) is a
	// cross-site navigation, whose redirect would not carry the
	// SameSite=Strict cookie just set; a navigation this page starts does.
	esc := html.EscapeString(to)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0;url=%s\">\n<title>agentd</title>\n<p><a href=\"%s\">%s</a></p>\n", esc, esc, link)
}

// authed lets through requests with a cookie this server handed out.
func (s *Server) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		if err != nil {
			http.Error(w, "no pass for this page: run agentctl view to open it", http.StatusUnauthorized)
			return
		}
		if !s.guard.validCookie(c.Value) {
			s.badPass(w, r, http.StatusUnauthorized, "this page's pass is not valid any more (agentd or its view restarted): run agentctl view again")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// badPass answers a bad token or cookie. Past the free ones the answer is
// 429 with the time the block has left, given only after a delay (the
// guard's tarpit): a guesser waits, and guesses one at a time. A right
// token or cookie is never blocked, however many wrong ones came before:
// every local user reaches the view from 127.0.0.1, so a block by address
// would let any of them lock the person out, and 256 random bits are what
// keeps guessers out, not the block.
func (s *Server) badPass(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d, started := s.guard.fail(clientOf(r))
	if d <= 0 {
		s.log.Warn().Str("remote", r.RemoteAddr).Int("status", status).Msg("view refused a bad token or cookie")
		http.Error(w, msg, status)
		return
	}
	if started {
		s.log.Warn().Str("remote", r.RemoteAddr).Dur("block", d).Msg("view: too many bad tokens or cookies; bad ones are answered slowly for a while (good ones still pass)")
	}
	s.guard.tarpit(r.Context(), d)
	w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)+1))
	http.Error(w, fmt.Sprintf("too many bad tokens or cookies: bad ones are refused slowly for %s; %s", d.Round(time.Second), msg), http.StatusTooManyRequests)
}
