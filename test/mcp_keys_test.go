package test

import (
	"bufio"
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// xevKeys runs xev at 300,300 reporting key and button events; with no
// window manager the focus follows the pointer, so keys reach it while the
// pointer is on its window. It returns a function giving the events so far.
func xevKeys(t *testing.T, srv *xvfbtest.Server) func() []xevEvent {
	t.Helper()
	if _, err := exec.LookPath("xev"); err != nil {
		t.Skip("xev is not installed (apt-get install x11-utils)")
	}
	cmd := srv.Command("stdbuf", "-oL", "xev", "-geometry", "200x200+300+300", "-event", "button", "-event", "keyboard")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	await(t, 10*time.Second, "the xev window", func() bool {
		out, err := srv.Command("xwininfo", "-name", "Event Tester").Output()
		return err == nil && bytes.Contains(out, []byte("Absolute upper-left X:  300")) && bytes.Contains(out, []byte("Map State: IsViewable"))
	})
	return func() []xevEvent {
		mu.Lock()
		defer mu.Unlock()
		return parseXev(lines)
	}
}

// xevEvent is one key or button event as xev printed it: its type, the X
// server's time, the state mask, the keysym name or button number.
type xevEvent struct {
	typ, state, what string
	time             int64
}

var (
	xevHead  = regexp.MustCompile(`^(KeyPress|KeyRelease|ButtonPress|ButtonRelease) event`)
	xevTime  = regexp.MustCompile(`time (\d+),`)
	xevState = regexp.MustCompile(`state (0x[0-9a-f]+), (?:keycode \d+ \(keysym 0x[0-9a-f]+, (\w+)\)|button (\d+))`)
)

func parseXev(lines []string) []xevEvent {
	var out []xevEvent
	cur := -1
	for _, s := range lines {
		if m := xevHead.FindStringSubmatch(s); m != nil {
			out = append(out, xevEvent{typ: m[1]})
			cur = len(out) - 1
			continue
		}
		if cur < 0 {
			continue
		}
		if m := xevTime.FindStringSubmatch(s); m != nil {
			out[cur].time, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if m := xevState.FindStringSubmatch(s); m != nil {
			out[cur].state, out[cur].what = m[1], m[2]+m[3]
			cur = -1
		}
	}
	return out
}

func xevFind(evs []xevEvent, typ, what string) []xevEvent {
	var out []xevEvent
	for _, e := range evs {
		if e.typ == typ && e.what == what {
			out = append(out, e)
		}
	}
	return out
}

// TestMCPHoldKeyAndModifiers: through agentctl mcp, a click with shift
// held arrives with the shift state, a hold_key holds its key for its
// duration by the X server's clock and then lets go, and a left_click_drag
// with ctrl presses with ctrl held; bad hold_keys are tool errors naming
// the fix and the model's own action numbers.
func TestMCPHoldKeyAndModifiers(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768}) // the image is the screen: scale 1
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	m := h.startMCP(t, true)
	events := xevKeys(t, srv)
	m.ok("screenshot", nil)

	m.ok("act", map[string]any{"observe": false, "actions": []map[string]any{
		{"kind": "click", "x": 350, "y": 350, "modifiers": []string{"shift"}},
		{"kind": "hold_key", "key": "shift", "duration": 0.8},
		{"kind": "left_click_drag", "x": 320, "y": 320, "to_x": 380, "to_y": 380, "modifiers": []string{"ctrl"}},
		{"kind": "click", "x": 352, "y": 352},
	}})
	var evs []xevEvent
	await(t, 10*time.Second, "xev to see three button presses", func() bool {
		evs = events()
		return len(xevFind(evs, "ButtonPress", "1")) == 3
	})
	clicks := xevFind(evs, "ButtonPress", "1")
	if clicks[0].state != "0x1" || clicks[1].state != "0x4" || clicks[2].state != "0x0" {
		t.Errorf("button presses' states %s, %s, %s; want 0x1 (shift+click), 0x4 (ctrl drag), 0x0 (plain click)", clicks[0].state, clicks[1].state, clicks[2].state)
	}
	downs, ups := xevFind(evs, "KeyPress", "Shift_L"), xevFind(evs, "KeyRelease", "Shift_L")
	if len(downs) != 2 || len(ups) != 2 {
		t.Fatalf("Shift_L pressed %d and released %d times, want 2 and 2 (the click's modifier, hold_key): %+v", len(downs), len(ups), evs)
	}
	if held := ups[1].time - downs[1].time; held < 800 {
		t.Errorf("hold_key held shift for %d ms by the X server's clock, want at least 800", held)
	}
	if ctrlUp := xevFind(evs, "KeyRelease", "Control_L"); len(ctrlUp) != 1 || ctrlUp[0].time > clicks[2].time {
		t.Errorf("ctrl released %+v, want once, before the last click at %d", ctrlUp, clicks[2].time)
	}

	// Bad hold_keys are tool errors naming the fix; the daemon's action
	// numbers (a triple_click is two of them) are rewritten to the model's.
	act := func(acts ...map[string]any) map[string]any { return map[string]any{"observe": false, "actions": acts} }
	m.refused("act", act(map[string]any{"kind": "triple_click", "x": 10, "y": 10}, map[string]any{"kind": "hold_key", "key": "hyperdrive", "duration": 1}),
		"invalid_params", `action 2 (hold_key): unknown key "hyperdrive"`, "use a name such as enter")
	m.badArgs("act", act(map[string]any{"kind": "wait", "ms": 5000}, map[string]any{"kind": "hold_key", "key": "a", "duration": 26}),
		"action 2 (hold_key)", "31 s", "time budget of 30 s")
	m.badArgs("act", act(map[string]any{"kind": "hold_key", "key": "a"}), "action 1 (hold_key): needs duration")
	m.badArgs("act", act(map[string]any{"kind": "hold_key", "duration": 1}), "action 1 (hold_key): needs key")
	m.badArgs("act", act(map[string]any{"kind": "click", "x": 1, "y": 1, "duration": 1}), "duration belongs to hold_key")
	m.refused("act", act(map[string]any{"kind": "key_up", "key": "shift"}), "invalid_params", "action 1 (key_up): shift is not held")
	m.ok("screen", nil) // the server is up
}
