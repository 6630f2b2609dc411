package test

import (
	"encoding/json"
	"fmt"
	img "image"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

// needDesktopTools skips a test without the programs desktops run.
func needDesktopTools(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range append([]string{"Xvfb"}, progs...) {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
}

// desktops lists the home's desktops through agentctl --json.
func (h *home) desktops() []wire.DesktopRow {
	h.t.Helper()
	var r wire.DesktopListResult
	if err := json.Unmarshal([]byte(h.ctl(0, "--json", "desktop", "ls")), &struct{ Result *wire.DesktopListResult }{&r}); err != nil {
		h.t.Fatal(err)
	}
	return r.Desktops
}

func (h *home) desktop(name string) (wire.DesktopRow, bool) {
	for _, d := range h.desktops() {
		if d.Name == name {
			return d, true
		}
	}
	return wire.DesktopRow{}, false
}

func (h *home) newDesktop(args ...string) wire.DesktopRow {
	h.t.Helper()
	var d wire.DesktopRow
	out := h.ctl(0, append([]string{"--json", "desktop", "new"}, args...)...)
	if err := json.Unmarshal([]byte(out), &struct{ Result *wire.DesktopRow }{&d}); err != nil {
		h.t.Fatal(err)
	}
	return d
}

// cleanDesktops ends every desktop of the home at the end of the test:
// desktops outlive agentd by design, a test's must not outlive the test.
// Registered after startDaemon, it runs before the daemon stops; it falls
// back to the manifests' process groups when the daemon is gone.
func (h *home) cleanDesktops() {
	h.t.Cleanup(func() {
		var displays []string
		if h.hello() == nil {
			for _, d := range h.desktops() {
				h.agentctl("", "desktop", "rm", "--force", d.Name)
				displays = append(displays, strings.TrimPrefix(d.Display, ":"))
			}
		}
		// What rm ended must leave nothing in /tmp: no dead socket, no
		// lock naming a dead server (a live one is a parallel test's new
		// desktop that took the number since).
		for _, n := range displays {
			checkDisplayFreed(h.t, n, 0)
		}
		dirs, _ := filepath.Glob(filepath.Join(h.state, "agentd", "desktops", "*", "manifest.json"))
		for _, m := range dirs {
			var man struct{ Worker struct{ PID int } }
			b, _ := os.ReadFile(m)
			if json.Unmarshal(b, &man) == nil && man.Worker.PID > 0 && syscall.Kill(-man.Worker.PID, syscall.SIGTERM) == nil {
				// Wait for the group: its worker cleans up in the
				// directory the test's TempDir removes next.
				pgid := man.Worker.PID
				await(h.t, 10*time.Second, "a desktop's processes to end", func() bool { return syscall.Kill(-pgid, 0) != nil })
			}
		}
	})
}

// redIn counts pure red pixels in a PNG screenshot's rectangle.
func redIn(t *testing.T, file string, r img.Rectangle) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pic, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := pic.At(x, y).RGBA()
			if cr>>8 > 240 && cg>>8 < 16 && cb>>8 < 16 {
				n++
			}
		}
	}
	return n
}

// tkEntry is a Tk program: a red window with an entry that writes what was
// typed to a file on Return.
const tkEntry = `
wm geometry . 600x400+0+0
wm title . tkdesk
frame .f -background red -width 600 -height 300
pack .f
entry .e -width 60
pack .e
focus -force .e
bind .e <Return> {
	set f [open $env(TYPED) w]
	fconfigure $f -encoding utf-8
	puts -nonewline $f [.e get]
	close $f
}
`

// TestTwoDesktopsTakeBatchesAtOnce is the proof: two desktops, a
// program on each through spawn --desktop (an xterm, a Tk program), text
// typed into both at the same time arriving byte-exact, screenshots that
// each show only their own window, a US layout while the person's is ru;
// then kill -9 of agentd and a restart that still lists both desktops
// with their programs, and rm leaving nothing.
func TestTwoDesktopsTakeBatchesAtOnce(t *testing.T) {
	needDesktopTools(t, "openbox", "xterm", "wish", "setxkbmap")
	t.Parallel()
	person := xvfbtest.Start(t, xvfbtest.Options{})
	if out, err := person.Command("setxkbmap", "ru").CombinedOutput(); err != nil {
		t.Fatalf("setxkbmap ru on the person's display: %v %s", err, out)
	}
	h := newHome(t)
	args := []string{"--desktops", "--display", person.Display}
	d := h.startDaemon(args, "WAYLAND_DISPLAY=wayland-test")
	h.cleanDesktops()
	d1, d2 := h.newDesktop("d1"), h.newDesktop("d2", "--size", "1024x768")
	if d1.Display == d2.Display || d1.Status != wire.DesktopRunning || d2.Width != 1024 {
		t.Fatalf("desktops %+v %+v", d1, d2)
	}
	// The layouts: the person's ru, the desktops' us.
	var ps, ds wire.ScreenResult
	json.Unmarshal([]byte(h.ctl(0, "--json", "screen")), &struct{ Result *wire.ScreenResult }{&ps})
	json.Unmarshal([]byte(h.ctl(0, "--json", "screen", "--desktop", "d1")), &struct{ Result *wire.ScreenResult }{&ds})
	if ps.KeyboardLayout != "ru" || ds.KeyboardLayout != "us" || ds.Desktop != "d1" || ds.Display != d1.Display || !ds.AllowAct {
		t.Fatalf("the person's layout %q, d1's %q (%+v); want ru and us", ps.KeyboardLayout, ds.KeyboardLayout, ds)
	}

	dir := t.TempDir()
	typed1, typed2 := filepath.Join(dir, "typed1"), filepath.Join(dir, "typed2")
	envFile := filepath.Join(dir, "env")
	script := filepath.Join(dir, "entry.tcl")
	os.WriteFile(script, []byte(tkEntry), 0o600)
	h.ctl(0, "spawn", "x1", "--desktop", "d1", "--env", "LC_ALL=C.UTF-8", "--", "sh", "-c",
		"env > "+envFile+"; exec xterm -geometry 80x10+0+0 -e sh -c 'cat > "+typed1+"; exec sleep 600'")
	h.ctl(0, "spawn", "x2", "--desktop", "d2", "--env", "TYPED="+typed2, "--env", "LC_ALL=C.UTF-8", "--", "wish", script)

	// The program's environment points at its desktop only.
	await(t, 10*time.Second, "the program's environment", func() bool { b, _ := os.ReadFile(envFile); return len(b) > 0 })
	env, _ := os.ReadFile(envFile)
	for _, want := range []string{"DISPLAY=" + d1.Display + "\n", "XAUTHORITY=" + d1.Authority + "\n", "GDK_BACKEND=x11\n", "QT_QPA_PLATFORM=xcb\n",
		"DBUS_SESSION_BUS_ADDRESS=unix:path="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the program's environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(string(env), "WAYLAND_DISPLAY") {
		t.Errorf("the program's environment keeps WAYLAND_DISPLAY:\n%s", env)
	}

	text1 := "hello /_\\@~|{} äöüß é Привет 漢字 🙂"
	text2 := "hello Tk äöü Привет"
	batch := func(text string, enter bool) string {
		acts := []map[string]any{{"kind": "click", "x": 100, "y": 50}, {"kind": "type", "text": text}}
		if enter {
			acts = append(acts, map[string]any{"kind": "key", "key": "ctrl+d"})
		} else {
			acts[0] = map[string]any{"kind": "click", "x": 300, "y": 310}
			acts = append(acts, map[string]any{"kind": "key", "key": "Return"})
		}
		b, _ := json.Marshal(map[string]any{"actions": acts, "observe": false})
		return string(b)
	}
	// Both windows must be up before the batches race: wait for each
	// desktop's screenshot to show its window.
	shot := func(desk, file string) {
		h.ctl(0, "screenshot", "--desktop", desk, "-o", file, "--force")
	}
	s1, s2 := filepath.Join(dir, "d1.png"), filepath.Join(dir, "d2.png")
	await(t, 15*time.Second, "the Tk window on d2", func() bool { shot("d2", s2); return redIn(t, s2, img.Rect(100, 100, 200, 200)) > 9000 })
	await(t, 15*time.Second, "the xterm on d1", func() bool {
		h.agentctl("", "act", "--desktop", "d1", `{"actions":[{"kind":"wait","ms":50}],"observe":false}`)
		var sr wire.ScreenshotResult
		json.Unmarshal([]byte(h.ctl(0, "--json", "screenshot", "--desktop", "d1", "-o", s1, "--force")), &struct{ Result *wire.ScreenshotResult }{&sr})
		return sr.ActiveWindow != "" || xwininfoHas(t, d1, "xterm")
	})
	// The window manager starts with a desktop's first window and adopts
	// it: reparented into a frame, its keyboard focus set again. agentd
	// holds a batch until openbox says it has adopted the windows shown
	// (TestDesktopTypesIntoTheFirstWindowAtOnce). This test still waits
	// for each frame, as a person sees it before typing: without that
	// wait, the Tk window once lost its keys beside the other desktop
	// tests (1 run in 9; the cause is not known yet).
	await(t, 15*time.Second, "openbox to frame the xterm on d1", func() bool { return framedByWM(d1, "xterm") })
	await(t, 15*time.Second, "openbox to frame the Tk window on d2", func() bool { return framedByWM(d2, "tkdesk") })

	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i, c := range []struct{ desk, batch, file, text string }{{"d1", batch(text1+"\n", true), typed1, text1 + "\n"}, {"d2", batch(text2, false), typed2, text2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			out, errOut, code := h.agentctl(c.batch, "act", "--desktop", c.desk, "-")
			if code != 0 {
				errs[i] = fmt.Sprintf("act on %s: exit %d %s %s", c.desk, code, out, errOut)
			}
			t.Logf("typing on %s took %s", c.desk, time.Since(start).Round(time.Millisecond))
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	for _, c := range []struct{ file, want string }{{typed1, text1 + "\n"}, {typed2, text2}} {
		await(t, 10*time.Second, "the typed text in "+c.file, func() bool { b, _ := os.ReadFile(c.file); return len(b) >= len(c.want) })
		if b, _ := os.ReadFile(c.file); string(b) != c.want {
			t.Errorf("%s received %q, want %q", c.file, b, c.want)
		}
	}
	// Each screenshot shows only its own window: d2's the red Tk frame,
	// d1's none of it.
	shot("d1", s1)
	shot("d2", s2)
	if n := redIn(t, s1, img.Rect(0, 0, 600, 400)); n != 0 {
		t.Errorf("d1's screenshot holds %d red pixels: d2's window shows on d1", n)
	}
	if n := redIn(t, s2, img.Rect(50, 50, 550, 250)); n < 90000 {
		t.Errorf("d2's screenshot holds %d red pixels, want its window's", n)
	}
	// The audit log names the desktop on every desktop batch.
	audit, _ := os.ReadFile(filepath.Join(h.state, "agentd", "audit.jsonl"))
	if !strings.Contains(string(audit), `"desktop":"d1"`) || !strings.Contains(string(audit), `"desktop":"d2"`) || strings.Contains(string(audit), "Привет") {
		t.Errorf("audit log:\n%s", audit)
	}

	// kill -9 agentd; a new one finds both desktops and their programs.
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	h.startDaemon(args)
	ls := h.desktops()
	if len(ls) != 2 || ls[0].Status != wire.DesktopRunning || ls[1].Status != wire.DesktopRunning {
		t.Fatalf("after kill -9 and restart: %+v", ls)
	}
	var sl wire.ListResult
	json.Unmarshal([]byte(h.ctl(0, "--json", "list")), &struct{ Result *wire.ListResult }{&sl})
	for _, s := range sl.Sessions {
		if s.Status != wire.StatusRunning {
			t.Errorf("session %s is %s after the restart, want running", s.Name, s.Status)
		}
	}
	if !xwininfoHas(t, d1, "xterm") || !xwininfoHas(t, d2, "tkdesk") {
		t.Error("a desktop's program is gone after the daemon's restart")
	}

	// rm leaves no process, socket, lock or cookie.
	h.ctl(0, "desktop", "rm", "d1")
	checkDisplayFreed(t, strings.TrimPrefix(d1.Display, ":"), d1.ServerPID)
	for _, p := range []string{d1.Authority, filepath.Dir(d1.Authority)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after desktop rm", p)
		}
	}
	for _, pid := range []int{d1.WorkerPID, d1.ServerPID} {
		if alive(pid) {
			t.Errorf("process %d is left after desktop rm", pid)
		}
	}
	if _, ok := h.desktop("d1"); ok {
		t.Error("d1 is still listed after rm")
	}
}

// checkDisplayFreed fails the test when display n's socket or lock is
// left after desktop rm ended its server (serverPID, 0 when unknown): a
// socket nothing answers on, a lock naming the ended server or a dead
// process. A live server on n is not a leftover: the number is free once
// rm ends, and a parallel test's desktop (they share the range) may take
// it at once.
func checkDisplayFreed(t testing.TB, n string, serverPID int) {
	t.Helper()
	if c, err := net.Dial("unix", "/tmp/.X11-unix/X"+n); err == nil {
		c.Close()
	} else if _, serr := os.Lstat("/tmp/.X11-unix/X" + n); serr == nil {
		t.Errorf("a dead X socket /tmp/.X11-unix/X%s is left after desktop rm", n)
	}
	if b, err := os.ReadFile("/tmp/.X" + n + "-lock"); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == serverPID || !alive(pid) {
			t.Errorf("/tmp/.X%s-lock of the ended server (pid %d) is left after desktop rm", n, pid)
		}
	}
}

// xwininfoHas asks xwininfo, an independent witness, whether a window
// named name is on the desktop.
func xwininfoHas(t *testing.T, d wire.DesktopRow, name string) bool {
	out, err := onDesktop(d, "xwininfo", "-root", "-tree").Output()
	return err == nil && strings.Contains(string(out), `"`+name+`"`)
}

// desktopHome is a home whose agentd makes desktops and has no person's
// display; its desktops are removed when the test ends.
func desktopHome(t *testing.T) *home {
	t.Helper()
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--display", "none"})
	h.cleanDesktops()
	return h
}

// onDesktop is a command run as a client of desktop d.
func onDesktop(d wire.DesktopRow, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+d.Display, "XAUTHORITY="+d.Authority)
	return cmd
}

// framedByWM reports whether the top-level window with name (its title or
// class, as xwininfo -tree quotes them) has the frame extents a window
// manager sets on the windows it manages.
func framedByWM(d wire.DesktopRow, name string) bool {
	out, err := onDesktop(d, "xwininfo", "-root", "-tree").Output()
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.Contains(l, `"`+name+`"`) {
			if p, err := onDesktop(d, "xprop", "-id", f[0], "_NET_FRAME_EXTENTS").Output(); err == nil && strings.Contains(string(p), "_NET_FRAME_EXTENTS(CARDINAL) = ") {
				return true
			}
		}
	}
	return false
}

// TestDesktopServerKilledByHandIsNoticedAndCleaned: kill -9 of a desktop's
// X server is noticed, the desktop listed dead with the reason, its files
// gone; the screen methods say so; rm removes the record.
func TestDesktopServerKilledByHandIsNoticedAndCleaned(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := desktopHome(t)
	dk := h.newDesktop("k1", "--wm", "none")
	syscall.Kill(dk.ServerPID, syscall.SIGKILL)
	await(t, 10*time.Second, "k1 listed dead", func() bool { d, _ := h.desktop("k1"); return d.Status == wire.DesktopDead })
	d, _ := h.desktop("k1")
	if !strings.Contains(d.Reason, "X server exited") {
		t.Errorf("reason %q", d.Reason)
	}
	num := strings.TrimPrefix(dk.Display, ":")
	for _, p := range []string{"/tmp/.X11-unix/X" + num, "/tmp/.X" + num + "-lock", dk.Authority} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the server died", p)
		}
	}
	if _, errOut, code := h.agentctl("", "screenshot", "--desktop", "k1", "-o", "-"); code != 24 || !strings.Contains(errOut, "dead") {
		t.Errorf("screenshot of a dead desktop: exit %d %q, want 24 saying dead", code, errOut)
	}
	if _, errOut, code := h.agentctl("", "spawn", "s", "--desktop", "k1", "--", "true"); code != 24 || !strings.Contains(errOut, "desktop new") {
		t.Errorf("spawn on a dead desktop: exit %d %q, want 24 pointing at desktop new", code, errOut)
	}
	h.ctl(0, "desktop", "rm", "k1")
	if len(h.desktops()) != 0 {
		t.Error("k1 still listed after rm")
	}
}

// TestDesktopCapRefusesTheNinth: eight desktops run; the ninth is busy,
// saying the limit, and leaves nothing behind.
func TestDesktopCapRefusesTheNinth(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := desktopHome(t)
	for i := 1; i <= 8; i++ {
		h.newDesktop("c"+strconv.Itoa(i), "--wm", "none", "--size", "320x320")
	}
	_, errOut, code := h.agentctl("", "desktop", "new", "c9", "--wm", "none")
	if code != 18 || !strings.Contains(errOut, "8 desktops are running, the limit") {
		t.Errorf("the ninth desktop: exit %d %q, want 18 naming the limit", code, errOut)
	}
	if _, err := os.Lstat(filepath.Join(h.state, "agentd", "desktops", "c9")); err == nil {
		t.Error("the refused desktop left its directory")
	}
}

// TestSpawnDesktopNewGoesWithItsSession: a desktop made by spawn --desktop
// new is removed when its session ends, unless kept.
func TestSpawnDesktopNewGoesWithItsSession(t *testing.T) {
	needDesktopTools(t, "openbox")
	t.Parallel()
	h := desktopHome(t)
	h.ctl(0, "spawn", "s1", "--desktop", "new", "--", "sleep", "600")
	h.ctl(0, "spawn", "s2", "--desktop", "new", "--keep-desktop", "--", "sleep", "600")
	d1, ok1 := h.desktop("s1")
	d2, ok2 := h.desktop("s2")
	if !ok1 || !ok2 || d1.Session != "s1" || d1.Keep || !d2.Keep || d1.Status != wire.DesktopRunning {
		t.Fatalf("desktops made by spawn: %+v", h.desktops())
	}
	h.ctl(0, "stop", "s1")
	h.ctl(0, "stop", "s2")
	await(t, 15*time.Second, "s1's desktop to go with it", func() bool { _, ok := h.desktop("s1"); return !ok })
	if alive(d1.ServerPID) {
		t.Error("s1's desktop's server still runs")
	}
	if d, ok := h.desktop("s2"); !ok || d.Status != wire.DesktopRunning {
		t.Errorf("the kept desktop: %+v %v", d, ok)
	}
}

// TestDesktopClipboard: text set through agentctl is what a real client
// (Tk) pastes, and what agentctl reads back; the audit log has its length
// only.
func TestDesktopClipboard(t *testing.T) {
	needDesktopTools(t, "python3")
	if exec.Command("python3", "-c", "import tkinter").Run() != nil {
		t.Skip("python3 has no tkinter")
	}
	t.Parallel()
	h := desktopHome(t)
	dk := h.newDesktop("cb", "--wm", "none")
	text := "secret clip ünïcödé 漢字"
	h.ctl(0, "desktop", "clip", "cb", "set", text)
	if out := h.ctl(0, "desktop", "clip", "cb"); out != text {
		t.Errorf("clip get: %q, want %q", out, text)
	}
	tk := exec.Command("python3", "-c", "import tkinter; r=tkinter.Tk(); print(r.clipboard_get(), end='')")
	tk.Env = append(os.Environ(), "DISPLAY="+dk.Display, "XAUTHORITY="+dk.Authority)
	if out, err := tk.Output(); err != nil || string(out) != text {
		t.Errorf("Tk pasted %q (%v), want %q", out, err, text)
	}
	// And the other way: what a Tk program copies, agentctl reads.
	owner := exec.Command("python3", "-c", "import tkinter, sys\nr=tkinter.Tk()\nr.clipboard_clear()\nr.clipboard_append('copied by tk ✓')\nr.update()\nprint('ready', flush=True)\nr.mainloop()")
	owner.Env = append(os.Environ(), "DISPLAY="+dk.Display, "XAUTHORITY="+dk.Authority)
	ready, _ := owner.StdoutPipe()
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	if _, err := ready.Read(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	if out := h.ctl(0, "desktop", "clip", "cb", "get"); out != "copied by tk ✓" {
		t.Errorf("clip get of what Tk copied: %q", out)
	}
	big := strings.Repeat("x", wire.MaxClipBytes+1)
	if _, errOut, code := h.agentctl(big, "desktop", "clip", "cb", "set", "-"); code != 2 || !strings.Contains(errOut, "64 KiB") {
		t.Errorf("65537 bytes: exit %d %q, want 2 naming 64 KiB", code, errOut)
	}
	audit, _ := os.ReadFile(filepath.Join(h.state, "agentd", "audit.jsonl"))
	if strings.Contains(string(audit), "secret clip") || !strings.Contains(string(audit), `"kind":"clipboard_set","bytes":`+strconv.Itoa(len(text))) {
		t.Errorf("audit log must hold the clipboard's length, never its text:\n%s", audit)
	}
}

// TestDesktopClipboardSurvivesAgentdRestart: the desktop's worker owns
// the clipboard's text, not agentd, so text set before a kill -9 of
// agentd is what the next agentd reads (through its own X connection, a
// conversion the worker answers), at the 64 KiB limit.
func TestDesktopClipboardSurvivesAgentdRestart(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := newHome(t)
	args := []string{"--desktops", "--display", "none"}
	d := h.startDaemon(args)
	h.cleanDesktops()
	h.newDesktop("cr", "--wm", "none")
	text := "kept ünïcödé 漢字\n"
	text += strings.Repeat("x", wire.MaxClipBytes-len(text))
	if _, errOut, code := h.agentctl(text, "desktop", "clip", "cr", "set", "-"); code != 0 {
		t.Fatalf("clip set: exit %d %s", code, errOut)
	}
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	h.startDaemon(args)
	if out := h.ctl(0, "desktop", "clip", "cr", "get"); out != text {
		t.Errorf("clip get after kill -9 and restart: %d bytes (%.40q...), want the %d bytes set before", len(out), out, len(text))
	}
}

// TestDesktopBadInput: each refusal names the problem and has its exit
// code, and nothing is left behind.
func TestDesktopBadInput(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := desktopHome(t)
	h.newDesktop("taken", "--wm", "none")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"desktop", "new", "--size", "100x800"}, 2, "320 to 7680"},
		{[]string{"desktop", "new", "--size", "7681x800"}, 2, "320 to 7680"},
		{[]string{"desktop", "new", "--size", "big"}, 2, "WIDTHxHEIGHT"},
		{[]string{"desktop", "new", "--wm", "kwin"}, 2, "openbox or none"},
		{[]string{"desktop", "new", "Bad_Name"}, 2, "not valid"},
		{[]string{"desktop", "new", "taken", "--wm", "none"}, 16, "exists"},
		{[]string{"desktop", "new", "--layout", "zz"}, 2, "unknown"},
		{[]string{"desktop", "rm", "nope"}, 24, "desktop ls"},
		{[]string{"screenshot", "--desktop", "nope", "-o", "-"}, 24, "does not exist"},
		{[]string{"spawn", "s", "--desktop", "gone", "--", "true"}, 24, "does not exist"},
		{[]string{"spawn", "s", "--desktop", "taken", "--keep-desktop", "--", "true"}, 2, "new"},
		{[]string{"desktop", "clip", "taken", "paste"}, 2, "usage"},
	} {
		_, errOut, code := h.agentctl("", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("agentctl %s: exit %d %q, want %d with %q", strings.Join(c.args, " "), code, errOut, c.code, c.want)
		}
	}
	// A spawn that fails takes the desktop it made with it.
	if _, errOut, code := h.agentctl("", "spawn", "nope", "--desktop", "new", "--", "/nonexistent/program"); code != 14 {
		t.Errorf("spawn of a missing program on a new desktop: exit %d %q, want 14", code, errOut)
	}
	if ls := h.desktops(); len(ls) != 1 {
		t.Errorf("after the bad input: %+v, want only the one desktop", ls)
	}
	// Desktops disabled: refused, saying how to enable them.
	h2 := newHome(t)
	h2.startDaemon([]string{"--display", "none"})
	for _, args := range [][]string{{"desktop", "new"}, {"act", "--desktop", "d", `[{"kind":"move","x":1,"y":1}]`},
		{"screenshot", "--desktop", "d", "-o", "-"}, {"spawn", "s", "--desktop", "new", "--", "true"}} {
		if _, errOut, code := h2.agentctl("", args...); code != 22 || !strings.Contains(errOut, "desktops = true") {
			t.Errorf("agentctl %s with desktops disabled: exit %d %q, want 22 saying desktops = true", strings.Join(args, " "), code, errOut)
		}
	}
	// Xvfb missing: the error names the package.
	h3 := newHome(t)
	h3.startDaemon([]string{"--desktops", "--display", "none"}, "PATH="+bin.dir)
	if _, errOut, code := h3.agentctl("", "desktop", "new", "--wm", "none"); code != 14 || !strings.Contains(errOut, "apt install xvfb") {
		t.Errorf("Xvfb missing: exit %d %q, want 14 naming the package", code, errOut)
	}
	if _, errOut, code := h3.agentctl("", "desktop", "new"); code != 14 || !strings.Contains(errOut, "Debian package openbox") {
		t.Errorf("openbox missing: exit %d %q, want 14 naming the package", code, errOut)
	}
}

// TestKillSwitchStopsDesktopBatches: the person's pointer in a corner of
// the person's screen refuses a desktop's batch too.
func TestKillSwitchStopsDesktopBatches(t *testing.T) {
	needDesktopTools(t, "xdotool")
	t.Parallel()
	person := xvfbtest.Start(t, xvfbtest.Options{})
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--display", person.Display})
	h.cleanDesktops()
	h.newDesktop("ks", "--wm", "none")
	h.ctl(0, "act", "--desktop", "ks", `[{"kind":"move","x":10,"y":10}]`)
	if out, err := person.Command("xdotool", "mousemove", "0", "0").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	if _, errOut, code := h.agentctl("", "act", "--desktop", "ks", `[{"kind":"move","x":20,"y":20}]`); code != 22 || !strings.Contains(errOut, "kill switch") {
		t.Errorf("desktop batch with the person's pointer in a corner: exit %d %q, want 22 naming the kill switch", code, errOut)
	}
	person.Command("xdotool", "mousemove", "500", "400").Run()
	h.ctl(0, "act", "--desktop", "ks", `[{"kind":"move","x":20,"y":20}]`)
}

// TestDesktopRmWhileABatchRuns: rm is refused (busy, naming --force) while
// a batch runs on the desktop; --force removes it at once and the batch
// ends saying the desktop was removed.
func TestDesktopRmWhileABatchRuns(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := desktopHome(t)
	h.newDesktop("rb", "--wm", "none")
	type res struct {
		errOut string
		code   int
	}
	done := make(chan res, 1)
	go func() {
		_, errOut, code := h.agentctl("", "act", "--desktop", "rb", `[{"kind":"wait","ms":5000},{"kind":"wait","ms":5000}]`)
		done <- res{errOut, code}
	}()
	await(t, 10*time.Second, "the batch to hold rb", func() bool { d, _ := h.desktop("rb"); return d.Acting })
	if _, errOut, code := h.agentctl("", "desktop", "rm", "rb"); code != 18 || !strings.Contains(errOut, "--force") {
		t.Errorf("rm while a batch runs: exit %d %q, want 18 naming --force", code, errOut)
	}
	start := time.Now()
	h.ctl(0, "desktop", "rm", "--force", "rb")
	r := <-done
	if took := time.Since(start); r.code != 24 || !strings.Contains(r.errOut, "desktop rb was removed") {
		t.Errorf("the batch on a desktop removed with --force: exit %d %q after %s, want 24 saying it was removed", r.code, r.errOut, took)
	}
	if _, ok := h.desktop("rb"); ok {
		t.Error("rb still listed")
	}
}

// TestIdleDesktopIsRemoved: a desktop unused for desktop_idle_timeout is
// removed; one with a live session started on it is kept.
func TestIdleDesktopIsRemoved(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--display", "none", "--desktop-idle-timeout", "1s"})
	h.cleanDesktops()
	h.newDesktop("idle", "--wm", "none")
	h.newDesktop("used", "--wm", "none")
	h.ctl(0, "spawn", "u", "--desktop", "used", "--", "sleep", "600")
	await(t, 15*time.Second, "the idle desktop to be removed", func() bool { _, ok := h.desktop("idle"); return !ok })
	if d, ok := h.desktop("used"); !ok || d.Status != wire.DesktopRunning {
		t.Errorf("the desktop with a live session: %+v %v, want kept", d, ok)
	}
}

// TestScreenRecordPerDesktop: a desktop's batches and their observations
// make its own screen record; the person's holds none of them.
func TestScreenRecordPerDesktop(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--display", "none", "--record-screen"})
	h.cleanDesktops()
	h.newDesktop("rec", "--wm", "none", "--size", "640x480")
	h.ctl(0, "act", "--desktop", "rec", `[{"kind":"move","x":10,"y":10}]`)
	h.ctl(0, "act", "--desktop", "rec", `[{"kind":"move","x":20,"y":20}]`)
	var r wire.RecordScreenResult
	dir := filepath.Join(t.TempDir(), "rec")
	json.Unmarshal([]byte(h.ctl(0, "--json", "record", "--screen", "--desktop", "rec", "-o", dir)), &struct{ Result *wire.RecordScreenResult }{&r})
	if r.Batches != 2 || r.Images != 2 {
		t.Errorf("the desktop's record: %+v, want 2 batches with 2 images", r)
	}
	json.Unmarshal([]byte(h.ctl(0, "--json", "record", "--screen", "-o", filepath.Join(t.TempDir(), "person"))), &struct{ Result *wire.RecordScreenResult }{&r})
	if r.Batches != 0 {
		t.Errorf("the person's record holds %d batches of the desktop's", r.Batches)
	}
}
