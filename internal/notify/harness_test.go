package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
	"github.com/godbus/dbus/v5"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// The tests' parts are real: a private dbus-daemon, a private Xvfb and
// dunst, the notification server, driven with its own dunstctl. Nothing
// reaches the person's session bus or display.

// waitFor bounds every wait of the tests; the machine is shared and the
// tests may run under -race.
const waitFor = 10 * time.Second

// bus is a private session bus.
type bus struct {
	dir  string // holds the socket and the configuration
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// busConfig is a session bus without service directories, so that
// nothing is started by activation (dunst installs a service file for
// org.freedesktop.Notifications, which would start one on the test's
// bus, with no display).
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// startBus starts a private session bus, stopped in t.Cleanup.
func startBus(t testing.TB) *bus {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Skip("dbus-daemon is not installed (apt-get install dbus-daemon)")
	}
	// A short directory of its own: a socket's path holds at most 107
	// bytes, and a test's TempDir repeats the test's name.
	dir, err := os.MkdirTemp("", "nt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &bus{dir: dir, addr: "unix:path=" + filepath.Join(dir, "bus")}
	b.start(t)
	return b
}

// start starts (or starts again) the bus daemon on b's socket.
func (b *bus) start(t testing.TB) {
	t.Helper()
	conf := filepath.Join(b.dir, "bus.conf")
	sock := filepath.Join(b.dir, "bus")
	os.Remove(sock)
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, sock), 0o600); err != nil {
		t.Fatal(err)
	}
	b.cmd = exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile")
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	b.done = startProcess(t, b.cmd)
	await(t, "the bus socket "+sock, func() bool {
		c, err := dbus.Dial(b.addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// kill ends the bus daemon, as a crash would.
func (b *bus) kill(t testing.TB) {
	t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGCONT)
	_ = b.cmd.Process.Kill()
	<-b.done
}

// startProcess starts cmd and ends it in t.Cleanup; the channel is closed
// when it has exited.
func startProcess(t testing.TB, cmd *exec.Cmd) chan struct{} {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process ignores SIGTERM
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() && out.Len() > 0 {
			t.Logf("%s said:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
	return done
}

// desk is a bus, an X server and dunst on them, with a client connection
// of the test's own (to read dunst's state).
type desk struct {
	*bus
	x      *xvfbtest.Server
	dunst  *exec.Cmd
	env    []string // for dunstctl
	choice string   // the file naming the action the menu picks
	menu   string   // the file where the menu writes what it was offered
	conn   *dbus.Conn
}

// pickScript is dunst's dmenu: it writes the menu it is given to $MENU
// and picks the line of the action whose key is in $CHOICE. Dunst's lines
// are "#<label> (<summary>) [<id>,<key>]".
const pickScript = `#!/bin/sh
cat > "$NOTIFY_TEST_MENU"
grep "^#.*,$(cat "$NOTIFY_TEST_CHOICE")]\$" "$NOTIFY_TEST_MENU"
`

// dunstrc is a minimal configuration: the picking script as dmenu, no
// browser, and markup in bodies read as Debian's default configuration
// (/etc/xdg/dunst/dunstrc) reads it.
const dunstrc = `[global]
    dmenu = %s
    browser = /bin/true
    markup = full
    font = Monospace 8
`

// startDesk starts a bus, Xvfb and dunst; all end in t.Cleanup.
func startDesk(t testing.TB) *desk {
	t.Helper()
	for _, p := range []string{"dunst", "dunstctl"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (apt-get install dunst); these tests need a real notification server", p)
		}
	}
	b := startBus(t)
	d := &desk{bus: b, x: xvfbtest.Start(t, xvfbtest.Options{Width: 800, Height: 600})}
	d.choice = filepath.Join(b.dir, "choice")
	d.menu = filepath.Join(b.dir, "menu")
	pick := filepath.Join(b.dir, "pick")
	rc := filepath.Join(b.dir, "dunstrc")
	if err := os.WriteFile(pick, []byte(pickScript), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rc, fmt.Appendf(nil, dunstrc, pick), 0o600); err != nil {
		t.Fatal(err)
	}
	d.env = append(os.Environ(),
		"DISPLAY="+d.x.Display,
		"DBUS_SESSION_BUS_ADDRESS="+b.addr,
		"NOTIFY_TEST_MENU="+d.menu,
		"NOTIFY_TEST_CHOICE="+d.choice,
	)
	d.startDunst(t)
	return d
}

// startDunst starts dunst and waits until it owns the server's name.
func (d *desk) startDunst(t testing.TB) {
	t.Helper()
	d.dunst = exec.Command("dunst", "-config", filepath.Join(d.dir, "dunstrc"))
	d.dunst.Env = d.env
	d.dunst.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	startProcess(t, d.dunst)
	conn, err := dbus.Connect(d.addr)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	d.conn = conn
	await(t, "dunst to own "+busName, func() bool {
		var has bool
		err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, busName).Store(&has)
		return err == nil && has
	})
}

// dunstctl runs dunstctl on the desk's bus and returns its output.
func (d *desk) dunstctl(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("dunstctl", args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dunstctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// displayed is `dunstctl count displayed`.
func (d *desk) displayed(t testing.TB) int {
	t.Helper()
	s := d.dunstctl(t, "count", "displayed")
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("dunstctl count displayed: %q is not a number", s)
	}
	return n
}

// displayedNow reads dunst's displayedLength property over the test's
// own connection: the same number as dunstctl count displayed, without a
// process per look (for the latency figure).
func (d *desk) displayedNow(t testing.TB) uint32 {
	t.Helper()
	v, err := d.conn.Object(busName, objPath).GetProperty("org.dunstproject.cmd0.displayedLength")
	if err != nil {
		t.Fatalf("get displayedLength: %v", err)
	}
	n, ok := v.Value().(uint32)
	if !ok {
		t.Fatalf("displayedLength is %T, want uint32", v.Value())
	}
	return n
}

// historyEntry is a notification of `dunstctl history`.
type historyEntry struct {
	ID      int
	Summary string
	Body    string
	Message string
}

// history is `dunstctl history`: the notifications dunst has closed.
func (d *desk) history(t testing.TB) []historyEntry {
	t.Helper()
	var raw struct {
		Data [][]map[string]struct {
			Data json.RawMessage `json:"data"`
		} `json:"data"`
	}
	out := d.dunstctl(t, "history")
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("dunstctl history: %v\n%s", err, out)
	}
	var entries []historyEntry
	for _, list := range raw.Data {
		for _, m := range list {
			var e historyEntry
			_ = json.Unmarshal(m["id"].Data, &e.ID)
			_ = json.Unmarshal(m["summary"].Data, &e.Summary)
			_ = json.Unmarshal(m["body"].Data, &e.Body)
			_ = json.Unmarshal(m["message"].Data, &e.Message)
			entries = append(entries, e)
		}
	}
	return entries
}

// pick invokes action key of the displayed notifications through dunst's
// context menu, as a person choosing it in the menu would: dunstctl
// context opens the menu of all displayed notifications; dunstctl action
// 0 opens the first one's, since it has several actions and none is the
// default. The menu is dunst's dmenu, here pickScript.
func (d *desk) pick(t testing.TB, key string, dunstctl ...string) {
	t.Helper()
	if err := os.WriteFile(d.choice, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(dunstctl) == 0 {
		dunstctl = []string{"context"}
	}
	d.dunstctl(t, dunstctl...)
}

// signal sends sig to dunst.
func (d *desk) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := d.dunst.Process.Signal(sig); err != nil {
		t.Fatalf("signal dunst: %v", err)
	}
}

// await polls cond until it holds, failing the test after waitFor.
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newNotifier returns a Notifier on addr, shut down in t.Cleanup.
func newNotifier(t testing.TB, addr string, timeout time.Duration) *Notifier {
	t.Helper()
	n, err := New(Options{Address: addr, CallTimeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { n.Shutdown() })
	return n
}

// nextEvent returns the first event that want accepts, failing the test
// when none comes within waitFor; events it does not accept are passed
// over.
func nextEvent(t testing.TB, n *Notifier, what string, want func(Event) bool) Event {
	t.Helper()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-n.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %s", what)
			}
			if want(ev) {
				return ev
			}
			t.Logf("passed over %+v while waiting for %s", ev, what)
		case <-timer.C:
			t.Fatalf("no %s within %v", what, waitFor)
		}
	}
}

// notify calls n.Notify with a test's context.
func notify(t testing.TB, n *Notifier, msg Notification) uint32 {
	t.Helper()
	id, err := n.Notify(context.Background(), msg)
	if err != nil {
		t.Fatalf("Notify(%+v): %v", msg, err)
	}
	return id
}

// isTimeout reports whether err is the package's timeout.
func isTimeout(err error) bool { return errors.Is(err, ErrTimeout) }

// mapEvent is a window of the root mapped (or unmapped) at a time.
type mapEvent struct {
	mapped bool
	at     time.Time
}

// watchMaps reports every window mapped and unmapped on display's root
// window (MapNotify, UnmapNotify), as the X server tells; the connection
// ends in t.Cleanup.
func watchMaps(t testing.TB, display string) <-chan mapEvent {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("connect to %s: %v", display, err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	if err := xproto.ChangeWindowAttributesChecked(c, root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskSubstructureNotify}).Check(); err != nil {
		t.Fatalf("select SubstructureNotify on the root: %v", err)
	}
	events := make(chan mapEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return // closed
			}
			var me mapEvent
			switch ev.(type) {
			case xproto.MapNotifyEvent:
				me = mapEvent{mapped: true, at: time.Now()}
			case xproto.UnmapNotifyEvent:
				me = mapEvent{mapped: false, at: time.Now()}
			default:
				continue
			}
			select {
			case events <- me:
			default:
				t.Errorf("more than %d map events unread", cap(events))
			}
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return events
}
