package view

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/wire"
)

// Message is one JSON text message between the server and the page.
// Terminal output travels as binary messages between a "start" and an
// "end"; so do the keys of a page that holds the session's lease, the
// other way.
type Message struct {
	// Type, from the server: "list" (Sessions, Details, Desktops), "start" (Name,
	// Cols, Rows), "resize" (Cols, Rows: the session's new size), "lease"
	// (Held, Holder, Since, Message: this page took the keyboard or no
	// longer has it; with Held false and a Holder, another page has it
	// now), "refused" (Code, Message: a take-over or keys
	// refused; the terminal goes on), "end" (the session's terminal is
	// gone: Message) or "error" (Code, Message). From the page: "take"
	// and "give" (take over, hand back).
	Type     string            `json:"type"`
	Sessions []wire.SessionRow `json:"sessions,omitempty"`
	// Details are what the sessions that need approval or attention ask,
	// by name.
	Details map[string]*wire.StateDetail `json:"details,omitempty"`
	// Desktops are every desktop, with a list (none when agentd serves
	// no desktops).
	Desktops []DeskRow `json:"desktops,omitempty"`
	Name     string    `json:"name,omitempty"`
	Cols     int       `json:"cols,omitempty"`
	Rows     int       `json:"rows,omitempty"`
	Held     bool      `json:"held,omitempty"`
	Holder   string    `json:"holder,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	// Code is "not_found" (no such session, or not running), "busy" (too
	// many viewers, or another holds the lease), "read_only" (keys from a
	// page without the lease), "bad_message" or "failed".
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// page is one open WebSocket.
type page struct {
	s      *Server
	conn   *websocket.Conn
	ctx    context.Context // ends when the page or the server goes
	cancel context.CancelFunc
	cookie [32]byte // the hash of the page's cookie: its browser
}

// send writes one message within the write timeout; a page that has not
// read by then is dropped (the library closes the connection).
func (p *page) send(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.s.opts.WriteTimeout)
	defer cancel()
	return p.conn.Write(ctx, typ, b)
}

func (p *page) sendJSON(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return p.send(websocket.MessageText, b)
}

// websocket checks the Origin, upgrades and runs serve with the page
// until either side ends it. With reads false the page sends nothing the
// server reads: a message from it ends the connection. With reads true
// serve reads the page's messages itself and ends p.ctx (p.cancel) when
// the page goes.
func (s *Server) websocket(reads bool, serve func(p *page, r *http.Request)) http.Handler {
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
			return // Accept has answered
		}
		s.pageOpened()
		defer s.pageClosed()
		p := &page{s: s, conn: conn}
		if c, err := r.Cookie(cookieName); err == nil {
			p.cookie = hash(c.Value)
		}
		if reads {
			conn.SetReadLimit(maxKeysMessage)
			p.ctx, p.cancel = context.WithCancel(s.ctx)
		} else {
			conn.SetReadLimit(1 << 10)
			p.ctx = conn.CloseRead(s.ctx)
			p.cancel = func() {}
		}
		defer p.cancel()
		serve(p, r)
		conn.Close(websocket.StatusNormalClosure, "")
	})
}

// serveList sends the session list at once, then again each time it
// changes, looked at every Poll.
func (s *Server) serveList(p *page, _ *http.Request) {
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	var last []byte
	for {
		rows, err := s.opts.Sessions.List(p.ctx)
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			p.sendJSON(Message{Type: "error", Code: "failed", Message: "listing sessions: " + err.Error()})
			return
		}
		// The page counts the age from created_at: a list that differs
		// only in ages is not sent again.
		var details map[string]*wire.StateDetail
		for i := range rows {
			rows[i].AgeMS = 0
			if asks(rows[i].State) {
				d, err := s.opts.Sessions.Detail(p.ctx, rows[i].Name)
				if err != nil || d == nil {
					continue // gone meanwhile, or answered: the next look says
				}
				if details == nil {
					details = map[string]*wire.StateDetail{}
				}
				details[rows[i].Name] = d
			}
		}
		var desks []DeskRow
		if s.opts.Desktops != nil {
			// A failure to list desktops leaves the sessions shown.
			desks, _ = s.opts.Desktops.List(p.ctx)
		}
		b, err := json.Marshal(Message{Type: "list", Sessions: rows, Details: details, Desktops: desks})
		if err != nil {
			return
		}
		if !bytes.Equal(b, last) {
			if err := p.send(websocket.MessageText, b); err != nil {
				return
			}
			last = b
		}
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// asks says whether an agent state waits for a person.
func asks(state string) bool { return state == "needs_approval" || state == "needs_attention" }

// serveTerm shows one session's terminal: its size, then its output as
// binary messages, then why it ended. The page may take the session's
// keyboard over and hand it back (lease.go); its keys reach the program
// only while it holds it.
func (s *Server) serveTerm(p *page, r *http.Request) {
	name := r.URL.Query().Get("name")
	t := newTermPage(s, p, name)
	// The page's messages are read from the start, so a page that goes
	// is seen at once; the lease is handed back whatever ends the page.
	go t.read()
	defer t.close()
	if name == "" {
		p.sendJSON(Message{Type: "error", Code: "not_found", Message: "no session named in the request"})
		return
	}
	s.mu.Lock()
	busy := s.viewers[name] >= MaxViewers
	if !busy {
		s.viewers[name]++
	}
	s.mu.Unlock()
	if busy {
		p.sendJSON(Message{Type: "error", Code: "busy", Name: name,
			Message: fmt.Sprintf("session %q already has %d viewers, the most it may have: close another page watching it", name, MaxViewers)})
		return
	}
	defer func() {
		s.mu.Lock()
		if s.viewers[name]--; s.viewers[name] == 0 {
			delete(s.viewers, name)
		}
		s.mu.Unlock()
	}()
	cols, rows, err := s.opts.Sessions.Size(p.ctx, name)
	if err != nil {
		p.sendJSON(Message{Type: "error", Code: "not_found", Name: name, Message: err.Error()})
		return
	}
	t.watching() // before the page hears of the terminal, so a take-over finds it
	if err := p.sendJSON(Message{Type: "start", Name: name, Cols: cols, Rows: rows}); err != nil {
		return
	}
	if m, ok := t.heldElsewhere(); ok {
		p.sendJSON(m)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	w := &termWriter{p: p, cancel: cancel}
	sized := make(chan struct{})
	go func() {
		defer close(sized)
		s.followSize(ctx, p, name, cols, rows)
	}()
	err = s.opts.Sessions.Watch(ctx, name, w, t.keys)
	t.unwatch()
	cancel()
	<-sized
	if p.ctx.Err() != nil || w.failed.Load() {
		return // the page went, or stopped reading
	}
	t.release("the session's terminal ended")
	msg := fmt.Sprintf("session %q ended", name)
	if err != nil {
		msg = fmt.Sprintf("session %q: %v", name, err)
	}
	p.sendJSON(Message{Type: "end", Name: name, Message: msg})
}

// followSize tells the page each new size of the session, looked at
// every Poll, so its terminal keeps the session's shape when someone
// attached resizes it.
func (s *Server) followSize(ctx context.Context, p *page, name string, cols, rows int) {
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, r, err := s.opts.Sessions.Size(ctx, name)
		if err != nil || (c == cols && r == rows) {
			continue // an ended session is the watch's to say
		}
		cols, rows = c, r
		if p.sendJSON(Message{Type: "resize", Name: name, Cols: cols, Rows: rows}) != nil {
			return
		}
	}
}

// termWriter sends terminal output to the page as binary messages; a
// page that does not read within the write timeout ends the watch.
type termWriter struct {
	p      *page
	cancel context.CancelFunc
	failed atomic.Bool
}

func (t *termWriter) Write(b []byte) (int, error) {
	if err := t.p.send(websocket.MessageBinary, b); err != nil {
		t.failed.Store(true)
		t.cancel()
		return 0, err
	}
	return len(b), nil
}
