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
	var got *Desktop
	await(t, "openbox to start with the xterm", 15*time.Second, func() bool {
		got, err = m.Get("lazy")
		return err == nil && got.WindowManager.PID != 0
	})
	if got.WMPending || got.WMState() != "openbox" {
		t.Errorf("with a window shown: state %q, pending %v; want openbox", got.WMState(), got.WMPending)
	}
	// openbox adopted the window already shown: it answers the EWMH check
	// and frames the xterm.
	await(t, "openbox to frame the xterm", 15*time.Second, func() bool {
		return strings.Contains(xprop("-root", "_NET_SUPPORTING_WM_CHECK"), "window id") &&
			strings.Contains(xprop("-name", "lazywm", "_NET_FRAME_EXTENTS"), "=")
	})

	// The keyboard's focus goes to the window that was shown first, not to
	// openbox's own (where openbox leaves it otherwise): keys typed reach
	// the program. openbox frames its windows before it focuses one.
	await(t, "the focus on the xterm", 10*time.Second, func() bool {
		xdotool := exec.Command("xdotool", "getwindowfocus", "getwindowname")
		xdotool.Env = append(os.Environ(), "DISPLAY="+d.Display, "XAUTHORITY="+d.Authority)
		focus, _ := xdotool.CombinedOutput()
		return strings.TrimSpace(string(focus)) == "lazywm"
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
	if err := m.Remove(ctx, "lazy"); err != nil {
		t.Fatal(err)
	}
	if n := groupMembers(t, d.Worker.PID, ""); n != 0 {
		t.Errorf("%d processes left in the desktop's group after rm", n)
	}
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
