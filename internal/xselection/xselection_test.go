package xselection

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"

	"github.com/agentd/agentd/internal/testhome"
	"github.com/agentd/agentd/internal/xvfbtest"
)

func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }

// client is one X connection with an input-only window.
type client struct {
	c      *xgb.Conn
	win    xproto.Window
	events chan xgb.Event // what read saw
	done   chan struct{}  // closed when its event loop ends
}

// connect opens a client on display; run starts its event loop, which ends
// (and then the connection) in t.Cleanup, before the server does (xgb
// panics when the server goes first).
func connect(t *testing.T, display string, run func(cl *client)) *client {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("connect to %s: %v", display, err)
	}
	cl := &client{c: c, events: make(chan xgb.Event, 16), done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		run(cl)
	}()
	t.Cleanup(func() {
		c.Close()
		<-cl.done
	})
	root := xproto.Setup(c).DefaultScreen(c).Root
	if cl.win, err = xproto.NewWindowId(c); err != nil {
		t.Fatal(err)
	}
	if err := xproto.CreateWindowChecked(c, 0, cl.win, root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0, 0, nil).Check(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// read is a plain event loop: every event onto cl.events.
func read(cl *client) {
	for {
		ev, err := cl.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		if ev != nil {
			select {
			case cl.events <- ev:
			default:
			}
		}
	}
}

// owner is an Owner's client: its loop is the owner's Serve, started once
// the test has made the Owner.
func owner(t *testing.T, display string) (*client, *Owner) {
	t.Helper()
	made := make(chan *Owner, 1)
	cl := connect(t, display, func(cl *client) {
		if o := <-made; o != nil {
			o.Serve(nil)
		}
	})
	o, err := New(cl.c, cl.win)
	made <- o
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return cl, o
}

// paste asks the clipboard's owner for target and returns the property's
// type and bytes; ok is false when the owner refused (property None).
func (cl *client) paste(t *testing.T, target string) (typ xproto.Atom, value []byte, ok bool) {
	t.Helper()
	a, err := Atoms(cl.c, "CLIPBOARD", target, "XSELECTION_TEST")
	if err != nil {
		t.Fatal(err)
	}
	xproto.ConvertSelection(cl.c, cl.win, a[0], a[1], a[2], xproto.TimeCurrentTime)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-cl.events:
			e, isNotify := ev.(xproto.SelectionNotifyEvent)
			if !isNotify {
				continue
			}
			if e.Property == xproto.AtomNone {
				return 0, nil, false
			}
			p, err := xproto.GetProperty(cl.c, true, cl.win, a[2], xproto.GetPropertyTypeAny, 0, 1<<16).Reply()
			if err != nil {
				t.Fatal(err)
			}
			return p.Type, p.Value, true
		case <-deadline:
			t.Fatalf("no answer to a paste of %s within 5s", target)
		}
	}
}

// TestOwnerServesPastesUntilAnotherTakesIt: a paste receives the text as
// UTF8_STRING, STRING or TEXT (as UTF8_STRING), TARGETS lists those, an
// unknown target is refused, and once another program takes the selection
// the owner's text is gone.
func TestOwnerServesPastesUntilAnotherTakesIt(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{})
	_, o := owner(t, srv.Display)
	reader := connect(t, srv.Display, read)

	if _, _, ok := reader.paste(t, "UTF8_STRING"); ok {
		t.Errorf("a paste before any Set was answered; want no owner")
	}
	text := "copied ünïcödé 漢字"
	if err := o.Set([]byte(text)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	atoms, err := Atoms(reader.c, "UTF8_STRING", "TEXT", "TARGETS")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target  string
		wantTyp xproto.Atom
	}{{"UTF8_STRING", atoms[0]}, {"STRING", xproto.AtomString}, {"TEXT", atoms[0]}} {
		typ, v, ok := reader.paste(t, c.target)
		if !ok || typ != c.wantTyp || string(v) != text {
			t.Errorf("paste as %s: type %d %q (answered %v), want type %d %q", c.target, typ, v, ok, c.wantTyp, text)
		}
	}
	typ, v, ok := reader.paste(t, "TARGETS")
	want := map[xproto.Atom]bool{atoms[2]: true, atoms[0]: true, xproto.AtomString: true, atoms[1]: true}
	if !ok || typ != xproto.AtomAtom || len(v) != 16 {
		t.Fatalf("TARGETS: type %d, %d bytes (answered %v), want 4 atoms", typ, len(v), ok)
	}
	for i := 0; i < 16; i += 4 {
		a := xproto.Atom(uint32(v[i]) | uint32(v[i+1])<<8 | uint32(v[i+2])<<16 | uint32(v[i+3])<<24)
		if !want[a] {
			t.Errorf("TARGETS lists atom %d, want only TARGETS, UTF8_STRING, STRING and TEXT", a)
		}
	}
	if _, _, ok := reader.paste(t, "image/png"); ok {
		t.Errorf("a paste as image/png was answered; want it refused")
	}

	// Another program takes the selection: the owner hears of it and
	// answers no more.
	clip, err := Atoms(reader.c, "CLIPBOARD")
	if err != nil {
		t.Fatal(err)
	}
	if err := xproto.SetSelectionOwnerChecked(reader.c, reader.win, clip[0], xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		o.mu.Lock()
		owning := o.owning
		o.mu.Unlock()
		if !owning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the owner still owns the selection 5s after another program took it")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Its own window no longer owns it; Set takes it back.
	if err := o.Set([]byte("again")); err != nil {
		t.Fatalf("Set after losing the selection: %v", err)
	}
	if _, v, ok := reader.paste(t, "UTF8_STRING"); !ok || string(v) != "again" {
		t.Errorf("paste after Set again: %q (answered %v), want %q", v, ok, "again")
	}
}

// TestSetReportsAServerRefusal: a Set on a window the server does not know
// returns the X error, not ErrTaken.
func TestSetReportsAServerRefusal(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{})
	_, o := owner(t, srv.Display)
	o.win += 1000
	if err := o.Set([]byte("x")); err == nil || errors.Is(err, ErrTaken) {
		t.Errorf("Set with a window that does not exist: %v, want the server's error", err)
	}
}

// TestCloseEndsTheEventLoopDuringEvents: closing a connection whose event
// loop is busy with a stream of events ends the loop, every time, and a
// checked request still waiting is answered with an error, not left
// waiting. (xgb's Close could hang both for ever when its reader saw the
// close before the round trip Close had sent; CI's xselection tests hung
// 15 minutes on it. third_party/README.md says what was patched.)
func TestCloseEndsTheEventLoopDuringEvents(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{})
	sender := connect(t, srv.Display, read)
	prop, err := Atoms(sender.c, "XSELECTION_TEST_STREAM")
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 40; round++ {
		c, err := xgb.NewConnDisplay(srv.Display)
		if err != nil {
			t.Fatalf("connect to %s: %v", srv.Display, err)
		}
		win, err := xproto.NewWindowId(c)
		if err != nil {
			t.Fatal(err)
		}
		root := xproto.Setup(c).DefaultScreen(c).Root
		if err := xproto.CreateWindowChecked(c, 0, win, root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0,
			xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
			t.Fatal(err)
		}
		// The event loop, and a stream of property changes for it to read.
		loopDone := make(chan struct{})
		seen := make(chan struct{}, 1)
		go func() {
			defer close(loopDone)
			for {
				ev, err := c.WaitForEvent()
				if ev == nil && err == nil {
					return
				}
				select {
				case seen <- struct{}{}:
				default:
				}
			}
		}()
		stop := make(chan struct{})
		streamDone := make(chan struct{})
		go func() {
			defer close(streamDone)
			for {
				select {
				case <-stop:
					return
				default:
				}
				xproto.ChangeProperty(sender.c, xproto.PropModeReplace, win, prop[0], xproto.AtomString, 8, 1, []byte("x"))
				xproto.GetInputFocus(sender.c).Reply() // paces the stream to the server
			}
		}()
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			t.Fatal("no event of the stream reached the connection within 5s")
		}
		// A checked request in flight as the connection closes.
		waiting := make(chan error, 1)
		go func() {
			_, err := xproto.GetInputFocus(c).Reply()
			waiting <- err
		}()
		c.Close()
		select {
		case <-loopDone:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the event loop still runs 5s after Close", round)
		}
		select {
		case <-waiting:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a request made as the connection closed still waits 5s after Close", round)
		}
		close(stop)
		<-streamDone
	}
}
