package test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// bareXvfb starts Xvfb as a desktop's is started (explicit display,
// -displayfd, -auth, -nolisten tcp, -noreset) and returns once it wrote its
// number: the floor a desktop's start is held to.
func bareXvfb(b *testing.B, size string) (*exec.Cmd, time.Duration) {
	b.Helper()
	auth := filepath.Join(b.TempDir(), "auth")
	os.WriteFile(auth, nil, 0o600)
	for num := 1250; num < 1300; num++ {
		if _, err := os.Lstat("/tmp/.X11-unix/X" + strconv.Itoa(num)); err == nil {
			continue
		}
		if _, err := os.Lstat("/tmp/.X" + strconv.Itoa(num) + "-lock"); err == nil {
			continue
		}
		r, w, _ := os.Pipe()
		cmd := exec.Command("Xvfb", ":"+strconv.Itoa(num), "-displayfd", "3", "-auth", auth, "-nolisten", "tcp", "-noreset", "-screen", "0", size+"x24")
		cmd.ExtraFiles = []*os.File{w}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		w.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		took := time.Since(start)
		r.Close()
		if err == nil && strings.TrimSpace(line) == strconv.Itoa(num) {
			return cmd, took
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	b.Fatal("no free display for the bare Xvfb")
	return nil, 0
}

func stopBare(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
}

// procMem is a process's memory from /proc/PID/smaps_rollup, in KiB:
// resident (RSS, shared pages counted whole), proportional (PSS: each
// shared page divided among the processes that map it, so the PSS of all
// processes sums to what they hold together) and private (Private_Clean +
// Private_Dirty: pages no other process maps, what ending it frees).
type procMem struct {
	Comm              string
	PID               int
	RSS, PSS, Private int
}

func (m *procMem) add(o procMem) {
	m.RSS, m.PSS, m.Private = m.RSS+o.RSS, m.PSS+o.PSS, m.Private+o.Private
}

func (m procMem) String() string {
	return fmt.Sprintf("%-12s pid %-7d rss %6.1f MB  pss %6.1f MB  private %6.1f MB", m.Comm, m.PID,
		float64(m.RSS)/1024, float64(m.PSS)/1024, float64(m.Private)/1024)
}

func memOf(pid int) procMem {
	m := procMem{PID: pid}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	m.Comm = strings.TrimSpace(string(comm))
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			m.RSS = n
		case "Pss:":
			m.PSS = n
		case "Private_Clean:", "Private_Dirty:":
			m.Private += n
		}
	}
	return m
}

// groupMem returns the memory of each process of group pgid and their sum.
func groupMem(pgid int) (procs []procMem, sum procMem) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b)[i+2:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			m := memOf(pid)
			procs = append(procs, m)
			sum.add(m)
		}
	}
	sum.Comm = "group"
	return procs, sum
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkDesktops measures, in one run: a desktop's readiness (new to
// the first screenshot) against a bare Xvfb -displayfd start; the memory
// of an idle desktop's whole group against a bare idle Xvfb; and four
// desktops taking 24-action batches at once against one alone. Its
// desktops are Xvfb ones (--server xvfb); BenchmarkDesktopsXvnc measures
// Xvnc's.
//
//	go test -run '^$' -bench 'Desktops$' -benchtime 1x ./test
func BenchmarkDesktops(b *testing.B) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		b.Skip("Xvfb is not installed")
	}
	h := newHomeTB(b)
	h.startDaemon([]string{"--desktops", "--display", "none"})
	ctx := context.Background()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const rounds = 15
	for range b.N {
		// Readiness.
		var bare, none, openbox []time.Duration
		for i := range rounds {
			cmd, took := bareXvfb(b, "1280x800")
			bare = append(bare, took)
			stopBare(cmd)
			none = append(none, desktopReady(ctx, b, c, fmt.Sprintf("r%d-none", i), wire.WMNone, wire.ServerXvfb))
			openbox = append(openbox, desktopReady(ctx, b, c, fmt.Sprintf("r%d-openbox", i), wire.WMOpenbox, wire.ServerXvfb))
		}
		b.ReportMetric(float64(median(bare).Microseconds())/1000, "bare-xvfb-ms")
		b.ReportMetric(float64(median(none).Microseconds())/1000, "ready-wm-none-ms")
		b.ReportMetric(float64(median(openbox).Microseconds())/1000, "ready-openbox-ms")

		// Memory of an idle desktop (its whole group: worker, Xvfb, and
		// the bus and window manager when they run) against a bare Xvfb,
		// both idle, measured while both run so that they share the X
		// server's libraries alike (PSS divides them). Each desktop is
		// measured fresh, then after one screenshot through the daemon
		// (which leaves its MIT-SHM segment attached to the server), then
		// with an xterm's window on it (openbox starts with the first
		// window; the xterm is not the desktop's and is not counted).
		cmd, _ := bareXvfb(b, "1280x800")
		for _, wm := range []string{wire.WMNone, wire.WMOpenbox} {
			d, err := c.DesktopNew(ctx, wire.DesktopNewParams{Name: "mem-" + wm, WM: wm, Server: wire.ServerXvfb})
			if err != nil {
				b.Fatal(err)
			}
			whens := []string{"fresh", "shot"}
			if _, err := exec.LookPath("xterm"); err == nil {
				whens = append(whens, "window")
			}
			var xterm *exec.Cmd
			for _, when := range whens {
				switch when {
				case "shot":
					c.Screenshot(ctx, wire.ScreenshotParams{Desktop: d.Name})
				case "window":
					// A program's window (outside the group, so not
					// counted): openbox starts with it.
					xterm = exec.Command("xterm", "-geometry", "80x24+20+20")
					xterm.Env = append(os.Environ(), "DISPLAY="+d.Display, "XAUTHORITY="+d.Authority)
					if err := xterm.Start(); err != nil {
						b.Fatal(err)
					}
					if wm == wire.WMOpenbox {
						await(b, 15*time.Second, "openbox to start with the xterm", func() bool {
							procs, _ := groupMem(d.WorkerPID)
							return slices.ContainsFunc(procs, func(p procMem) bool { return p.Comm == "openbox" })
						})
					}
				}
				time.Sleep(500 * time.Millisecond) // a pause in the measurement, not a synchronisation: let both settle idle
				bare := memOf(cmd.Process.Pid)
				procs, sum := groupMem(d.WorkerPID)
				for _, p := range procs {
					b.Logf("desktop --wm %s, %s: %s", wm, when, p)
				}
				b.Logf("desktop --wm %s, %s: %s", wm, when, sum)
				b.Logf("bare Xvfb, same moment:  %s", bare)
				tag := "desktop-" + wm + "-" + when
				b.ReportMetric(float64(sum.RSS-bare.RSS)/1024, tag+"-rss+MB")
				b.ReportMetric(float64(sum.PSS-bare.PSS)/1024, tag+"-pss+MB")
				b.ReportMetric(float64(sum.Private-bare.Private)/1024, tag+"-private+MB")
			}
			c.DesktopRm(ctx, wire.DesktopRmParams{Name: d.Name})
			if xterm != nil {
				xterm.Process.Kill()
				xterm.Wait()
			}
		}
		stopBare(cmd)

		// Four desktops at once against one.
		var names []string
		for i := range 4 {
			n := "act" + strconv.Itoa(i)
			if _, err := c.DesktopNew(ctx, wire.DesktopNewParams{Name: n, WM: wire.WMNone, Server: wire.ServerXvfb}); err != nil {
				b.Fatal(err)
			}
			names = append(names, n)
		}
		batch := func(desk string, observe bool) {
			var acts []wire.Action
			for j := range 24 {
				x, y := float64(100+j*10), float64(100+j*5)
				kind := wire.ActionKind("move")
				if j%2 == 1 {
					kind = "click"
				}
				acts = append(acts, wire.Action{Kind: kind, X: &x, Y: &y})
			}
			if _, err := c.Act(ctx, wire.ActParams{Desktop: desk, Actions: acts, Observe: &observe}); err != nil {
				b.Error(err)
			}
		}
		for _, observe := range []bool{true, false} {
			var one, four []time.Duration
			for range 7 {
				start := time.Now()
				batch(names[0], observe)
				one = append(one, time.Since(start))
				start = time.Now()
				var wg sync.WaitGroup
				for _, n := range names {
					wg.Add(1)
					go func() { defer wg.Done(); batch(n, observe) }()
				}
				wg.Wait()
				four = append(four, time.Since(start))
			}
			tag := "observed"
			if !observe {
				tag = "unobserved"
			}
			b.ReportMetric(float64(median(one).Microseconds())/1000, tag+"-one-ms")
			b.ReportMetric(float64(median(four).Microseconds())/1000, tag+"-four-ms")
			b.ReportMetric(float64(median(four))/float64(median(one)), tag+"-four/one")
		}
		for _, n := range names {
			c.DesktopRm(ctx, wire.DesktopRmParams{Name: n})
		}
	}
}

// desktopReady times one desktop's readiness as an agent meets it: from
// agent.desktop_new to the end of its first screenshot; the desktop is
// removed after, outside the time.
func desktopReady(ctx context.Context, b *testing.B, c *wire.Client, name, wm, server string) time.Duration {
	b.Helper()
	start := time.Now()
	if _, err := c.DesktopNew(ctx, wire.DesktopNewParams{Name: name, WM: wm, Server: server}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Screenshot(ctx, wire.ScreenshotParams{Desktop: name}); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	if err := c.DesktopRm(ctx, wire.DesktopRmParams{Name: name}); err != nil {
		b.Fatal(err)
	}
	return took
}
