package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// pointerByXdotool asks xdotool where the pointer is.
func pointerByXdotool(t *testing.T, srv *xvfbtest.Server) (int, int) {
	t.Helper()
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed (apt-get install xdotool)")
	}
	out, err := srv.Command("xdotool", "getmouselocation", "--shell").Output()
	if err != nil {
		t.Fatalf("xdotool: %v", err)
	}
	var x, y int
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "X="); ok {
			x, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(line, "Y="); ok {
			y, _ = strconv.Atoi(v)
		}
	}
	return x, y
}

// eventLog collects the lines of a running xev.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// buttonTimes returns the X server times (ms) of button's presses and
// releases, in order, from xev's three-line event reports.
func (l *eventLog) buttonTimes(button int) (presses, releases []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind, at := "", -1
	for _, s := range l.lines {
		switch {
		case strings.HasPrefix(s, "ButtonPress event"), strings.HasPrefix(s, "ButtonRelease event"):
			kind, at = s[:strings.Index(s, " ")], -1
		case strings.Contains(s, ", time "):
			f := strings.TrimPrefix(s[strings.Index(s, ", time ")+2:], "time ")
			at, _ = strconv.Atoi(f[:strings.Index(f, ",")])
		case strings.Contains(s, fmt.Sprintf("button %d,", button)) && at >= 0:
			if kind == "ButtonPress" {
				presses = append(presses, at)
			} else {
				releases = append(releases, at)
			}
		}
	}
	return presses, releases
}

// startXev opens xev's window at 300,300 and records its button events.
func startXev(t *testing.T, srv *xvfbtest.Server) *eventLog {
	t.Helper()
	return startXevWith(t, srv, "button")
}

// startXevKeys is startXev with key events too: with no window manager
// the focus follows the pointer, so keys reach xev while the pointer is
// on its window.
func startXevKeys(t *testing.T, srv *xvfbtest.Server) *eventLog {
	t.Helper()
	return startXevWith(t, srv, "button", "keyboard")
}

func startXevWith(t *testing.T, srv *xvfbtest.Server, masks ...string) *eventLog {
	t.Helper()
	if _, err := exec.LookPath("xev"); err != nil {
		t.Skip("xev is not installed (apt-get install x11-utils)")
	}
	args := []string{"-oL", "xev", "-geometry", "200x200+300+300"}
	for _, m := range masks {
		args = append(args, "-event", m)
	}
	cmd := srv.Command("stdbuf", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.mu.Lock()
			log.lines = append(log.lines, sc.Text())
			log.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	// xwininfo is the witness of where the window is.
	await(t, 10*time.Second, "the xev window", func() bool {
		out, err := srv.Command("xwininfo", "-name", "Event Tester").Output()
		return err == nil && bytes.Contains(out, []byte("Absolute upper-left X:  300")) && bytes.Contains(out, []byte("Map State: IsViewable"))
	})
	return log
}

func TestActPointer(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	ev := startXev(t, srv)

	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "move", X: ptr(123.0), Y: ptr(456.0)},
	}, Observe: ptr(false)})
	if err != nil || res.ActionsRun != 1 {
		t.Fatalf("move: %v, ran %d", err, res.ActionsRun)
	}
	if x, y := pointerByXdotool(t, srv); x != 123 || y != 456 {
		t.Errorf("pointer after move: got %d,%d, want 123,456", x, y)
	}

	res, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "click", X: ptr(350.0), Y: ptr(350.0)},
		{Kind: "click", X: ptr(360.0), Y: ptr(360.0), Button: "right", Double: true},
		{Kind: "scroll", Direction: "down", Amount: ptr(2.0)},
		{Kind: "down", Button: "middle"},
		{Kind: "up", Button: "middle", X: ptr(370.0), Y: ptr(380.0)},
	}, Observe: ptr(false)})
	if err != nil || res.ActionsRun != 5 {
		t.Fatalf("clicks: %v, ran %d", err, res.ActionsRun)
	}
	for _, c := range []struct {
		what string
		want int
	}{
		{"button 1,", 2}, // press and release
		{"button 3,", 4}, // double click
		{"button 5,", 4}, // two wheel steps
		{"button 2,", 2},
	} {
		await(t, 5*time.Second, fmt.Sprintf("%d xev lines with %q", c.want, c.what), func() bool { return ev.count(c.what) == c.want })
	}
	// The double click's second press reaches the server pressGap after
	// the first release, as a person's would, not in the same millisecond
	// (server times are whole milliseconds).
	if p, r := ev.buttonTimes(3); len(p) != 2 || len(r) != 2 {
		t.Errorf("the double click's times: presses %v, releases %v; want two of each", p, r)
	} else if gap := time.Duration(p[1]-r[0]) * time.Millisecond; gap < pressGap-time.Millisecond {
		t.Errorf("the double click's second press came %s after the first release (server times %v, %v); want at least %s", gap, p, r, pressGap)
	}
	if x, y := pointerByXdotool(t, srv); x != 370 || y != 380 {
		t.Errorf("pointer after up: got %d,%d, want 370,380", x, y)
	}
	assertKeymapRestored(t, s)
}

func TestActLeavesNothingPressed(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	// The batch holds a button and then fails on a bad key binding need? No:
	// it holds a button and is stopped by its context.
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	_, err := s.Act(ctx, ActRequest{Actions: []RawAction{
		{Kind: "down", X: ptr(500.0), Y: ptr(500.0)},
		{Kind: "key", Key: "shift+a"},
		{Kind: "key_down", Key: "ctrl"},
		{Kind: "key_down", Key: "f5", Modifiers: []string{"super"}},
		{Kind: "click", X: ptr(400.0), Y: ptr(400.0), Modifiers: []string{"alt"}},
		{Kind: "wait", MS: ptr(3000.0)},
	}, Observe: ptr(false)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	assertKeymapRestored(t, s)
	assertNoKeyDown(t, s)
}

func TestKillSwitch(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed")
	}
	errc := make(chan error, 1)
	resc := make(chan *ActResult, 1)
	go func() {
		res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
			{Kind: "move", X: ptr(600.0), Y: ptr(400.0)},
			{Kind: "wait", MS: ptr(4000.0)},
			{Kind: "click", X: ptr(601.0), Y: ptr(401.0)},
		}, Observe: ptr(false)})
		resc <- res
		errc <- err
	}()
	// Once the batch has moved the pointer, the person flings it into a corner.
	await(t, 10*time.Second, "the batch to move the pointer", func() bool {
		x, y := pointerByXdotool(t, srv)
		return x == 600 && y == 400
	})
	if out, err := srv.Command("xdotool", "mousemove", "0", "0").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	err := <-errc
	res := <-resc
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "action 2") || !strings.Contains(err.Error(), "kill switch") {
		t.Fatalf("got %v, want ErrRefused from the kill switch naming action 2", err)
	}
	if res.ActionsRun != 1 || res.Outcome != "refused" {
		t.Errorf("got %d actions run, outcome %q; want 1, refused", res.ActionsRun, res.Outcome)
	}
	if x, y := pointerByXdotool(t, srv); x != 0 || y != 0 {
		t.Errorf("the batch moved the pointer after the kill switch: %d,%d", x, y)
	}
	// While the pointer rests in the corner, batches are refused before
	// they start, and Info says so.
	_, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "move", X: ptr(5.0), Y: ptr(500.0)}}, Observe: ptr(false)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "before action 1") {
		t.Errorf("batch in corner: got %v, want ErrRefused before action 1", err)
	}
	if ks := s.Info(ctxT(t)).KillSwitch; !strings.HasPrefix(ks, "tripped") {
		t.Errorf("Info.KillSwitch: got %q, want tripped", ks)
	}
	// A batch may click into a corner itself.
	srv.Command("xdotool", "mousemove", "640", "400").Run()
	_, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "click", X: ptr(1279.0), Y: ptr(799.0)}, {Kind: "wait", MS: ptr(100.0)}, {Kind: "move", X: ptr(1275.0), Y: ptr(795.0)}}, Observe: ptr(false)})
	if err != nil {
		t.Errorf("batch clicking into a corner: %v", err)
	}
}

// TestKillSwitchDuringMoves: a run of moves does not wait for each
// kill-switch look's answer (lookWindow), yet a pointer the person pushes
// into a corner between a move and its look stops the batch within
// lookWindow moves, and before anything is pressed.
func TestKillSwitchDuringMoves(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	const pushedAt = 3
	s.testAfterMove = func(n int) {
		if n == pushedAt {
			if out, err := srv.Command("xdotool", "mousemove", "0", "0").CombinedOutput(); err != nil {
				t.Errorf("xdotool: %v %s", err, out)
			}
		}
	}
	var acts []RawAction
	for i := range MaxActions - 1 {
		acts = append(acts, RawAction{Kind: "move", X: ptr(float64(600 + i)), Y: ptr(400.0)})
	}
	acts = append(acts, RawAction{Kind: "click", X: ptr(700.0), Y: ptr(500.0)})
	res, err := s.Act(ctxT(t), ActRequest{Actions: acts, Observe: ptr(false)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "kill switch") || !strings.Contains(err.Error(), "(0,0)") {
		t.Fatalf("got %v, want ErrRefused from the kill switch at 0,0", err)
	}
	if res.ActionsRun < pushedAt || res.ActionsRun >= pushedAt+lookWindow || res.ActionsRun == len(acts) {
		t.Errorf("the batch ran %d actions, want %d to %d: the moves went on past the window, or the click ran", res.ActionsRun, pushedAt, pushedAt+lookWindow-1)
	}
	// Moves that put the pointer in a corner themselves, with looks in
	// flight, are the batch's own.
	s.testAfterMove = nil
	srv.Command("xdotool", "mousemove", "640", "400").Run()
	_, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "move", X: ptr(0.0), Y: ptr(0.0)}, {Kind: "move", X: ptr(1279.0), Y: ptr(0.0)}, {Kind: "move", X: ptr(1279.0), Y: ptr(799.0)},
		{Kind: "move", X: ptr(0.0), Y: ptr(799.0)}, {Kind: "move", X: ptr(640.0), Y: ptr(400.0)}, {Kind: "click", X: ptr(641.0), Y: ptr(401.0)},
	}, Observe: ptr(false)})
	if err != nil {
		t.Errorf("a batch moving through every corner itself: %v", err)
	}
}

func TestConsent(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, false)
	_, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait"}}})
	want := "acting is disabled; start agentd with --allow-act or set allow_act = true in config.toml"
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want ErrRefused with %q", err, want)
	}
	if _, err := s.Screenshot(ctxT(t), ScreenshotRequest{}); err != nil {
		t.Errorf("screenshots are always allowed: %v", err)
	}
	s.SetAllowAct(true)
	if _, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(1.0)}}, Observe: ptr(false)}); err != nil {
		t.Errorf("after SetAllowAct(true): %v", err)
	}
	if !s.Info(ctxT(t)).AllowAct {
		t.Error("Info.AllowAct: got false after SetAllowAct(true)")
	}
}

func TestLockTimeout(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	first := make(chan error, 1)
	go func() {
		_, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(1500.0)}}, Observe: ptr(false),
			Caller: Caller{PID: 4242, Executable: "/usr/bin/first", Session: "w1"}})
		first <- err
	}()
	await(t, 10*time.Second, "the first batch to hold the screen", func() bool {
		h := s.Info(ctxT(t)).Holder
		return h != nil && h.Caller.PID == 4242
	})
	_, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(1.0)}}, Observe: ptr(false), LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), "pid 4242") {
		t.Errorf("second batch: got %v, want ErrLockTimeout naming pid 4242", err)
	}
	// A third batch waits long enough and runs after the first.
	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(1.0)}}, Observe: ptr(false), LockTimeout: 10 * time.Second})
	if err != nil || res.ActionsRun != 1 {
		t.Errorf("third batch: %v", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first batch: %v", err)
	}
	if h := s.Info(ctxT(t)).Holder; h != nil {
		t.Errorf("holder after all batches: %+v", h)
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Screenshot(ctxT(t), ScreenshotRequest{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "DISPLAY is not set") {
		t.Errorf("screenshot without display: got %v", err)
	}
	s.SetAllowAct(true)
	_, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait"}}})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("act without display: got %v", err)
	}
	info := s.Info(ctxT(t))
	if info.Connected || !strings.Contains(info.Reason, "DISPLAY is not set") {
		t.Errorf("info: %+v", info)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if err := s.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}

	// A display with no server behind it.
	s2, _ := New(Options{Display: ":9999"})
	defer s2.Close()
	if _, err := s2.Screenshot(ctxT(t), ScreenshotRequest{}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no X server") {
		t.Errorf("screenshot on :9999: got %v", err)
	}
}

func TestReconnect(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	ctx, cancel := context.WithCancel(ctxT(t))
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	await(t, 10*time.Second, "Run to connect", func() bool { x, _ := s.current(); return x != nil })

	// A batch in flight when the server dies fails with ErrUnavailable.
	errc := make(chan error, 1)
	go func() {
		_, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(3000.0)}}, Observe: ptr(false)})
		errc <- err
	}()
	await(t, 10*time.Second, "the batch to start", func() bool { return s.Info(ctxT(t)).Holder != nil })
	srv.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("batch in flight: got %v, want ErrUnavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the batch in flight did not end after the server died")
	}
	await(t, 10*time.Second, "Run to notice", func() bool { x, _ := s.current(); return x == nil })
	if _, err := s.Screenshot(ctxT(t), ScreenshotRequest{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("screenshot while down: got %v, want ErrUnavailable", err)
	}
	srv.Restart(t)
	await(t, 10*time.Second, "Run to reconnect", func() bool { x, _ := s.current(); return x != nil })
	if _, err := s.Screenshot(ctxT(t), ScreenshotRequest{}); err != nil {
		t.Errorf("screenshot after reconnect: %v", err)
	}
}

func TestAuditAndObservation(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	dir := t.TempDir()
	path := dir + "/audit.jsonl"
	s, err := New(Options{Display: srv.Display, AllowAct: true, AuditPath: path, AuditMaxBytes: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := "hunter2 is my password"
	caller := Caller{PID: 7, UID: os.Getuid(), Executable: "/usr/bin/agent", Session: "w1"}
	req := ActRequest{Actions: []RawAction{
		{Kind: "click", X: ptr(10.0), Y: ptr(20.0)},
		{Kind: "type", Text: &secret},
		{Kind: "key", Key: "ctrl+shift+t"},
	}, Caller: caller, CallerKey: "conn-1", SettleMS: ptr(0.0)}
	res, err := s.Act(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Observation == nil || res.Observation.Unchanged || len(res.Observation.Data) == 0 {
		t.Fatalf("first observation: %+v", res.Observation)
	}
	// Same screen, same caller: unchanged and without data.
	wait := ActRequest{Actions: []RawAction{{Kind: "wait", MS: ptr(1.0)}}, Caller: caller, CallerKey: "conn-1", SettleMS: ptr(0.0)}
	res, err = s.Act(ctxT(t), wait)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Observation.Unchanged || res.Observation.Data != nil {
		t.Errorf("second observation: unchanged %v, %d bytes; want unchanged without data", res.Observation.Unchanged, len(res.Observation.Data))
	}
	// Another caller gets the picture.
	wait.CallerKey = "conn-2"
	res, _ = s.Act(ctxT(t), wait)
	if res.Observation.Unchanged {
		t.Error("another caller's first observation is marked unchanged")
	}
	s.SetAllowAct(false)
	s.Act(ctxT(t), wait)

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path + ".1")
	all := string(old) + string(b)
	if strings.Contains(all, "hunter2") {
		t.Fatal("the audit log holds typed text")
	}
	if len(old) == 0 {
		t.Error("the audit log was not rotated at 700 bytes")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("audit mode: got %v, want 0600", st.Mode().Perm())
	}
	var recs []AuditRecord
	dec := json.NewDecoder(strings.NewReader(all))
	for {
		var r AuditRecord
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 4 {
		t.Fatalf("got %d audit records, want 4", len(recs))
	}
	r := recs[0]
	if r.Caller != caller || r.Outcome != "ok" || r.Ran != 3 || len(r.Actions) != 3 ||
		*r.Actions[0].X != 10 || r.Actions[1].Chars != len(secret) || r.Actions[2].Key != "t" ||
		strings.Join(r.Actions[2].Modifiers, "+") != "ctrl+shift" {
		t.Errorf("first record: %+v", r)
	}
	if recs[3].Outcome != "refused" {
		t.Errorf("last record outcome: got %q, want refused", recs[3].Outcome)
	}
}

func TestFocus(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	startXev(t, srv)
	if _, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "focus", Application: "event TESTER"}}, Observe: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	x, _ := s.conn()
	if _, title := x.activeWindow(); title != "Event Tester" {
		t.Errorf("active window: got %q, want Event Tester", title)
	}
	shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{MaxWidth: ptr(100)})
	if err != nil || shot.ActiveWindow != "Event Tester" {
		t.Errorf("shot active window: got %q, %v", shot.ActiveWindow, err)
	}
	_, err = s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "focus", Application: "no-such-program-xyz"}}, Observe: ptr(false)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no window matches") {
		t.Errorf("focus on nothing: got %v", err)
	}
}

// TestAuditLogRefusesALink plants a symbolic link where the audit log goes:
// the screen refuses to open it rather than write the record elsewhere.
func TestAuditLogRefusesALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.jsonl")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if s, err := New(Options{AuditPath: path}); err == nil {
		s.Close()
		t.Fatal("New accepted an audit log that is a symbolic link")
	}
}

// TestAMoveCostsOneRoundTrip: each move of a batch costs one X round trip,
// the kill switch's pointer query, which also settles the move before it;
// the batch adds two (the screen's size before, a sync after). A sync per
// action would double what 96 moves take.
func TestAMoveCostsOneRoundTrip(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	var acts []RawAction
	for i := range 24 {
		acts = append(acts, RawAction{Kind: "move", X: ptr(float64(100 + 10*i)), Y: ptr(float64(100 + 5*i))})
	}
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	before := x.sock.roundTrips()
	if _, err := s.Act(ctxT(t), ActRequest{Actions: acts, Observe: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if got := x.sock.roundTrips() - before; got > 24+2 {
		t.Errorf("a batch of 24 moves made %d X round trips, want at most 26 (one per move, two for the batch)", got)
	}
	if x, y := pointerByXdotool(t, srv); x != 330 || y != 215 {
		t.Errorf("pointer after the batch: got %d,%d, want 330,215", x, y)
	}
}

// TestAHeldMoveIsNotLate: a move goes out with the kill switch's query
// before the next action (xsock.hold), so a move followed by a wait has
// moved the pointer while the wait runs, not after it; and a batch
// cancelled during that wait leaves nothing held back.
func TestAHeldMoveIsNotLate(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Act(ctx, ActRequest{Actions: []RawAction{
			{Kind: "move", X: ptr(211.0), Y: ptr(307.0)},
			// Waits longer than any look below, ended by the cancel.
			{Kind: "wait", MS: ptr(5000.0)}, {Kind: "wait", MS: ptr(5000.0)}, {Kind: "wait", MS: ptr(5000.0)},
		}, Observe: ptr(false)})
		done <- err
	}()
	await(t, 5*time.Second, "the pointer at 211,307 during the wait", func() bool {
		x, y := pointerByXdotool(t, srv)
		return x == 211 && y == 307
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled batch ended with %v, want context.Canceled", err)
	}
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	x.sock.mu.Lock()
	held, holding := len(x.sock.held), x.sock.holdNext
	x.sock.mu.Unlock()
	if held > 0 || holding {
		t.Errorf("after the batch: %d bytes held back, a hold pending %v; want none", held, holding)
	}
	// The next batch's first request is not held either.
	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "move", X: ptr(5.0), Y: ptr(600.0)}}, Observe: ptr(false)})
	if err != nil || res.ActionsRun != 1 {
		t.Fatalf("next batch: %v", err)
	}
	if x, y := pointerByXdotool(t, srv); x != 5 || y != 600 {
		t.Errorf("pointer after the next batch: got %d,%d, want 5,600", x, y)
	}
}
