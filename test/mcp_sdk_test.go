package test

// `agentctl mcp` through the official MCP TypeScript SDK, the client models
// use (test/mcpsdk/check.mjs; .ci/run installs the pinned SDK and ajv there
// with npm ci). Nothing leaves the machine: the script speaks to the
// server on stdio only.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// sdkScript runs check.mjs in mode against h with extra environment, and
// fails the test with the script's output when it fails.
func (h *home) sdkScript(t *testing.T, mode string, extra ...string) string {
	t.Helper()
	dir, err := filepath.Abs("mcpsdk")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or the MCP SDK is missing (%v, %v): .ci/run installs them (npm ci --prefix test/mcpsdk)", err, serr)
		}
		t.Skip("node or test/mcpsdk/node_modules is missing: run `npm ci --prefix test/mcpsdk` (.ci/run does)")
	}
	cmd := exec.Command(node, filepath.Join(dir, "check.mjs"), mode)
	cmd.Dir = dir
	cmd.Env = h.env(append([]string{"AGENTCTL=" + bin.agentctl}, extra...)...)
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("check.mjs %s did not finish in 3 minutes:\n%s", mode, out)
	}
	if err != nil {
		t.Fatalf("check.mjs %s: %v\n%s", mode, err, out)
	}
	t.Logf("check.mjs %s:\n%s", mode, out)
	return string(out)
}

func TestMCPSDKCancelAsk(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	// Python: its REPL answers ctrl+c with a prompt wherever it lands.
	h.ctl(0, "spawn", "s1", "--", "python3", "-q")
	h.sdkScript(t, "cancel", "SESSION=s1")
}

func TestMCPSDKProgress(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh")
	h.sdkScript(t, "progress", "SESSION=s1")
}

func TestMCPSDKOutputSchemas(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--desktops", "--display", srv.Display})
	h.cleanDesktops()
	h.ctl(0, "spawn", "s1", "--", "sh")
	h.sdkScript(t, "schemas", "SESSION=s1")
	if len(h.desktops()) != 0 {
		t.Errorf("check.mjs's desktop_rm left desktops: %+v", h.desktops())
	}
}

// winGeom is a window's client area on the screen, once it is mapped and
// the window manager has placed it (the same in two reads in a row).
// xwininfo, not xdotool getwindowgeometry, which counts a reparented
// window's frame offset twice.
func winGeom(t *testing.T, srv *xvfbtest.Server, title string) (id string, x, y, w, hgt int) {
	t.Helper()
	var out, last []byte
	// Generous: three xterms and openbox starting beside a loaded suite
	// took over 20 s once (the programs', not agentd's, time).
	deadline := time.Now().Add(60 * time.Second)
	await(t, 65*time.Second, "the window "+title, func() bool {
		ids, err := srv.Command("xdotool", "search", "--onlyvisible", "--name", "^"+title+"$").Output()
		if time.Now().After(deadline) {
			t.Fatalf("no window %s after 60 s: xdotool search: %v %q; last xwininfo: %s", title, err, ids, out)
		}
		if err != nil {
			return false
		}
		id = strings.Fields(string(ids))[0]
		last = out
		out, err = srv.Command("xwininfo", "-id", id).Output()
		return err == nil && string(out) == string(last) && !strings.Contains(string(out), "Width: 1\n")
	})
	vals := map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				vals[k] = n
			}
		}
	}
	return id, vals["Absolute upper-left X"], vals["Absolute upper-left Y"], vals["Width"], vals["Height"]
}

// startX starts a program on srv, ended with the test.
func startX(t *testing.T, srv *xvfbtest.Server, name string, args ...string) {
	t.Helper()
	cmd := srv.Command(name, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
			if !t.Failed() {
				break
			}
			t.Logf("%s %v ended early: %v\n%s", name, args, cmd.ProcessState, stderr)
		default:
			cmd.Process.Kill()
			<-done
		}
	})
}

// mouseLogger is a program for an xterm that turns on xterm's mouse
// reporting (SGR) and writes each press and release as "press BUTTON COL
// ROW" or "release BUTTON COL ROW".
const mouseLogger = `import os, sys, tty, re
tty.setraw(0)
sys.stdout.write("\x1b[?1000h\x1b[?1006h"); sys.stdout.flush()
out = open(sys.argv[1], "a", buffering=1)
buf = b""
while True:
    buf += os.read(0, 64)
    while True:
        m = re.search(rb"\x1b\[<(\d+);(\d+);(\d+)([Mm])", buf)
        if not m: break
        buf = buf[m.end():]
        kind = "press" if m.group(4) == b"M" else "release"
        out.write("%s %s %s %s\n" % (kind, m.group(1).decode(), m.group(2).decode(), m.group(3).decode()))
`

// Each new computer-use action, by its effect on a real X server with a
// window manager: the pointer where xdotool finds it, three presses in an
// xterm, typed text arriving, a window moved by dragging its title bar.
func TestMCPSDKComputerUse(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openbox"); err != nil {
		t.Skip("openbox is not installed (apt-get install openbox): dragging a window needs a window manager")
	}
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	dir := t.TempDir()
	// The system's own openbox configuration (its mouse bindings move a
	// window by its title bar), not the one in the real home.
	//
	// The xterms start once openbox runs its --startup command, which it
	// does once it has adopted the windows shown, just before its event
	// loop. openbox 3.6 started beside them can stall for good: a
	// window's MapRequest read while it adopts the windows already shown
	// waits in its own queue, and its loop sleeps until the next X event
	// comes (10 starts in 73 here, with nothing else running: windows
	// never shown). agentd's desktops do not meet it: their openbox
	// starts with the first window and focuses it, and the worker sets a
	// property on the root once openbox says it runs (pkg/desktop,
	// nudgeWM): either is the next event.
	running := filepath.Join(dir, "openbox-running")
	startX(t, srv, "openbox", "--config-file", "/etc/xdg/openbox/rc.xml", "--startup", "touch '"+running+"'")
	await(t, 30*time.Second, "openbox to run its --startup command", func() bool {
		_, err := os.Stat(running)
		return err == nil
	})
	script := filepath.Join(dir, "mouse.py")
	os.WriteFile(script, []byte(mouseLogger), 0o600)
	mouseLog := filepath.Join(dir, "mouse.log")
	typed := filepath.Join(dir, "typed.txt")
	startX(t, srv, "xterm", "-T", "mouselog", "-geometry", "40x10+20+40", "-e", "python3", script, mouseLog)
	startX(t, srv, "xterm", "-T", "typehere", "-geometry", "40x10+520+40", "-e", "sh", "-c", "cat > "+typed)
	startX(t, srv, "xterm", "-T", "dragme", "-geometry", "30x6+200+400")
	_, mx, my, mw, mh := winGeom(t, srv, "mouselog")
	typeWin, kx, ky, kw, kh := winGeom(t, srv, "typehere")
	drag, dx, dy, dw, _ := winGeom(t, srv, "dragme")
	// The mouse logger must be running (it turns reporting on) before the
	// clicks: wait for its log file.
	await(t, 20*time.Second, "the mouse logger to start", func() bool {
		_, err := os.Stat(mouseLog)
		return err == nil
	})
	t.Logf("mouselog at %d,%d %dx%d; typehere at %d,%d %dx%d; dragme %s at %d,%d", mx, my, mw, mh, kx, ky, kw, kh, drag, dx, dy)
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	h.sdkScript(t, "computer",
		"DISPLAY="+srv.Display,
		"MOUSE_LOG="+mouseLog, fmt.Sprintf("MOUSE_AT=%d,%d", mx+mw/2, my+mh/2),
		"TYPED_FILE="+typed, "TYPE_WINDOW="+typeWin, fmt.Sprintf("TYPE_AT=%d,%d", kx+kw/2, ky+kh/2),
		// The title bar: just above the client area.
		"DRAG_WINDOW="+drag, fmt.Sprintf("DRAG_FROM=%d,%d", dx+dw/2, dy-8))
}
