package desktop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Resize changes a running Xvnc desktop's screen to w x h through RandR
// (xrandr: a mode of that size is added to the server's output and set, so
// the screen, the output a window manager sees and the RFB framebuffer all
// change), and returns the desktop with the size its server reports
// afterwards. Xvfb desktops cannot be resized (their RandR offers only the
// size they started with): ErrInvalid. The manifest keeps the size the
// desktop was made with; List and Resize report the server's current one.
func (m *Manager) Resize(ctx context.Context, name string, w, h int) (*Desktop, error) {
	if err := checkSize(w, h); err != nil {
		return nil, err
	}
	d, err := m.Get(name)
	if err != nil {
		return nil, err
	}
	if d.Status != StatusRunning {
		return nil, errorf(ErrNotFound, "desktop %q is %s; remove it with agentctl desktop rm %s and make another", name, d.Status, name)
	}
	if d.Kind() != ServerXvnc {
		return nil, errorf(ErrInvalid, "desktop %q runs on Xvfb, which cannot be resized; make one with --server xvnc (Debian package tigervnc-standalone-server) to resize it", name)
	}
	xrandr, err := exec.LookPath("xrandr")
	if err != nil {
		return nil, errorf(ErrStartFailed, "resizing needs xrandr, which is not installed; install the Debian package x11-xserver-utils")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, xrandr, append([]string{"-display", d.Display}, args...)...)
		cmd.Env = append(os.Environ(), "XAUTHORITY="+d.Authority)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	q, err := run("--query")
	if err != nil {
		return nil, errorf(ErrStartFailed, "xrandr --query on desktop %q failed (%v): %s", name, err, q)
	}
	output := connectedOutput(q)
	if output == "" {
		return nil, errorf(ErrStartFailed, "desktop %q's server lists no connected RandR output:\n%s", name, q)
	}
	mode := fmt.Sprintf("%dx%d", w, h)
	// A mode line of exactly this size (no timings: a virtual screen has
	// no monitor), added to the output. Both fail harmlessly when the
	// mode exists already (Xvnc has common sizes built in, or an earlier
	// resize added it); setting it below is what must succeed.
	run("--newmode", mode, "0", fmt.Sprint(w), "0", "0", "0", fmt.Sprint(h), "0", "0", "0")
	run("--addmode", output, mode)
	if out, err := run("--output", output, "--mode", mode); err != nil {
		return nil, errorf(ErrStartFailed, "xrandr --output %s --mode %s failed (%v): %s", output, mode, err, out)
	}
	cookie, err := readCookie(d.Authority)
	if err != nil {
		return nil, err
	}
	gw, gh, err := probeScreen(d.Number, cookie, probeTimeout)
	if err != nil {
		return nil, errorf(ErrStartFailed, "desktop %q does not answer after the resize: %v", name, err)
	}
	if gw != w || gh != h {
		return nil, errorf(ErrStartFailed, "desktop %q is %dx%d after xrandr set %s", name, gw, gh, mode)
	}
	d.Width, d.Height = gw, gh
	return d, nil
}

// connectedOutput is the first connected output in xrandr --query's
// answer ("VNC-0 connected 1280x800+0+0 ...").
func connectedOutput(q string) string {
	for _, l := range strings.Split(q, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "connected" {
			return f[0]
		}
	}
	return ""
}
