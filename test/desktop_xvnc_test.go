package test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	img "image"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// rfbSize does an RFB 3.8 handshake with security type None on the Unix
// socket and returns the framebuffer size ServerInit gives.
func rfbSize(t *testing.T, path string) (int, int) {
	t.Helper()
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	ver := make([]byte, 12)
	if _, err := io.ReadFull(r, ver); err != nil || string(ver) != "RFB 003.008\n" {
		t.Fatalf("RFB version %q, %v", ver, err)
	}
	c.Write(ver)
	n, _ := r.ReadByte()
	types := make([]byte, n)
	io.ReadFull(r, types)
	if !strings.Contains(string(types), "\x01") {
		t.Fatalf("security types %v lack None", types)
	}
	c.Write([]byte{1})
	var res uint32
	if err := binary.Read(r, binary.BigEndian, &res); err != nil || res != 0 {
		t.Fatalf("security result %d %v", res, err)
	}
	c.Write([]byte{1})
	var wh [2]uint16
	if err := binary.Read(r, binary.BigEndian, &wh); err != nil {
		t.Fatalf("ServerInit: %v", err)
	}
	return int(wh[0]), int(wh[1])
}

// TestXvncDesktopWorksAsXvfbDoes: an Xvnc desktop and an Xvfb one side
// by side, a Tk program on each; screenshots show each one's window and
// typed text arrives byte-exact on both; the Xvnc one serves RFB on its
// 0600 socket with its size, ls shows the server and the socket, and rm
// leaves no RFB socket.
func TestXvncDesktopWorksAsXvfbDoes(t *testing.T) {
	needDesktopTools(t, "Xvnc", "wish")
	t.Parallel()
	h := desktopHome(t)
	v := h.newDesktop("v", "--wm", "none", "--size", "800x600") // Xvnc by default: it is installed
	f := h.newDesktop("f", "--wm", "none", "--server", "xvfb")
	if v.Server != wire.ServerXvnc || v.RFB == "" || f.Server != wire.ServerXvfb || f.RFB != "" {
		t.Fatalf("desktops %+v %+v, want v on xvnc with an RFB socket, f on xvfb without", v, f)
	}
	st, err := os.Lstat(v.RFB)
	if err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("RFB socket %s: %v %v", v.RFB, st, err)
	}
	if w, hh := rfbSize(t, v.RFB); w != 800 || hh != 600 {
		t.Errorf("RFB ServerInit %dx%d, want 800x600", w, hh)
	}
	ls := h.ctl(0, "desktop", "ls")
	if !strings.Contains(ls, "SERVER") || !strings.Contains(ls, "xvnc") || !strings.Contains(ls, "xvfb") || !strings.Contains(ls, v.RFB) {
		t.Errorf("desktop ls does not show the servers and the RFB socket:\n%s", ls)
	}

	dir := t.TempDir()
	script := filepath.Join(dir, "entry.tcl")
	os.WriteFile(script, []byte(tkEntry), 0o600)
	for _, d := range []wire.DesktopRow{v, f} {
		typed := filepath.Join(dir, "typed-"+d.Name)
		h.ctl(0, "spawn", "tk-"+d.Name, "--desktop", d.Name, "--env", "TYPED="+typed, "--env", "LC_ALL=C.UTF-8", "--", "wish", script)
		shot := filepath.Join(dir, d.Name+".png")
		await(t, 15*time.Second, "the Tk window on "+d.Name, func() bool {
			h.ctl(0, "screenshot", "--desktop", d.Name, "-o", shot, "--force")
			return redIn(t, shot, img.Rect(100, 100, 200, 200)) > 9000
		})
		text := "hello " + d.Server + " äöü Привет"
		b, _ := json.Marshal(map[string]any{"observe": false, "actions": []map[string]any{
			{"kind": "click", "x": 300, "y": 310}, {"kind": "type", "text": text}, {"kind": "key", "key": "Return"}}})
		if out, errOut, code := h.agentctl(string(b), "act", "--desktop", d.Name, "-"); code != 0 {
			t.Fatalf("act on %s: exit %d %s %s", d.Name, code, out, errOut)
		}
		await(t, 10*time.Second, "the typed text on "+d.Name, func() bool { b, _ := os.ReadFile(typed); return len(b) >= len(text) })
		if b, _ := os.ReadFile(typed); string(b) != text {
			t.Errorf("%s received %q, want %q", d.Name, b, text)
		}
	}

	// Resize through RandR: the screenshot, ls and RFB all say the new
	// size; an Xvfb desktop and a bad size are refused (2).
	if out := h.ctl(0, "desktop", "resize", "v", "1000x700"); !strings.Contains(out, "v is 1000x700") {
		t.Errorf("desktop resize: %q", out)
	}
	var sr wire.ScreenshotResult
	json.Unmarshal([]byte(h.ctl(0, "--json", "screenshot", "--desktop", "v", "-o", filepath.Join(dir, "big.png"), "--force")), &struct{ Result *wire.ScreenshotResult }{&sr})
	if sr.Width != 1000 || sr.Height != 700 {
		t.Errorf("screenshot after resize: %dx%d, want 1000x700", sr.Width, sr.Height)
	}
	if row, _ := h.desktop("v"); row.Width != 1000 || row.Height != 700 {
		t.Errorf("ls after resize: %+v", row)
	}
	if w, hh := rfbSize(t, v.RFB); w != 1000 || hh != 700 {
		t.Errorf("RFB after resize: %dx%d", w, hh)
	}
	for _, c := range []struct {
		args []string
		want string
	}{{[]string{"desktop", "resize", "f", "1000x700"}, "--server xvnc"}, {[]string{"desktop", "resize", "v", "10x10"}, "320 to 7680"}} {
		if _, errOut, code := h.agentctl("", c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("agentctl %s: exit %d %q, want 2 with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}

	h.ctl(0, "desktop", "rm", "v")
	checkDisplayFreed(t, strings.TrimPrefix(v.Display, ":"), v.ServerPID)
	for _, p := range []string{v.RFB, v.Authority, filepath.Dir(v.Authority)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after desktop rm", p)
		}
	}
	if alive(v.ServerPID) || alive(v.WorkerPID) {
		t.Error("a process of the Xvnc desktop is left after rm")
	}
}

// TestXvncBadInput: an unknown server is refused (2); Xvnc asked for but
// not installed names its package (14).
func TestXvncBadInput(t *testing.T) {
	needDesktopTools(t)
	t.Parallel()
	h := desktopHome(t)
	if _, errOut, code := h.agentctl("", "desktop", "new", "--server", "vnc", "--wm", "none"); code != 2 || !strings.Contains(errOut, "xvfb or xvnc") {
		t.Errorf("--server vnc: exit %d %q, want 2 naming xvfb or xvnc", code, errOut)
	}
	// A PATH with Xvfb but no Xvnc: asked for, it names the package;
	// by default the desktop is an Xvfb one.
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed")
	}
	bin := t.TempDir()
	if err := os.Symlink(xvfb, filepath.Join(bin, "Xvfb")); err != nil {
		t.Fatal(err)
	}
	h2 := newHome(t)
	h2.startDaemon([]string{"--desktops", "--display", "none"}, "PATH="+bin)
	h2.cleanDesktops()
	if _, errOut, code := h2.agentctl("", "desktop", "new", "--server", "xvnc", "--wm", "none"); code != 14 || !strings.Contains(errOut, "tigervnc-standalone-server") {
		t.Errorf("xvnc not installed: exit %d %q, want 14 naming tigervnc-standalone-server", code, errOut)
	}
	if d := h2.newDesktop("plain", "--wm", "none"); d.Server != wire.ServerXvfb || d.RFB != "" {
		t.Errorf("default without Xvnc: %+v, want xvfb", d)
	}
	if ls := h.desktops(); len(ls) != 0 {
		t.Errorf("bad input left %+v", ls)
	}
	// desktop_server in the config picks the server when --server does
	// not say.
	if _, err := exec.LookPath("Xvnc"); err == nil {
		h3 := newHome(t)
		h3.startDaemon([]string{"--desktops", "--display", "none", "--desktop-server", "xvfb"})
		h3.cleanDesktops()
		if d := h3.newDesktop("byconfig", "--wm", "none"); d.Server != wire.ServerXvfb {
			t.Errorf("desktop_server = xvfb: %+v", d)
		}
		if d := h3.newDesktop("asked", "--wm", "none", "--server", "xvnc"); d.Server != wire.ServerXvnc {
			t.Errorf("--server xvnc over desktop_server = xvfb: %+v", d)
		}
	}
}

// bareXvnc starts Xvnc as a desktop's is started (explicit display,
// -displayfd, -auth, no TCP, RFB on a 0600 Unix socket) and returns once
// it wrote its number: the floor an Xvnc desktop's start is held to.
func bareXvnc(b *testing.B, w, h int) (*exec.Cmd, time.Duration) {
	b.Helper()
	dir := b.TempDir()
	auth := filepath.Join(dir, "auth")
	os.WriteFile(auth, nil, 0o600)
	for num := 1250; num < 1300; num++ {
		if _, err := os.Lstat("/tmp/.X11-unix/X" + strconv.Itoa(num)); err == nil {
			continue
		}
		if _, err := os.Lstat("/tmp/.X" + strconv.Itoa(num) + "-lock"); err == nil {
			continue
		}
		r, wr, _ := os.Pipe()
		cmd := exec.Command("Xvnc", ":"+strconv.Itoa(num), "-displayfd", "3", "-auth", auth, "-nolisten", "tcp", "-noreset",
			"-geometry", fmt.Sprintf("%dx%d", w, h), "-depth", "24", "-rfbport", "-1", "-rfbunixpath", filepath.Join(dir, "rfb"),
			"-rfbunixmode", "0600", "-SecurityTypes", "None")
		cmd.ExtraFiles = []*os.File{wr}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		wr.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		took := time.Since(start)
		r.Close()
		if err == nil && strings.TrimSpace(line) == strconv.Itoa(num) {
			return cmd, took
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	b.Fatal("no free display for the bare Xvnc")
	return nil, 0
}

// BenchmarkDesktopsXvnc measures, in one run: an Xvnc desktop's readiness
// (new to the first screenshot) against a bare Xvnc -displayfd start and
// against a bare Xvfb one, and the idle memory of an Xvnc desktop's whole
// group against a bare idle Xvnc.
//
//	go test -run '^$' -bench DesktopsXvnc -benchtime 1x ./test
func BenchmarkDesktopsXvnc(b *testing.B) {
	for _, p := range []string{"Xvnc", "Xvfb"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("%s is not installed", p)
		}
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
		var bareVnc, bareFb, none, openbox []time.Duration
		for i := range rounds {
			cmd, took := bareXvnc(b, 1280, 800)
			bareVnc = append(bareVnc, took)
			stopBare(cmd)
			cmd, took = bareXvfb(b, "1280x800")
			bareFb = append(bareFb, took)
			stopBare(cmd)
			none = append(none, desktopReady(ctx, b, c, fmt.Sprintf("v%d-none", i), wire.WMNone, wire.ServerXvnc))
			openbox = append(openbox, desktopReady(ctx, b, c, fmt.Sprintf("v%d-openbox", i), wire.WMOpenbox, wire.ServerXvnc))
		}
		b.ReportMetric(float64(median(bareVnc).Microseconds())/1000, "bare-xvnc-ms")
		b.ReportMetric(float64(median(bareFb).Microseconds())/1000, "bare-xvfb-ms")
		b.ReportMetric(float64(median(none).Microseconds())/1000, "xvnc-ready-wm-none-ms")
		b.ReportMetric(float64(median(openbox).Microseconds())/1000, "xvnc-ready-openbox-ms")
		b.ReportMetric(float64(median(none))/float64(median(bareVnc)), "wm-none/bare-xvnc")

		// Memory as BenchmarkDesktops measures it: the group against a
		// bare Xvnc idle at the same moment, after one screenshot.
		cmd, _ := bareXvnc(b, 1280, 800)
		for _, wm := range []string{wire.WMNone, wire.WMOpenbox} {
			d, err := c.DesktopNew(ctx, wire.DesktopNewParams{Name: "vmem-" + wm, WM: wm, Server: wire.ServerXvnc})
			if err != nil {
				b.Fatal(err)
			}
			c.Screenshot(ctx, wire.ScreenshotParams{Desktop: d.Name})
			time.Sleep(500 * time.Millisecond) // a pause in the measurement, not a synchronisation: let both settle idle
			bare := memOf(cmd.Process.Pid)
			procs, sum := groupMem(d.WorkerPID)
			for _, p := range procs {
				b.Logf("Xvnc desktop --wm %s: %s", wm, p)
			}
			b.Logf("Xvnc desktop --wm %s: %s; bare Xvnc %s", wm, sum, bare)
			b.ReportMetric(float64(sum.RSS-bare.RSS)/1024, "xvnc-desktop-"+wm+"-rss+MB")
			b.ReportMetric(float64(sum.PSS-bare.PSS)/1024, "xvnc-desktop-"+wm+"-pss+MB")
			b.ReportMetric(float64(sum.Private-bare.Private)/1024, "xvnc-desktop-"+wm+"-private+MB")
			c.DesktopRm(ctx, wire.DesktopRmParams{Name: d.Name})
		}
		stopBare(cmd)
	}
}
