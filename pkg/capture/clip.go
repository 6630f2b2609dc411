package capture

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"

	"github.com/agentd/agentd/internal/xselection"
)

// The clipboard of a Screen's display: the CLIPBOARD selection as UTF-8
// text. Setting it makes the Screen the selection's owner, on an X
// connection of its own whose loop answers the requests of programs that
// paste, until another program takes the selection or the Screen closes.
// The text lives in agentd, as a clipboard lives in the program that
// copied: it is gone when agentd stops. A desktop's Screen hands it to its
// ClipOwner instead (the desktop's worker), so it lives as long as the
// desktop. Only lengths reach the audit log.

// clipWait bounds a read of the clipboard: the owner must answer a
// conversion; a live program does so at once.
const clipWait = 3 * time.Second

// clipboard is a Screen's selection connection.
type clipboard struct {
	c          *xgb.Conn
	sock       *xsock
	win        xproto.Window
	owner      *xselection.Owner
	prop, incr xproto.Atom // where a read's conversion lands; INCR, a transfer too large to read

	mu     sync.Mutex
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
	c, sock, err := dialXSock(display, network, addr, num, authority)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
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
	if cb.win, err = xproto.NewWindowId(c); err != nil {
		return fail(err)
	}
	if err := xproto.CreateWindowChecked(c, 0, cb.win, root.Root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0,
		xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
		return fail(err)
	}
	if cb.owner, err = xselection.New(c, cb.win); err != nil {
		return fail(err)
	}
	a, err := xselection.Atoms(c, "AGENTD_CLIPBOARD", "INCR")
	if err != nil {
		return fail(err)
	}
	cb.prop, cb.incr = a[0], a[1]
	go cb.loop()
	return cb, nil
}

// loop answers paste requests and hands conversions to a waiting get.
func (cb *clipboard) loop() {
	defer close(cb.done)
	cb.owner.Serve(func(ev xgb.Event) {
		e, ok := ev.(xproto.SelectionNotifyEvent)
		if !ok {
			return
		}
		cb.mu.Lock()
		if cb.notify != nil {
			select {
			case cb.notify <- e:
			default:
			}
		}
		cb.mu.Unlock()
	})
}

func (cb *clipboard) close() {
	cb.sock.Kill(net.ErrClosed)
	cb.sock.drained()
	cb.c.Close()
}

func (cb *clipboard) set(text []byte) error {
	if err := cb.owner.Set(text); err != nil {
		return fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	return nil
}

func (cb *clipboard) get(ctx context.Context, max int) (string, error) {
	r, err := xproto.GetSelectionOwner(cb.c, cb.owner.Clipboard()).Reply()
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
	xproto.ConvertSelection(cb.c, cb.win, cb.owner.Clipboard(), cb.owner.UTF8(), cb.prop, xproto.TimeCurrentTime)
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
	p, err := xproto.GetProperty(cb.c, true, cb.win, cb.prop, xproto.GetPropertyTypeAny, 0, uint32(max/4+1)).Reply()
	if err != nil {
		return "", fmt.Errorf("%w: clipboard: %v", ErrUnavailable, err)
	}
	if p.Type == cb.incr || p.BytesAfter > 0 || len(p.Value) > max {
		return "", fmt.Errorf("%w: the clipboard holds more than %d bytes, the most it can be read", ErrTooLarge, max)
	}
	return string(p.Value), nil
}

// ClipSet makes text the display's clipboard (CLIPBOARD, UTF-8); the audit
// log records its length only.
func (s *Screen) ClipSet(ctx context.Context, caller Caller, text string) error {
	start := time.Now()
	var err error
	if s.clipOwner != nil {
		err = s.clipOwner(ctx, text)
	} else {
		var cb *clipboard
		if cb, err = s.clip(); err == nil {
			err = cb.set([]byte(text))
		}
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
