package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/wire"
)

// maxKeysMessage bounds one message from a terminal page: keys (a paste)
// or a take or give.
const maxKeysMessage = 64 << 10

// DefaultLeaseIdle is how long a page holds a session's keyboard with no
// key typed before it is handed back for it.
const DefaultLeaseIdle = 10 * time.Minute

// termPage is one terminal page's side of the session's keyboard: its
// lease, if it holds one, and its keys on their way to the watch. The
// lease is the daemon's (Sessions.TakeOver); the page's keys reach the
// watch only while it holds it, and it is handed back when the person
// says, when no key came for LeaseIdle, when the session's terminal ends
// and when the page goes, whichever is first.
type termPage struct {
	s      *Server
	p      *page
	name   string
	holder string
	keys   chan []byte
	// unwatched is closed once the watch has ended: keys have nowhere to
	// go. done is closed when read returns.
	unwatched chan struct{}
	done      chan struct{}

	// mu is held across TakeOver and HandBack, so no lease is taken
	// after close, and across a key's hand-off to the watch, so no key
	// passes after a hand-back.
	mu     sync.Mutex
	lease  string // the lease id held, "" for none
	live   bool   // the watch runs
	closed bool
	idle   *time.Timer
}

func newTermPage(s *Server, p *page, name string) *termPage {
	return &termPage{s: s, p: p, name: name, keys: make(chan []byte, 16),
		holder:    fmt.Sprintf("the person in the view page (page %d)", s.pageSeq.Add(1)),
		unwatched: make(chan struct{}), done: make(chan struct{})}
}

// watching marks the watch started: take-overs are possible from now,
// and the page hears of other pages' take-overs.
func (t *termPage) watching() {
	t.mu.Lock()
	t.live = true
	t.mu.Unlock()
	t.s.mu.Lock()
	pages := t.s.terms[t.name]
	if pages == nil {
		pages = map[*termPage]struct{}{}
		t.s.terms[t.name] = pages
	}
	pages[t] = struct{}{}
	t.s.mu.Unlock()
}

// heldElsewhere is the message that tells the page another page holds
// the session's keyboard; ok is false when none does.
func (t *termPage) heldElsewhere() (Message, bool) {
	t.s.mu.Lock()
	l, ok := t.s.leases[t.name]
	t.s.mu.Unlock()
	if !ok || l.holder == t.holder {
		return Message{}, false
	}
	return Message{Type: "lease", Name: t.name, Holder: l.holder, Since: l.since,
		Message: fmt.Sprintf("%s has the keyboard: read-only here until it is handed back", l.holder)}, true
}

// tellOthers sends m to every other page watching t's session, outside
// every lock (a page slow to read costs only its own write timeout).
func (s *Server) tellOthers(t *termPage, m Message) {
	s.mu.Lock()
	var others []*termPage
	for o := range s.terms[t.name] {
		if o != t {
			others = append(others, o)
		}
	}
	s.mu.Unlock()
	for _, o := range others {
		o.p.sendJSON(m)
	}
}

// read reads the page's messages until it goes: take, give and keys.
func (t *termPage) read() {
	defer close(t.done)
	defer t.p.cancel()
	for {
		typ, b, err := t.p.conn.Read(t.p.ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			t.key(b)
			continue
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.refuse("bad_message", "a message the view does not understand: the page sends take, give or keys")
			continue
		}
		switch m.Type {
		case "take":
			t.take()
		case "give":
			if t.release("handed back") {
				t.p.sendJSON(Message{Type: "lease", Name: t.name, Message: "handed back: agents may type into it again"})
			}
		default:
			t.refuse("bad_message", fmt.Sprintf("%q is not a message the view takes: the page sends take, give or keys", m.Type))
		}
	}
}

// refuse tells the page that what it asked was not done.
func (t *termPage) refuse(code, msg string) {
	t.p.sendJSON(Message{Type: "refused", Name: t.name, Code: code, Message: msg})
}

// take asks the daemon for the session's keyboard, and tells the other
// pages watching the session who has it.
func (t *termPage) take() {
	if since, ok := t.takeLocked(); ok {
		t.s.tellOthers(t, Message{Type: "lease", Name: t.name, Holder: t.holder, Since: since,
			Message: fmt.Sprintf("%s took over the keyboard: read-only here until it is handed back", t.holder)})
	}
}

// takeLocked takes the lease under mu; it reports whether it did, and
// since when.
func (t *termPage) takeLocked() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return time.Time{}, false
	case t.lease != "":
		t.p.sendJSON(Message{Type: "lease", Name: t.name, Held: true, Holder: t.holder, Message: "this page already holds the keyboard"})
		return time.Time{}, false
	case !t.live:
		t.refuse("not_found", fmt.Sprintf("session %q's terminal is not shown: nothing to take over", t.name))
		return time.Time{}, false
	}
	id, err := t.s.opts.Sessions.TakeOver(t.p.ctx, t.name, t.holder)
	if err != nil {
		code := "failed"
		var we *wire.Error
		if errors.As(err, &we) {
			code = string(we.Code)
		}
		t.refuse(code, err.Error())
		return time.Time{}, false
	}
	since := time.Now()
	t.lease = id
	t.s.holdLease(t.name, heldLease{id: id, cookie: t.p.cookie, holder: t.holder, since: since})
	idle := t.s.opts.LeaseIdle
	t.idle = time.AfterFunc(idle, func() {
		if t.release(fmt.Sprintf("no key typed for %s", idle)) {
			t.p.sendJSON(Message{Type: "lease", Name: t.name,
				Message: fmt.Sprintf("handed back: no key was typed for %s; take over again to type", idle)})
		}
	})
	t.p.sendJSON(Message{Type: "lease", Name: t.name, Held: true, Holder: t.holder, Since: since,
		Message: "you have the keyboard: keys typed here reach the program, and agents' asks and sends are refused until you hand back"})
	return since, true
}

// key hands keys to the watch if this page holds the lease, and refuses
// them otherwise, whatever the page is.
func (t *termPage) key(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lease == "" {
		t.s.log.Debug().Str("session", t.name).Int("bytes", len(b)).Msg("view dropped keys from a page without the lease")
		t.refuse("read_only", fmt.Sprintf("keys refused: this page has not taken over session %q, so nothing was typed; press Take over first", t.name))
		return
	}
	t.idle.Reset(t.s.opts.LeaseIdle)
	select {
	case t.keys <- b:
	case <-t.unwatched:
	case <-t.p.ctx.Done():
	}
}

// release hands the lease back, if this page holds one, saying why, and
// tells the other pages watching the session. It reports whether it did.
func (t *termPage) release(why string) bool {
	if !t.releaseLocked(why) {
		return false
	}
	t.s.tellOthers(t, Message{Type: "lease", Name: t.name,
		Message: fmt.Sprintf("%s handed the keyboard back (%s): take over to type", t.holder, why)})
	return true
}

func (t *termPage) releaseLocked(why string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lease == "" {
		return false
	}
	t.idle.Stop()
	t.s.opts.Sessions.HandBack(t.name, t.lease, why)
	t.s.dropLease(t.name, t.lease)
	t.lease = ""
	return true
}

// unwatch says the watch ended: keys have nowhere to go.
func (t *termPage) unwatch() {
	t.mu.Lock()
	t.live = false
	t.mu.Unlock()
	t.s.mu.Lock()
	if pages := t.s.terms[t.name]; pages != nil {
		delete(pages, t)
		if len(pages) == 0 {
			delete(t.s.terms, t.name)
		}
	}
	t.s.mu.Unlock()
	select {
	case <-t.unwatched:
	default:
		close(t.unwatched)
	}
}

// close ends the page's side: no lease from now on, the one held handed
// back, the reader stopped.
func (t *termPage) close() {
	t.unwatch()
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.release("the page closed")
	t.p.cancel()
	<-t.done
}

// heldLease is a lease one of this server's pages holds: its id, the
// page's cookie (whose Approve requests act as the holder), and who holds
// it since when, for the other pages.
type heldLease struct {
	id     string
	cookie [32]byte
	holder string
	since  time.Time
}

func (s *Server) holdLease(name string, l heldLease) {
	s.mu.Lock()
	s.leases[name] = l
	s.mu.Unlock()
}

func (s *Server) dropLease(name, id string) {
	s.mu.Lock()
	if s.leases[name].id == id {
		delete(s.leases, name)
	}
	s.mu.Unlock()
}

// leaseFor is the lease on name held by a page of the browser with
// cookie, "" for none.
func (s *Server) leaseFor(name string, cookie [32]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[name]; ok && l.cookie == cookie {
		return l.id
	}
	return ""
}
