package capture

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
)

// The clipboard of a Screen's display: the CLIPBOARD selection as UTF-8
// text. Setting it makes the Screen the selection's owner, on an X
// connection of its own whose loop answers the requests of programs that
// paste, until another program takes the selection or the Screen closes.
// The text lives in agentd, as a clipboard lives in the program that
// copied: it is gone when agentd stops. Only lengths reach the audit log.

// clipWait bounds a read of the clipboard: the owner must answer a
// conversion; a live program does so at once.
const clipWait = 3 * time.Second

// clipboard is a Screen's selection connection.
type clipboard struct {
	c    *xgb.Conn
	sock *xsock
	win  xproto.Window
	a    struct{ clipboard, targets, utf8, text, prop, incr xproto.Atom }

	mu     sync.Mutex
	text   []byte
	owning bool
	notify chan xproto.SelectionNotifyEvent // a get waiting for its answer
	done   chan struct{}                    // closed when the loop ends
}

func (s *Screen) clip() (*clipboard, error) {
	s.clipMu.Lock()
	defer s.clipMu.Unlock()
	if s.clipC != nil {
		select {
		case <-s.clipC.done:
		default:
			return s.clipC, nil
		}
	}
	cb, err := openClipboard(s.opts.Display, s.opts.Authority)
	if err != nil {
		return nil, err
	}
	s.clipC = cb
	return cb, nil
}

func openClipboard(display, authority string) (*clipboard, error) {
	network, addr, num, screenNum, err := parseDisplay(display)
	if err != nil {
		return nil, err
	}
	nc, err := net.DialTimeout(network, addr, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: no X server at DISPLAY %s: %v", ErrUnavailable, display, err)
	}
	name, cookie := xauthCookieFrom(authority, num)
	sock := newXSock(nc, name, cookie)
	c, err := xgb.NewConnNet(sock)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%w: X server at DISPLAY %s refused the connection: %v", ErrUnavailable, display, err)
	}
	cb := &clipboard{c: c, sock: sock, done: make(chan struct{})}
	fail := func(err error) (*clipboard, error) {
		cb.close()
		return nil, fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	setup := xproto.Setup(c)
	if screenNum >= len(setup.Roots) {
		return fail(fmt.Errorf("no screen %d", screenNum))
	}
	root := setup.Roots[screenNum]
	for _, n := range []struct {
		p    *xproto.Atom
		name string
	}{{&cb.a.clipboard, "CLIPBOARD"}, {&cb.a.targets, "TARGETS"}, {&cb.a.utf8, "UTF8_STRING"}, {&cb.a.text, "TEXT"},
		{&cb.a.prop, "AGENTD_CLIPBOARD"}, {&cb.a.incr, "INCR"}} {
		r, err := xproto.InternAtom(c, false, uint16(len(n.name)), n.name).Reply()
		if err != nil {
			return fail(err)
		}
		*n.p = r.Atom
	}
	if cb.win, err = xproto.NewWindowId(c); err != nil {
		return fail(err)
	}
	if err := xproto.CreateWindowChecked(c, 0, cb.win, root.Root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0,
		xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
		return fail(err)
	}
	go cb.loop()
	return cb, nil
}

// loop answers paste requests and hands conversions to a waiting get.
func (cb *clipboard) loop() {
	defer close(cb.done)
	for {
		ev, err := cb.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		switch e := ev.(type) {
		case xproto.SelectionRequestEvent:
			cb.answer(e)
		case xproto.SelectionClearEvent:
			cb.mu.Lock()
			cb.owning, cb.text = false, nil
			cb.mu.Unlock()
		case xproto.SelectionNotifyEvent:
			cb.mu.Lock()
			if cb.notify != nil {
				select {
				case cb.notify <- e:
				default:
				}
			}
			cb.mu.Unlock()
		}
	}
}

// answer serves one paste: TARGETS, or the text as UTF8_STRING, STRING or
// TEXT; anything else is refused (property None), as ICCCM says.
func (cb *clipboard) answer(e xproto.SelectionRequestEvent) {
	cb.mu.Lock()
	text, owning := cb.text, cb.owning
	cb.mu.Unlock()
	prop := e.Property
	if prop == xproto.AtomNone {
		prop = e.Target // an obsolete client: ICCCM's fallback
	}
	switch {
	case !owning || e.Selection != cb.a.clipboard:
		prop = xproto.AtomNone
	case e.Target == cb.a.targets:
		var b []byte
		for _, a := range []xproto.Atom{cb.a.targets, cb.a.utf8, xproto.AtomString, cb.a.text} {
			b = append(b, byte(a), byte(a>>8), byte(a>>16), byte(a>>24))
		}
		xproto.ChangeProperty(cb.c, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, 4, b)
	case e.Target == cb.a.utf8 || e.Target == xproto.AtomString || e.Target == cb.a.text:
		typ := e.Target
		if typ == cb.a.text {
			typ = cb.a.utf8
		}
		xproto.ChangeProperty(cb.c, xproto.PropModeReplace, e.Requestor, prop, typ, 8, uint32(len(text)), text)
	default:
		prop = xproto.AtomNone
	}
	ev := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection, Target: e.Target, Property: prop}
	xproto.SendEvent(cb.c, false, e.Requestor, 0, string(ev.Bytes()))
}

func (cb *clipboard) close() {
	cb.sock.Kill(net.ErrClosed)
	cb.sock.drained()
	cb.c.Close()
}

func (cb *clipboard) set(text []byte) error {
	cb.mu.Lock()
	cb.text, cb.owning = text, true
	cb.mu.Unlock()
	if err := xproto.SetSelectionOwnerChecked(cb.c, cb.win, cb.a.clipboard, xproto.TimeCurrentTime).Check(); err != nil {
		return fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	r, err := xproto.GetSelectionOwner(cb.c, cb.a.clipboard).Reply()
	if err != nil {
		return fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	if r.Owner != cb.win {
		return fmt.Errorf("%w: clipboard: another program took the selection at once; try again", ErrUnavailable)
	}
	return nil
}

func (cb *clipboard) get(ctx context.Context, max int) (string, error) {
	r, err := xproto.GetSelectionOwner(cb.c, cb.a.clipboard).Reply()
	if err != nil {
		return "", fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	if r.Owner == xproto.WindowNone {
		return "", nil // nobody copied anything
	}
	ch := make(chan xproto.SelectionNotifyEvent, 1)
	cb.mu.Lock()
	if cb.notify != nil {
		cb.mu.Unlock()
		return "", fmt.Errorf("%w: another clipboard read is in progress; try again", ErrBusy)
	}
	cb.notify = ch
	cb.mu.Unlock()
	defer func() {
		cb.mu.Lock()
		cb.notify = nil
		cb.mu.Unlock()
	}()
	xproto.ConvertSelection(cb.c, cb.win, cb.a.clipboard, cb.a.utf8, cb.a.prop, xproto.TimeCurrentTime)
	t := time.NewTimer(clipWait)
	defer t.Stop()
	var ev xproto.SelectionNotifyEvent
	select {
	case ev = <-ch:
	case <-t.C:
		return "", fmt.Errorf("%w: the program holding the clipboard did not hand it over within %s", ErrTimeout, clipWait)
	case <-ctx.Done():
		return "", ctx.Err()
	case <-cb.done:
		return "", fmt.Errorf("%w: the X connection closed", ErrUnavailable)
	}
	if ev.Property == xproto.AtomNone {
		return "", fmt.Errorf("%w: the clipboard holds no text (its owner offers no UTF-8)", ErrInvalid)
	}
	p, err := xproto.GetProperty(cb.c, true, cb.win, cb.a.prop, xproto.GetPropertyTypeAny, 0, uint32(max/4+1)).Reply()
	if err != nil {
		return "", fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	if p.Type == cb.a.incr || p.BytesAfter > 0 || len(p.Value) > max {
		return "", fmt.Errorf("%w: the clipboard holds more than %d bytes, the most it can be read", ErrTooLarge, max)
	}
	return string(p.Value), nil
}

// ClipSet makes text the display's clipboard (CLIPBOARD, UTF-8); the audit
// log records its length only.
func (s *Screen) ClipSet(ctx context.Context, caller Caller, text string) error {
	start := time.Now()
	cb, err := s.clip()
	if err == nil {
		err = cb.set([]byte(text))
	}
	s.auditClip(start, caller, "clipboard_set", len(text), err)
	return err
}

// ClipGet returns the display's clipboard text, at most max bytes
// (ErrTooLarge past it); "" when nothing was copied. The audit log records
// its length only.
func (s *Screen) ClipGet(ctx context.Context, caller Caller, max int) (string, error) {
	start := time.Now()
	cb, err := s.clip()
	var text string
	if err == nil {
		text, err = cb.get(ctx, max)
	}
	s.auditClip(start, caller, "clipboard_get", len(text), err)
	return text, err
}

func (s *Screen) auditClip(start time.Time, caller Caller, kind string, n int, err error) {
	if s.audit == nil {
		return
	}
	rec := AuditRecord{Time: start, Caller: caller, Desktop: s.desktop, Actions: []AuditAction{{Kind: kind, Bytes: n}},
		Ran: 1, Outcome: outcome(err), Duration: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		rec.Ran, rec.Message = 0, err.Error()
	}
	if aerr := s.audit.write(rec); aerr != nil {
		s.log.Error().Err(aerr).Msg("audit log write failed")
	}
}

// Busy reports whether a batch holds the screen.
func (s *Screen) Busy() bool {
	h, _ := s.desk.holder()
	return h != nil
}
