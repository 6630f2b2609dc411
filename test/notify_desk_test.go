package test

// A desktop for notification tests, all real and private to the test: a
// session bus (dbus-daemon with a configuration of its own), Xvfb, and
// dunst as the notification server, driven with its own dunstctl. A
// monitor connection on the bus sees every call made to the server (to
// count notifications sent and closed) and an X connection sees dunst's
// window mapped (when a notification is shown). Nothing reaches the
// person's session bus or display. internal/notify's tests have the same
// parts for the transport alone.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
	"github.com/godbus/dbus/v5"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// deskBusConfig is a session bus without service directories (dunst's
// service file would start a second server by activation) that lets the
// test monitor it.
const deskBusConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
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

// deskPick is dunst's dmenu: it writes the menu to $DESK_MENU and picks
// the line of the action whose key is in $DESK_CHOICE ("#<label>
// (<summary>) [<id>,<key>]").
const deskPick = `#!/bin/sh
cat > "$DESK_MENU"
grep "^#.*,$(cat "$DESK_CHOICE")]\$" "$DESK_MENU"
`

const deskDunstrc = `[global]
    dmenu = %s
    browser = /bin/true
    font = Monospace 8
`

// desk is a private bus, X server and dunst.
type desk struct {
	t      *testing.T
	dir    string
	addr   string // the bus address
	x      *xvfbtest.Server
	env    []string // for dunstctl
	choice string
	menu   string

	mu    sync.Mutex
	calls []serverCall // calls to the notification server, in order
	maps  []time.Time  // when dunst's window was mapped
}

// serverCall is one call to org.freedesktop.Notifications.
type serverCall struct {
	member string // Notify, CloseNotification…
	at     time.Time
	body   []any
}

// summary is a Notify call's summary.
func (c serverCall) summary() string {
	if c.member != "Notify" || len(c.body) < 4 {
		return ""
	}
	s, _ := c.body[3].(string)
	return s
}

// actions are a Notify call's action keys.
func (c serverCall) actions() []string {
	if c.member != "Notify" || len(c.body) < 6 {
		return nil
	}
	a, _ := c.body[5].([]string)
	var keys []string
	for i := 0; i+1 < len(a); i += 2 {
		keys = append(keys, a[i])
	}
	return keys
}

// startDesk starts the desk; everything ends in t.Cleanup.
func startDesk(t *testing.T) *desk {
	t.Helper()
	for _, p := range []string{"dbus-daemon", "dunst", "dunstctl"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (apt-get install dbus-daemon dunst)", p)
			}
			t.Skipf("%s is not installed (apt-get install dbus-daemon dunst)", p)
		}
	}
	dir, err := os.MkdirTemp("", "dk") // short: a socket path holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &desk{t: t, dir: dir, addr: "unix:path=" + filepath.Join(dir, "bus"),
		choice: filepath.Join(dir, "choice"), menu: filepath.Join(dir, "menu")}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, deskBusConfig, filepath.Join(dir, "bus")), 0o600); err != nil {
		t.Fatal(err)
	}
	deskProcess(t, exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile"))
	await(t, 10*time.Second, "the test's session bus", func() bool {
		c, err := dbus.Dial(d.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	d.x = xvfbtest.Start(t, xvfbtest.Options{Width: 800, Height: 600})
	pick := filepath.Join(dir, "pick")
	rc := filepath.Join(dir, "dunstrc")
	if err := os.WriteFile(pick, []byte(deskPick), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rc, fmt.Appendf(nil, deskDunstrc, pick), 0o600); err != nil {
		t.Fatal(err)
	}
	d.env = append(os.Environ(), "DISPLAY="+d.x.Display, "DBUS_SESSION_BUS_ADDRESS="+d.addr,
		"DESK_MENU="+d.menu, "DESK_CHOICE="+d.choice)
	d.monitor()
	d.watchMaps()
	dunst := exec.Command("dunst", "-config", rc)
	dunst.Env = d.env
	deskProcess(t, dunst)
	c, err := dbus.Connect(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	await(t, 10*time.Second, "dunst on the bus", func() bool {
		var has bool
		err := c.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.Notifications").Store(&has)
		return err == nil && has
	})
	return d
}

// deskProcess starts cmd and ends it in t.Cleanup.
func deskProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() && out.Len() > 0 {
			t.Logf("%s said:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
}

// monitor records every method call to the notification server, with a
// monitor connection (BecomeMonitor) on the test's bus.
func (d *desk) monitor() {
	t := d.t
	c, err := dbus.Dial(d.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Hello(); err != nil {
		t.Fatal(err)
	}
	msgs := make(chan *dbus.Message, 256)
	// Every message goes to msgs from here on, the answer to BecomeMonitor
	// included: it is read there, not by the call.
	c.Eavesdrop(msgs)
	rule := "type='method_call',interface='org.freedesktop.Notifications'"
	c.BusObject().Go("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, make(chan *dbus.Call, 1), []string{rule}, uint32(0))
	answered := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			switch m.Type {
			case dbus.TypeMethodReply:
				answered <- nil
				continue
			case dbus.TypeError:
				answered <- fmt.Errorf("%v", m.Body)
				continue
			case dbus.TypeMethodCall:
			default:
				continue
			}
			member, _ := m.Headers[dbus.FieldMember].Value().(string)
			d.mu.Lock()
			d.calls = append(d.calls, serverCall{member: member, at: time.Now(), body: m.Body})
			d.mu.Unlock()
		}
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("become a monitor of the test's bus: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the test's bus did not answer BecomeMonitor")
	}
	t.Cleanup(func() { c.Close(); <-done })
}

// watchMaps records when a window is mapped on the X server: dunst maps
// its window when it shows a notification, with none shown before.
func (d *desk) watchMaps() {
	t := d.t
	c, err := xgb.NewConnDisplay(d.x.Display)
	if err != nil {
		t.Fatal(err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	if err := xproto.ChangeWindowAttributesChecked(c, root, xproto.CwEventMask, []uint32{xproto.EventMaskSubstructureNotify}).Check(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return
			}
			if _, ok := ev.(xproto.MapNotifyEvent); ok {
				d.mu.Lock()
				d.maps = append(d.maps, time.Now())
				d.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
}

// fresh returns the Notify calls whose summary contains s that made a
// new notification (replaces_id 0): what a person counts; a call that
// replaces one in place (a prompt's choices added) is not another.
func (d *desk) fresh(s string) []serverCall {
	var out []serverCall
	for _, c := range d.notifies(s) {
		if id, _ := c.body[1].(uint32); id == 0 {
			out = append(out, c)
		}
	}
	return out
}

// notifies returns the Notify calls whose summary contains s.
func (d *desk) notifies(s string) []serverCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []serverCall
	for _, c := range d.calls {
		if c.member == "Notify" && strings.Contains(c.summary(), s) {
			out = append(out, c)
		}
	}
	return out
}

// allCalls is every call seen so far.
func (d *desk) allCalls() []serverCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]serverCall(nil), d.calls...)
}

// mappedAfter is the first time dunst's window was mapped after t0.
func (d *desk) mappedAfter(t0 time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.maps {
		if m.After(t0) {
			return m, true
		}
	}
	return time.Time{}, false
}

// dunstctl runs dunstctl on the desk's bus.
func (d *desk) dunstctl(args ...string) string {
	d.t.Helper()
	cmd := exec.Command("dunstctl", args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.t.Fatalf("dunstctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// displayed is how many notifications dunst shows.
func (d *desk) displayed() int {
	d.t.Helper()
	s := d.dunstctl("count", "displayed")
	n, err := strconv.Atoi(s)
	if err != nil {
		d.t.Fatalf("dunstctl count displayed: %q", s)
	}
	return n
}

// pick chooses the action key of the displayed notifications from dunst's
// context menu, as a person would, and returns the menu it was offered
// (the script writes it before it answers).
func (d *desk) pick(key string) string {
	d.t.Helper()
	if err := os.WriteFile(d.choice, []byte(key+"\n"), 0o600); err != nil {
		d.t.Fatal(err)
	}
	os.Remove(d.menu)
	d.dunstctl("context") // dunst runs its menu after dunstctl returns
	var menu []byte
	await(d.t, 10*time.Second, "dunst's menu", func() bool {
		var err error
		menu, err = os.ReadFile(d.menu)
		return err == nil && len(menu) > 0
	})
	return string(menu)
}
