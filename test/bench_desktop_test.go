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

// memKB is a process's resident memory and the part of it that is its
// own (Private_Dirty: anonymous pages no other process shares, which the
// kernel cannot drop; the rest is shared libraries' file pages).
func memKB(pid int) (rss, private int) {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			rss = n
		case "Private_Dirty:":
			private = n
		}
	}
	return rss, private
}

// groupMemKB sums memKB over a process group.
func groupMemKB(pgid int) (rss, private int) {
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
			r, p := memKB(pid)
			rss, private = rss+r, private+p
		}
	}
	return rss, private
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

		// Memory of an idle desktop (its whole group: worker, Xvfb,
		// bus, window manager) against a bare Xvfb, both shown once.
		cmd, _ := bareXvfb(b, "1280x800")
		time.Sleep(500 * time.Millisecond) // a pause in the measurement, not a synchronisation: let both settle idle
		bareRSS, barePrivate := memKB(cmd.Process.Pid)
		stopBare(cmd)
		for _, wm := range []string{wire.WMNone, wire.WMOpenbox} {
			d, err := c.DesktopNew(ctx, wire.DesktopNewParams{Name: "mem-" + wm, WM: wm, Server: wire.ServerXvfb})
			if err != nil {
				b.Fatal(err)
			}
			c.Screenshot(ctx, wire.ScreenshotParams{Desktop: d.Name})
			time.Sleep(500 * time.Millisecond)
			rss, private := groupMemKB(d.WorkerPID)
			b.ReportMetric(float64(rss)/1024, "desktop-"+wm+"-rss-MB")
			b.ReportMetric(float64(private)/1024, "desktop-"+wm+"-private-MB")
			c.DesktopRm(ctx, wire.DesktopRmParams{Name: d.Name})
		}
		b.ReportMetric(float64(bareRSS)/1024, "bare-xvfb-rss-MB")
		b.ReportMetric(float64(barePrivate)/1024, "bare-xvfb-private-MB")

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
