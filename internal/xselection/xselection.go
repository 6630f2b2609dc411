// Package xselection owns an X display's CLIPBOARD selection as UTF-8 text:
// it answers the programs that paste (TARGETS, or the text as UTF8_STRING,
// STRING or TEXT) from the text last set, until another program takes the
// selection. The caller owns the X connection and the window that owns the
// selection; Serve runs the connection's event loop.
//
// pkg/capture's clipboard (which also reads the selection) and
// pkg/desktop's worker (which keeps a desktop's clipboard alive across
// agentd restarts) both own the selection this way; pkg/desktop may not
// import pkg/capture, so the owner lives here. It imports nothing of agentd.
package xselection

import (
	"errors"
	"sync"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
)

// ErrTaken is Set's error when another program owned the selection as soon
// as it was taken.
var ErrTaken = errors.New("another program took the selection at once; try again")

// Owner owns the CLIPBOARD selection for one window. Set is safe to call
// while Serve runs.
type Owner struct {
	c                              *xgb.Conn
	win                            xproto.Window
	clipboard, targets, utf8, text xproto.Atom

	mu     sync.Mutex
	data   []byte // the text pastes receive while owning
	owning bool
}

// New interns the atoms the owner needs on c; win is the window that will
// own the selection (an input-only window of the caller's).
func New(c *xgb.Conn, win xproto.Window) (*Owner, error) {
	a, err := Atoms(c, "CLIPBOARD", "TARGETS", "UTF8_STRING", "TEXT")
	if err != nil {
		return nil, err
	}
	return &Owner{c: c, win: win, clipboard: a[0], targets: a[1], utf8: a[2], text: a[3]}, nil
}

// Atoms interns names on c, in their order.
func Atoms(c *xgb.Conn, names ...string) ([]xproto.Atom, error) {
	atoms := make([]xproto.Atom, len(names))
	for i, n := range names {
		r, err := xproto.InternAtom(c, false, uint16(len(n)), n).Reply()
		if err != nil {
			return nil, err
		}
		atoms[i] = r.Atom
	}
	return atoms, nil
}

// Clipboard is the CLIPBOARD atom.
func (o *Owner) Clipboard() xproto.Atom { return o.clipboard }

// UTF8 is the UTF8_STRING atom, the target a read of the text asks for.
func (o *Owner) UTF8() xproto.Atom { return o.utf8 }

// Serve reads the connection's events until it is closed: the owner's
// own (a paste's request, or the news that another program took the
// selection) it handles, the others it hands to other (nil: dropped).
func (o *Owner) Serve(other func(xgb.Event)) {
	for {
		ev, err := o.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		if !o.handle(ev) && other != nil && ev != nil {
			other(ev)
		}
	}
}

// handle serves ev if it concerns the selection's owner and reports
// whether it did.
func (o *Owner) handle(ev xgb.Event) bool {
	switch e := ev.(type) {
	case xproto.SelectionRequestEvent:
		o.answer(e)
	case xproto.SelectionClearEvent:
		o.mu.Lock()
		o.owning, o.data = false, nil
		o.mu.Unlock()
	default:
		return false
	}
	return true
}

// answer serves one paste: TARGETS, or the text as UTF8_STRING, STRING or
// TEXT; anything else is refused (property None), as ICCCM says.
func (o *Owner) answer(e xproto.SelectionRequestEvent) {
	o.mu.Lock()
	text, owning := o.data, o.owning
	o.mu.Unlock()
	prop := e.Property
	if prop == xproto.AtomNone {
		prop = e.Target // an obsolete client: ICCCM's fallback
	}
	switch {
	case !owning || e.Selection != o.clipboard:
		prop = xproto.AtomNone
	case e.Target == o.targets:
		var b []byte
		for _, a := range []xproto.Atom{o.targets, o.utf8, xproto.AtomString, o.text} {
			b = append(b, byte(a), byte(a>>8), byte(a>>16), byte(a>>24))
		}
		xproto.ChangeProperty(o.c, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, 4, b)
	case e.Target == o.utf8 || e.Target == xproto.AtomString || e.Target == o.text:
		typ := e.Target
		if typ == o.text {
			typ = o.utf8
		}
		xproto.ChangeProperty(o.c, xproto.PropModeReplace, e.Requestor, prop, typ, 8, uint32(len(text)), text)
	default:
		prop = xproto.AtomNone
	}
	ev := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection, Target: e.Target, Property: prop}
	xproto.SendEvent(o.c, false, e.Requestor, 0, string(ev.Bytes()))
}

// Set makes text the clipboard and takes the selection. It returns the X
// error when the server refused, and ErrTaken when another program owned
// the selection right after.
func (o *Owner) Set(text []byte) error {
	o.mu.Lock()
	o.data, o.owning = text, true
	o.mu.Unlock()
	if err := xproto.SetSelectionOwnerChecked(o.c, o.win, o.clipboard, xproto.TimeCurrentTime).Check(); err != nil {
		return err
	}
	r, err := xproto.GetSelectionOwner(o.c, o.clipboard).Reply()
	if err != nil {
		return err
	}
	if r.Owner != o.win {
		return ErrTaken
	}
	return nil
}
