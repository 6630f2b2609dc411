package capture

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/xgb/xproto"
)

func TestParseBatchHeldKeys(t *testing.T) {
	raw, _ := parseJSON(t, `[{"kind":"key_down","key":"Shift","modifiers":["shift","ctrl"]},{"kind":"key_down","key":"a"},
		{"kind":"click","x":1,"y":1,"modifiers":["cmd","shift","shift"]},{"kind":"scroll","direction":"up","modifiers":["control"]},
		{"kind":"key_up","key":"a"},{"kind":"key_up","key":"shift","modifiers":["ctrl"]}]`)
	b, err := ParseBatch(raw, nil, nil, testScreen)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range b.Actions {
		got = append(got, a.Kind+":"+a.Key+":"+strings.Join(a.Modifiers, "+"))
	}
	want := "key_down:shift:ctrl key_down:a: click::shift+super scroll::ctrl key_up:a: key_up:shift:ctrl"
	if strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
	if b.Actions[0].Keysym != ksShiftL || b.Actions[1].Keysym != 'a' {
		t.Errorf("keysyms %#x %#x, want Shift_L and a", b.Actions[0].Keysym, b.Actions[1].Keysym)
	}
}

// xevEvent is one key or button event xev printed: its type, the server's
// time, the state mask and the keysym name or button number.
type xevEvent struct {
	typ   string
	time  int64
	state string
	what  string
}

var (
	xevHead   = regexp.MustCompile(`^(KeyPress|KeyRelease|ButtonPress|ButtonRelease) event`)
	xevTime   = regexp.MustCompile(`time (\d+),`)
	xevState  = regexp.MustCompile(`state (0x[0-9a-f]+), (?:keycode \d+ \(keysym 0x[0-9a-f]+, (\w+)\)|button (\d+))`)
	xevEvents = func(l *eventLog) []xevEvent {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []xevEvent
		var cur *xevEvent
		for _, s := range l.lines {
			if m := xevHead.FindStringSubmatch(s); m != nil {
				out = append(out, xevEvent{typ: m[1]})
				cur = &out[len(out)-1]
				continue
			}
			if cur == nil {
				continue
			}
			if m := xevTime.FindStringSubmatch(s); m != nil {
				cur.time, _ = strconv.ParseInt(m[1], 10, 64)
			}
			if m := xevState.FindStringSubmatch(s); m != nil {
				cur.state, cur.what = m[1], m[2]+m[3]
				cur = nil
			}
		}
		return out
	}
)

// find returns the events of a type and key or button, in order.
func find(evs []xevEvent, typ, what string) []xevEvent {
	var out []xevEvent
	for _, e := range evs {
		if e.typ == typ && e.what == what {
			out = append(out, e)
		}
	}
	return out
}

// TestActModifiersAndHeldKeys: a shift+click and a ctrl+scroll arrive with
// the modifier's state; a key_down holds shift for the wait after it (the X
// server's own timestamps say how long) and a click in between carries it;
// key_up lets go, and the next click has no modifier.
func TestActModifiersAndHeldKeys(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	ev := startXevKeys(t, srv)

	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "click", X: ptr(350.0), Y: ptr(350.0), Modifiers: []string{"shift"}},
		{Kind: "scroll", Direction: "up", Amount: ptr(1.0), Modifiers: []string{"ctrl"}},
		{Kind: "key_down", Key: "shift"},
		{Kind: "wait", MS: ptr(800.0)},
		{Kind: "click", X: ptr(351.0), Y: ptr(351.0)},
		{Kind: "wait", MS: ptr(200.0)},
		{Kind: "key_up", Key: "shift"},
		{Kind: "click", X: ptr(352.0), Y: ptr(352.0)},
		{Kind: "key_down", Key: "a"},
		{Kind: "wait", MS: ptr(300.0)},
		{Kind: "key_up", Key: "a"},
	}, Observe: ptr(false)})
	if err != nil || res.ActionsRun != 11 {
		t.Fatalf("batch: %v, ran %v", err, res)
	}
	var evs []xevEvent
	await(t, 10*time.Second, "xev to report 4 button presses and the key a released", func() bool {
		evs = xevEvents(ev)
		return len(find(evs, "ButtonPress", "1")) == 3 && len(find(evs, "ButtonPress", "4")) == 1 && len(find(evs, "KeyRelease", "a")) > 0
	})
	clicks := find(evs, "ButtonPress", "1")
	if clicks[0].state != "0x1" || clicks[1].state != "0x1" || clicks[2].state != "0x0" {
		t.Errorf("button 1 press states %s, %s, %s; want 0x1 (shift+click), 0x1 (shift held by key_down), 0x0 (after key_up)", clicks[0].state, clicks[1].state, clicks[2].state)
	}
	if w := find(evs, "ButtonPress", "4"); w[0].state != "0x4" {
		t.Errorf("wheel press state %s, want 0x4 (ctrl)", w[0].state)
	}
	downs, ups := find(evs, "KeyPress", "Shift_L"), find(evs, "KeyRelease", "Shift_L")
	if len(downs) != 2 || len(ups) != 2 {
		t.Fatalf("Shift_L pressed %d times and released %d times, want 2 and 2 (click modifier, key_down): %+v", len(downs), len(ups), evs)
	}
	if held := ups[1].time - downs[1].time; held < 1000 {
		t.Errorf("key_down held shift for %d ms by the X server's clock, want at least the 1000 ms of waits", held)
	}
	// Auto-repeat may add presses while a is held; the first event is a
	// press and the last a release.
	var a []xevEvent
	for _, e := range evs {
		if e.what == "a" {
			a = append(a, e)
		}
	}
	if a[0].typ != "KeyPress" || a[len(a)-1].typ != "KeyRelease" || a[len(a)-1].time-a[0].time < 300 {
		t.Errorf("key a: %+v; want a press, then a release at least 300 ms later", a)
	}
	assertKeymapRestored(t, s)
}

// TestActHeldKeysReleasedOnStop: what key_down holds is let go when the
// batch is cancelled, and when the kill switch stops it.
func TestActHeldKeysReleasedOnStop(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	cerr := make(chan error, 1)
	go func() {
		_, err := s.Act(ctx, ActRequest{Actions: []RawAction{
			{Kind: "key_down", Key: "ctrl"},
			{Kind: "key_down", Key: "z", Modifiers: []string{"alt"}},
			{Kind: "key_down", Key: "😀"},
			{Kind: "down", X: ptr(500.0), Y: ptr(500.0), Modifiers: []string{"shift"}},
			{Kind: "wait", MS: ptr(4000.0)},
		}, Observe: ptr(false)})
		cerr <- err
	}()
	// Cancelled once it holds everything (button 1 is the last thing down).
	await(t, 10*time.Second, "the batch to hold ctrl, alt and button 1", func() bool {
		m := mask(t, s)
		return m&xproto.ModMaskControl != 0 && m&xproto.ModMask1 != 0 && m&xproto.KeyButMaskButton1 != 0
	})
	cancel()
	err := <-cerr
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	assertKeymapRestored(t, s)
	assertNoKeyDown(t, s)

	// The kill switch: the person flings the pointer into a corner while
	// the batch holds shift and a.
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
			{Kind: "move", X: ptr(600.0), Y: ptr(400.0)},
			{Kind: "key_down", Key: "a", Modifiers: []string{"shift"}},
			{Kind: "wait", MS: ptr(4000.0)},
		}, Observe: ptr(false)})
		errc <- err
	}()
	await(t, 10*time.Second, "the batch to hold shift", func() bool {
		out, err := srv.Command("xdotool", "getmouselocation").Output()
		return err == nil && strings.Contains(string(out), "x:600 y:400") && mask(t, s)&xproto.ModMaskShift != 0
	})
	if out, err := srv.Command("xdotool", "mousemove", "0", "0").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	if err := <-errc; !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "kill switch") {
		t.Fatalf("got %v, want the kill switch's ErrRefused", err)
	}
	assertKeymapRestored(t, s)
	assertNoKeyDown(t, s)
}

// mask asks the X server for the modifier and button state (0 when the
// query fails: the caller polls).
func mask(t *testing.T, s *Screen) uint16 {
	t.Helper()
	x, err := s.conn()
	if err != nil {
		return 0
	}
	r, err := xproto.QueryPointer(x.c, x.root).Reply()
	if err != nil {
		return 0
	}
	return r.Mask
}

// assertNoKeyDown asks the X server which keys are down: none may be.
func assertNoKeyDown(t *testing.T, s *Screen) {
	t.Helper()
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	km, err := xproto.QueryKeymap(x.c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range km.Keys {
		for bit := range 8 {
			if b&(1<<bit) != 0 {
				t.Errorf("keycode %d is still down after the batch", i*8+bit)
			}
		}
	}
}
