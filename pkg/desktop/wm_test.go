package desktop

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWindowManagerStartsWithTheFirstWindow: an openbox desktop runs no
// window manager while no window is shown; an xterm's window starts
// openbox, which frames it; an openbox that dies is started again, at most
// wmRestarts times; rm leaves no openbox.
func TestWindowManagerStartsWithTheFirstWindow(t *testing.T) {
	needXvfb(t)
	for _, p := range []string{"openbox", "xterm", "xprop", "xdotool"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	t.Parallel()
	m := newManager(t, 1480, 1489, nil)
	ctx := context.Background()
	d, err := m.New(ctx, Spec{Name: "lazy", WM: WMOpenbox})
	if err != nil {
		t.Fatal(err)
	}
	if d.WindowManager.PID != 0 || !d.WMPending || d.WMState() != "openbox (starts with the first window)" {
		t.Fatalf("a new openbox desktop: window manager %+v, state %q; want none yet", d.WindowManager, d.WMState())
	}
	if n := groupMembers(t, d.Worker.PID, "openbox"); n != 0 {
		t.Fatalf("%d openbox processes run on an idle desktop", n)
	}
	xprop := func(args ...string) string {
		cmd := exec.Command("xprop", append([]string{"-display", d.Display}, args...)...)
		cmd.Env = append(os.Environ(), "XAUTHORITY="+d.Authority)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := xprop("-root", "_NET_SUPPORTING_WM_CHECK"); strings.Contains(out, "window id") {
		t.Fatalf("an idle desktop answers _NET_SUPPORTING_WM_CHECK: %q", out)
	}

	xterm := exec.Command("xterm", "-display", d.Display, "-T", "lazywm", "-geometry", "40x5+10+10")
	xterm.Env = append(os.Environ(), "XAUTHORITY="+d.Authority)
	if err := xterm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xterm.Process.Kill(); xterm.Wait() })
	// As an agent would: the window is seen (mapped, not yet framed) and
	// a batch comes at once, maybe before the worker heard of the window.
	// AwaitWindowManager returns once openbox said it adopted the window:
	// by then it answers the EWMH check, has framed the xterm and has given
	// it the keyboard's focus (not to openbox's own window, where openbox
	// leaves it otherwise), so keys typed reach the program. Each is
	// checked once, at that moment.
	await(t, "the xterm's window to show", 15*time.Second, func() bool {
		xdotool := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^lazywm$")
		xdotool.Env = append(os.Environ(), "DISPLAY="+d.Display, "XAUTHORITY="+d.Authority)
		return xdotool.Run() == nil
	})
	waited, err := awaitWM(m, "lazy")
	if err != nil {
		t.Fatalf("AwaitWindowManager after %s: %v", waited, err)
	}
	got, _ := m.Get("lazy")
	t.Logf("openbox said it runs %s after the window was seen", waited)
	if got.WindowManager.PID == 0 || got.WMPending || got.WMStarting || got.WMState() != "openbox" {
		t.Errorf("after AwaitWindowManager: state %q; want openbox", got.WMState())
	}
	if out := xprop("-root", "_NET_SUPPORTING_WM_CHECK"); !strings.Contains(out, "window id") {
		t.Errorf("openbox said it runs, but the root has no _NET_SUPPORTING_WM_CHECK: %q", out)
	}
	if out := xprop("-name", "lazywm", "_NET_FRAME_EXTENTS"); !strings.Contains(out, "=") {
		t.Errorf("openbox said it runs, but the xterm is not framed: %q", out)
	}
	xdotool := exec.Command("xdotool", "getwindowfocus", "getwindowname")
	xdotool.Env = append(os.Environ(), "DISPLAY="+d.Display, "XAUTHORITY="+d.Authority)
	if focus, _ := xdotool.CombinedOutput(); strings.TrimSpace(string(focus)) != "lazywm" {
		t.Errorf("openbox said it runs, but the focus is on %q, not the xterm", focus)
	}
	// Then the worker sends openbox one event, the property on the root,
	// naming itself.
	await(t, "the worker's nudge on the root", 10*time.Second, func() bool {
		return strings.Contains(xprop("-root", wmNudgeProperty), "= "+strconv.Itoa(d.Worker.PID))
	})

	// Killed, it is started again, wmRestarts times; then the desktop
	// goes on without one and says why.
	pid := got.WindowManager.PID
	for i := 0; i <= wmRestarts; i++ {
		syscall.Kill(pid, syscall.SIGKILL)
		await(t, "the window manager's exit to be handled", 15*time.Second, func() bool {
			got, _ = m.Get("lazy")
			return got.WindowManager.PID != pid
		})
		pid = got.WindowManager.PID
		if i < wmRestarts && pid == 0 {
			t.Fatalf("the window manager was not started again after %d kills: %+v", i+1, got)
		}
	}
	if pid != 0 || got.WMState() != "openbox (not running)" || !strings.Contains(got.Reason, "3 restarts") || got.Status != StatusRunning {
		t.Fatalf("after %d kills: window manager %+v, state %q, reason %q, status %s", wmRestarts+1, got.WindowManager, got.WMState(), got.Reason, got.Status)
	}
	// Without a manager, nothing adopts windows: a batch does not wait.
	if waited, err := awaitWM(m, "lazy"); err != nil {
		t.Errorf("AwaitWindowManager with no manager left: %v after %s", err, waited)
	}
	if err := m.Remove(ctx, "lazy"); err != nil {
		t.Fatal(err)
	}
	if n := groupMembers(t, d.Worker.PID, ""); n != 0 {
		t.Errorf("%d processes left in the desktop's group after rm", n)
	}
}

// awaitWM is what an input batch does: it reads the desktop's record,
// then waits for its window manager.
func awaitWM(m *Manager, name string) (time.Duration, error) {
	d, err := m.Get(name)
	if err != nil {
		return 0, err
	}
	return AwaitWindowManager(context.Background(), d)
}

// groupMembers counts the processes in group pgid whose command is comm
// (any, when comm is "").
func groupMembers(t *testing.T, pgid int, comm string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open {
			continue
		}
		f := strings.Fields(s[shut+1:]) // state ppid pgrp ...
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && (comm == "" || s[open+1:shut] == comm) {
			n++
		}
	}
	return n
}

// BenchmarkAwaitWindowManager is what an input batch on a desktop now
// pays before it runs when there is nothing to wait for (reading the
// desktop's record, then AwaitWindowManager), beside its floor, reading
// the record alone (Get), which every batch already did: "running",
// openbox runs (the record says so); "idle", no window yet (the worker
// is asked on its control socket and looks for a shown window).
//
//	go test -run '^$' -bench AwaitWindowManager -benchtime 200x ./pkg/desktop
func BenchmarkAwaitWindowManager(b *testing.B) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		b.Skip("Xvfb is not installed")
	}
	for _, p := range []string{"openbox", "xterm"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("%s is not installed", p)
		}
	}
	m := newManager(b, 1492, 1495, nil)
	ctx := context.Background()
	d, err := m.New(ctx, Spec{Name: "bench", WM: WMOpenbox})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.New(ctx, Spec{Name: "idle", WM: WMOpenbox}); err != nil {
		b.Fatal(err)
	}
	xterm := exec.Command("xterm", "-display", d.Display, "-T", "bench")
	xterm.Env = append(os.Environ(), "XAUTHORITY="+d.Authority)
	if err := xterm.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { xterm.Process.Kill(); xterm.Wait() })
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := m.Get("bench")
		if err == nil && got.WMState() == WMOpenbox {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("openbox did not run in 15 s: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Run("get-floor", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Get("bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct{ name, desktop string }{{"await-running", "bench"}, {"await-idle", "idle"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := awaitWM(m, c.desktop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
