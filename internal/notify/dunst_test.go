package notify

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// approval is the notification of a permission prompt, as the daemon will
// send it.
func approval(summary string) Notification {
	return Notification{
		App:     "agentd",
		Summary: summary,
		Body:    "wants to run: rm -rf build && make",
		Actions: []Action{{"approve", "Approve"}, {"deny", "Deny"}, {"open", "Open"}},
		Urgency: Critical,
		Timeout: NeverExpire,
	}
}

func TestNoSessionBusIsAClearError(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	_, err := New(Options{})
	if !errors.Is(err, ErrNoSessionBus) || !strings.Contains(err.Error(), "DBUS_SESSION_BUS_ADDRESS") {
		t.Fatalf("New with no $DBUS_SESSION_BUS_ADDRESS: got %v, want ErrNoSessionBus naming the variable", err)
	}

	dir := t.TempDir()
	n := newNotifier(t, "unix:path="+dir+"/no-bus", 0)
	_, err = n.Notify(context.Background(), approval("x"))
	if !errors.Is(err, ErrNoSessionBus) || !strings.Contains(err.Error(), "nothing answers") {
		t.Fatalf("Notify on a bus address with no bus: got %v, want ErrNoSessionBus saying nothing answers", err)
	}
}

func TestNoServerOnTheBusIsAClearError(t *testing.T) {
	t.Parallel()
	b := startBus(t)
	n := newNotifier(t, b.addr, 0)
	_, err := n.Notify(context.Background(), approval("x"))
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "dunst") {
		t.Fatalf("Notify on a bus with no notification server: got %v, want ErrNoServer suggesting one", err)
	}
	if _, err := n.Capabilities(context.Background()); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Capabilities with no server: got %v, want ErrNoServer", err)
	}
}

func TestCapabilitiesAndServerInformationOfDunst(t *testing.T) {
	t.Parallel()
	d := startDesk(t)
	n := newNotifier(t, d.addr, 0)
	caps, err := n.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"actions", "body", "body-markup"} {
		if !slices.Contains(caps, c) {
			t.Errorf("capabilities %q lack %q", caps, c)
		}
	}
	info, err := n.ServerInformation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "dunst" || info.SpecVersion == "" {
		t.Errorf("server information %+v, want dunst with a spec version", info)
	}
}

func TestActionsAreShownAndThePickedOneReachesTheSubscriber(t *testing.T) {
	t.Parallel()
	d := startDesk(t)
	n := newNotifier(t, d.addr, 0)
	for _, tc := range []struct {
		key      string
		dunstctl []string
	}{{"approve", []string{"context"}}, {"deny", []string{"action", "0"}}, {"open", []string{"context"}}} {
		key := tc.key
		id := notify(t, n, approval("session build: "+key))
		await(t, "the notification to be displayed", func() bool { return d.displayed(t) == 1 })

		d.pick(t, key, tc.dunstctl...)
		ev := nextEvent(t, n, "ActionInvoked "+key, func(ev Event) bool { return ev.Kind == ActionInvoked })
		if ev.ID != id || ev.ActionKey != key {
			t.Fatalf("picked %q of notification %d: got %+v", key, id, ev)
		}
		menu, err := os.ReadFile(d.menu)
		if err != nil {
			t.Fatal(err)
		}
		for _, label := range []string{"Approve", "Deny", "Open"} {
			if !strings.Contains(string(menu), "#"+label+" (session build: "+key+")") {
				t.Errorf("dunst's menu lacks %s:\n%s", label, menu)
			}
		}

		if err := n.Close(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		nextEvent(t, n, "Closed", func(ev Event) bool { return ev.Kind == Closed && ev.ID == id })
		await(t, "no notification displayed", func() bool { return d.displayed(t) == 0 })
	}
}

func TestCloseRemovesTheNotificationAndReportsIt(t *testing.T) {
	t.Parallel()
	d := startDesk(t)
	n := newNotifier(t, d.addr, 0)
	keep := notify(t, n, Notification{Summary: "stays", Timeout: NeverExpire})
	id := notify(t, n, approval("goes"))
	await(t, "two notifications displayed", func() bool { return d.displayed(t) == 2 })

	if err := n.Close(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, n, "Closed", func(ev Event) bool { return ev.Kind == Closed })
	if ev.ID != id || ev.Reason != ByCall {
		t.Fatalf("after Close(%d): got %+v, want Closed of %d by call", id, ev, id)
	}
	await(t, "one notification displayed", func() bool { return d.displayed(t) == 1 })
	if err := n.Close(context.Background(), id); err != nil {
		t.Fatalf("closing %d a second time: %v, want no error", id, err)
	}
	if got := d.displayed(t); got != 1 {
		t.Fatalf("closing a closed notification changed the displayed count to %d", got)
	}
	_ = keep
}

func TestReplacesUpdatesInPlace(t *testing.T) {
	t.Parallel()
	d := startDesk(t)
	n := newNotifier(t, d.addr, 0)
	id := notify(t, n, Notification{Summary: "first", Body: "working", Timeout: NeverExpire})
	await(t, "the notification displayed", func() bool { return d.displayed(t) == 1 })
	again := notify(t, n, Notification{Summary: "second", Body: "a < b && c > d", Replaces: id, Timeout: NeverExpire})
	if again != id {
		t.Fatalf("Notify with Replaces %d returned id %d", id, again)
	}
	if got := d.displayed(t); got != 1 {
		t.Fatalf("after replacing: %d notifications displayed, want 1", got)
	}
	if err := n.Close(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	await(t, "the notification in dunst's history", func() bool { return len(d.history(t)) > 0 })
	h := d.history(t)
	if len(h) != 1 || h[0].ID != int(id) || h[0].Summary != "second" {
		t.Fatalf("history %+v, want one notification %d with the summary \"second\"", h, id)
	}
	// The body went escaped, and dunst, which reads markup (markup =
	// full), put it into the text it draws as it is: Pango draws the
	// entities as the characters given.
	const escaped = "a &lt; b &amp;&amp; c &gt; d"
	if h[0].Body != escaped || !strings.HasSuffix(h[0].Message, "\n"+escaped) {
		t.Fatalf("history body %q, message %q: want the body escaped, as %q", h[0].Body, h[0].Message, escaped)
	}
}

// slack is how late past its bound a timed-out call may return on a
// loaded machine: a timer's wake-up and the error's way back.
const slack = 300 * time.Millisecond

func TestHungServerTimesOutWithinTheBound(t *testing.T) {
	t.Parallel()
	d := startDesk(t)
	const bound = 300 * time.Millisecond
	n := newNotifier(t, d.addr, bound)
	notify(t, n, Notification{Summary: "before"})

	d.signal(t, syscall.SIGSTOP)
	defer d.signal(t, syscall.SIGCONT)
	for _, call := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"Notify", func(ctx context.Context) error { _, err := n.Notify(ctx, approval("hung")); return err }},
		{"Close", func(ctx context.Context) error { return n.Close(ctx, 1) }},
		{"Capabilities", func(ctx context.Context) error { _, err := n.Capabilities(ctx); return err }},
	} {
		start := time.Now()
		err := call.do(context.Background())
		took := time.Since(start)
		if !isTimeout(err) {
			t.Fatalf("%s to a stopped server: got %v, want ErrTimeout", call.name, err)
		}
		if took < bound || took > bound+slack {
			t.Fatalf("%s to a stopped server returned after %v, want %v (+%v)", call.name, took, bound, slack)
		}
		t.Logf("%s to a stopped server: ErrTimeout after %v", call.name, took)
	}
	// The caller's own deadline, shorter, wins.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := n.Notify(ctx, approval("hung"))
	if !errors.Is(err, context.DeadlineExceeded) || isTimeout(err) || time.Since(start) > bound {
		t.Fatalf("Notify with a 50ms context: %v after %v, want the context's deadline, not ErrTimeout", err, time.Since(start))
	}
}

func TestHungBusTimesOutConnectedOrConnecting(t *testing.T) {
	t.Parallel()
	b := startBus(t)
	const bound = 300 * time.Millisecond
	stop := func() {
		if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	cont := func() { _ = b.cmd.Process.Signal(syscall.SIGCONT) }
	defer cont()
	timesOut := func(n *Notifier, what string) {
		t.Helper()
		start := time.Now()
		_, err := n.Notify(context.Background(), approval("x"))
		took := time.Since(start)
		if !isTimeout(err) || took > bound+slack {
			t.Fatalf("Notify %s: %v after %v, want ErrTimeout within %v (+%v)", what, err, took, bound, slack)
		}
		t.Logf("Notify %s: ErrTimeout after %v", what, took)
	}

	// Connecting to a stopped bus: its socket accepts, nothing answers.
	stop()
	timesOut(newNotifier(t, b.addr, bound), "connecting to a stopped bus")
	cont()

	// Connected, then the bus stops: the connection is dropped (reported),
	// and the next call connects again once the bus answers.
	n := newNotifier(t, b.addr, bound)
	if _, err := n.Capabilities(context.Background()); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Capabilities on a bus with no server: %v, want ErrNoServer", err)
	}
	stop()
	timesOut(n, "on a connection whose bus stopped")
	nextEvent(t, n, "BusLost", func(ev Event) bool { return ev.Kind == BusLost })
	timesOut(n, "connecting again to the stopped bus")
	cont()
	if _, err := n.Notify(context.Background(), approval("x")); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Notify once the bus answers again: %v, want ErrNoServer (connected, no server)", err)
	}
}

// godbusGoroutines counts the goroutines running code of godbus or of
// this package (the test's own excepted).
func godbusGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "godbus/dbus") || strings.Contains(g, "internal/notify.(*Notifier)") {
			count++
		}
	}
	return count
}

// Not parallel: it counts goroutines, and runs before the parallel tests.
func TestBusLossIsReportedAndTheNextCallReconnects(t *testing.T) {
	d := startDesk(t)
	// The desk's own connection would count; the parallel tests have not
	// started, so once it is gone none runs.
	d.conn.Close()
	await(t, "no goroutine of godbus before the test", func() bool { return godbusGoroutines() == 0 })
	const before = 0

	n, err := New(Options{Address: d.addr})
	if err != nil {
		t.Fatal(err)
	}
	notify(t, n, approval("before the loss"))
	if during := godbusGoroutines(); during <= before {
		t.Fatalf("%d goroutines of godbus or notify while connected, %d before: the count sees nothing", during, before)
	}
	d.kill(t)
	ev := nextEvent(t, n, "BusLost", func(ev Event) bool { return ev.Kind == BusLost })
	if !errors.Is(ev.Err, ErrNoSessionBus) {
		t.Fatalf("BusLost carries %v, want ErrNoSessionBus", ev.Err)
	}
	if _, err := n.Notify(context.Background(), approval("no bus")); !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("Notify with the bus gone: got %v, want ErrNoSessionBus", err)
	}

	d.bus.start(t)
	d.startDunst(t)
	id := notify(t, n, approval("after the loss"))
	await(t, "the notification on the new bus displayed", func() bool { return d.displayed(t) == 1 })
	d.pick(t, "approve")
	ev = nextEvent(t, n, "ActionInvoked on the new bus", func(ev Event) bool { return ev.Kind == ActionInvoked })
	if ev.ID != id || ev.ActionKey != "approve" {
		t.Fatalf("after reconnecting: got %+v, want approve of %d", ev, id)
	}

	n.Shutdown()
	for range n.Events() {
	}
	d.conn.Close()
	deadline := time.Now().Add(waitFor)
	for godbusGoroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after Shutdown %d goroutines of godbus or notify run, %d before:\n%s",
				godbusGoroutines(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := n.Notify(context.Background(), approval("after")); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Notify after Shutdown: got %v, want ErrShutdown", err)
	}
}

// TestNotificationsShowAndGo shows and closes 20 notifications one after
// another: each is counted as displayed by dunst, its window is mapped on
// the X server (a MapNotify on the root window) and unmapped when it is
// closed, and nothing else maps. The times are logged; they are measured
// against issue 27's 250 ms by BenchmarkNotifyToShown.
func TestNotificationsShowAndGo(t *testing.T) {
	t.Parallel()
	counted, shown := showAndClose(t, 20)
	for _, m := range []struct {
		what string
		took []time.Duration
	}{{"counted as displayed by dunst", counted}, {"its window mapped on the X server", shown}} {
		slices.Sort(m.took)
		t.Logf("Notify called → %s, %d runs: median %v, min %v, max %v", m.what, len(m.took), m.took[len(m.took)/2], m.took[0], m.took[len(m.took)-1])
	}
}

// BenchmarkNotifyToShown measures the time from Notify being called to the
// notification shown: to dunst counting it as displayed, and to its window
// mapped on the X server. Issue 27 asks for state → notification shown
// within 250 ms.
// go test -run '^$' -bench NotifyToShown -benchtime 20x ./internal/notify
func BenchmarkNotifyToShown(b *testing.B) {
	counted, shown := showAndClose(b, b.N)
	slices.Sort(counted)
	slices.Sort(shown)
	b.ReportMetric(float64(counted[len(counted)/2].Microseconds())/1000, "ms-displayed")
	b.ReportMetric(float64(shown[len(shown)/2].Microseconds())/1000, "ms-mapped")
}

// showAndClose shows and closes runs notifications on a desk of its own,
// one at a time, and returns the times from Notify called to dunst
// counting each as displayed and to its window mapped.
func showAndClose(t testing.TB, runs int) (counted, shown []time.Duration) {
	d := startDesk(t)
	n := newNotifier(t, d.addr, 0)
	mapped := watchMaps(t, d.x.Display)
	for i := range runs {
		msg := approval("latency")
		msg.Body += strings.Repeat(".", i%40)
		start := time.Now()
		id := notify(t, n, msg)
		for d.displayedNow(t) != 1 {
			if time.Since(start) > waitFor {
				t.Fatalf("notification %d not displayed within %v", i, waitFor)
			}
			time.Sleep(200 * time.Microsecond)
		}
		counted = append(counted, time.Since(start))
		if ev := nextMap(t, mapped); !ev.mapped {
			t.Fatalf("notification %d: the first map event is an unmap", i)
		} else {
			shown = append(shown, ev.at.Sub(start))
		}
		if err := n.Close(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		await(t, "none displayed", func() bool { return d.displayedNow(t) == 0 })
		// The window goes, and nothing else moved: the next round's map
		// is the next notification's.
		if ev := nextMap(t, mapped); ev.mapped {
			t.Fatalf("notification %d closed: a window mapped, want dunst's unmapped", i)
		}
		if len(mapped) != 0 {
			t.Fatalf("notification %d: %d more map events than one map and one unmap", i, len(mapped))
		}
	}
	if ev := nextMapOrNone(mapped); ev != nil {
		t.Fatalf("a map event after the last round: %+v", *ev)
	}
	return counted, shown
}

// nextMap returns the next map event, failing the test after waitFor.
func nextMap(t testing.TB, events <-chan mapEvent) mapEvent {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(waitFor):
		t.Fatalf("no window mapped or unmapped within %v", waitFor)
		return mapEvent{}
	}
}

// nextMapOrNone returns a map event that comes within 100ms, else nil.
func nextMapOrNone(events <-chan mapEvent) *mapEvent {
	select {
	case ev := <-events:
		return &ev
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
