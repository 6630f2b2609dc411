package test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDesktopWindowManagerStartsWithTheFirstWindow: a new openbox desktop
// runs no openbox while no window is shown (an idle desktop needs no
// window manager); a program spawned on it starts openbox, which frames
// its window and answers the EWMH check; rm leaves no process.
func TestDesktopWindowManagerStartsWithTheFirstWindow(t *testing.T) {
	needDesktopTools(t, "openbox", "xterm", "xprop", "xwininfo")
	t.Parallel()
	h := desktopHome(t)
	d := h.newDesktop("lazy") // openbox, the default
	if d.WM != "openbox" {
		t.Fatalf("the default desktop's window manager is %q, want openbox", d.WM)
	}
	if pids := groupPIDs(d.WorkerPID, "openbox"); len(pids) != 0 {
		t.Fatalf("openbox runs on an idle desktop: %v", pids)
	}
	x := func(prog string, args ...string) string {
		out, _ := onDesktop(d, prog, args...).CombinedOutput()
		return string(out)
	}
	if out := x("xprop", "-root", "_NET_SUPPORTING_WM_CHECK"); strings.Contains(out, "window id") {
		t.Fatalf("an idle desktop has a window manager: %q", out)
	}

	h.ctl(0, "spawn", "xt", "--desktop", "lazy", "--", "xterm", "-T", "lazyterm", "-geometry", "40x5+30+30")
	var obs []int
	await(t, 15*time.Second, "openbox to start with the xterm's window", func() bool {
		obs = groupPIDs(d.WorkerPID, "openbox")
		return len(obs) == 1
	})
	await(t, 15*time.Second, "openbox to manage the xterm", func() bool {
		return strings.Contains(x("xprop", "-root", "_NET_SUPPORTING_WM_CHECK"), "window id") &&
			strings.Contains(x("xprop", "-name", "lazyterm", "_NET_FRAME_EXTENTS"), "=")
	})
	// The frame: the xterm's window is no longer a child of the root.
	tree := x("xwininfo", "-root", "-children")
	if strings.Contains(tree, `"lazyterm"`) {
		t.Errorf("the xterm is still a child of the root, not framed:\n%s", tree)
	}

	h.ctl(0, "desktop", "rm", "--force", "lazy")
	if alive(obs[0]) {
		t.Errorf("openbox (pid %d) outlived desktop rm", obs[0])
	}
	if left := groupPIDs(d.WorkerPID, ""); len(left) != 0 {
		t.Errorf("desktop rm left processes in the desktop's group: %v", left)
	}
}

// groupPIDs lists the live processes of group pgid whose command is comm
// (any, when comm is "").
func groupPIDs(pgid int, comm string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
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
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) && (comm == "" || s[open+1:shut] == comm) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestDesktopTypesIntoTheFirstWindowAtOnce: on a new desktop, a batch sent
// the moment its first window shows, with no click, types into it. The
// window manager starts with that window and reparents it; keys typed
// before it has adopted the window and focused it would go nowhere (the
// pointer is not over the window), so agentd holds the batch until
// openbox says it runs. Three desktops, three tries.
func TestDesktopTypesIntoTheFirstWindowAtOnce(t *testing.T) {
	needDesktopTools(t, "openbox", "xterm", "xdotool")
	t.Parallel()
	h := desktopHome(t)
	dir := t.TempDir()
	for i := range 3 {
		name := "first" + strconv.Itoa(i)
		d := h.newDesktop(name)
		typed := filepath.Join(dir, name+".txt")
		// An xterm away from the pointer (the screen's middle).
		h.ctl(0, "spawn", name, "--desktop", name, "--", "xterm", "-T", name, "-geometry", "30x4+0+0",
			"-e", "sh", "-c", "cat > "+typed+"; exec sleep 600")
		await(t, 15*time.Second, "the xterm's window to show", func() bool {
			return onDesktop(d, "xdotool", "search", "--onlyvisible", "--name", "^"+name+"$").Run() == nil
		})
		h.ctl(0, "act", "--desktop", name, `{"actions":[{"kind":"type","text":"typed at once\n"},{"kind":"key","key":"ctrl+d"}],"observe":false}`)
		await(t, 10*time.Second, "the text in "+typed, func() bool {
			b, _ := os.ReadFile(typed)
			return string(b) == "typed at once\n"
		})
		h.ctl(0, "rm", "--force", name)
		h.ctl(0, "desktop", "rm", "--force", name)
	}
}
