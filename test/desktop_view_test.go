package test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	img "image"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/view"
	"github.com/agentd/agentd/pkg/wire"
)

// deskViewURL asks agentctl desktop view for a one-time URL.
func (h *home) deskViewURL(name string) string {
	h.t.Helper()
	var env struct{ Result wire.ViewResult }
	if err := json.Unmarshal([]byte(h.ctl(0, "--json", "desktop", "view", "--print", name)), &env); err != nil || env.Result.URL == "" {
		h.t.Fatalf("agentctl desktop view --json: %v", err)
	}
	return env.Result.URL
}

// viewCookie trades a one-time URL for the page's cookie, as a browser
// does, and returns the server's host:port and the cookie header.
func viewCookie(t *testing.T, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if len(res.Cookies()) != 1 {
		t.Fatalf("trading the token: %s, cookies %v", res.Status, res.Cookies())
	}
	c := res.Cookies()[0]
	return u.Host, c.Name + "=" + c.Value
}

// deskViewer is a raw viewer of a desktop: the page's two WebSockets,
// spoken from Go, RFB by hand.
type deskViewer struct {
	t    *testing.T
	ctl  *websocket.Conn
	rfb  *websocket.Conn
	id   string
	rfbR *bufio.Reader
	rfbW io.Writer
}

func dialDesk(t *testing.T, host, cookie, path string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := http.Header{"Cookie": {cookie}, "Origin": {"http://" + host}}
	c, _, err := websocket.Dial(ctx, "ws://"+host+path, &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, err
}

// readDesk reads the viewer socket's next message.
func readDesk(t *testing.T, c *websocket.Conn) view.DeskMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading the desktop viewer's socket: %v", err)
	}
	var m view.DeskMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// openViewer opens the viewer socket of desktop name and returns its
// first message.
func openViewer(t *testing.T, host, cookie, name string) (*websocket.Conn, view.DeskMessage) {
	t.Helper()
	c, err := dialDesk(t, host, cookie, "/ws/desktop?name="+url.QueryEscape(name))
	if err != nil {
		t.Fatal(err)
	}
	return c, readDesk(t, c)
}

// newRawViewer opens a viewer and its RFB stream and does the RFB 3.8
// handshake through the proxy.
func newRawViewer(t *testing.T, host, cookie, name string) *deskViewer {
	t.Helper()
	ctl, m := openViewer(t, host, cookie, name)
	if m.Type != "start" || m.Viewer == "" {
		t.Fatalf("viewer socket said %+v, want start", m)
	}
	rfb, err := dialDesk(t, host, cookie, "/ws/rfb?name="+url.QueryEscape(name)+"&viewer="+url.QueryEscape(m.Viewer))
	if err != nil {
		t.Fatal(err)
	}
	nc := websocket.NetConn(context.Background(), rfb, websocket.MessageBinary)
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	v := &deskViewer{t: t, ctl: ctl, rfb: rfb, id: m.Viewer, rfbR: bufio.NewReader(nc), rfbW: nc}
	ver := v.read(12)
	if string(ver) != "RFB 003.008\n" {
		t.Fatalf("RFB version through the proxy %q", ver)
	}
	v.write(ver)
	if types := v.read(2); types[0] != 1 || types[1] != 1 {
		t.Fatalf("security types through the proxy %v, want None alone", types)
	}
	v.write([]byte{1})
	if res := v.read(4); binary.BigEndian.Uint32(res) != 0 {
		t.Fatalf("security result %v", res)
	}
	v.write([]byte{0}) // exclusive: the proxy makes it shared
	si := v.read(24)
	v.read(int(binary.BigEndian.Uint32(si[20:])))
	return v
}

func (v *deskViewer) read(n int) []byte {
	v.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(v.rfbR, b); err != nil {
		v.t.Fatalf("reading RFB through the proxy: %v", err)
	}
	return b
}

func (v *deskViewer) write(b []byte) {
	v.t.Helper()
	if _, err := v.rfbW.Write(b); err != nil {
		v.t.Fatalf("writing RFB through the proxy: %v", err)
	}
}

// click sends a press and a release of button 1 at x, y.
func (v *deskViewer) click(x, y int) {
	v.write([]byte{5, 1, byte(x >> 8), byte(x), byte(y >> 8), byte(y), 5, 0, byte(x >> 8), byte(x), byte(y >> 8), byte(y)})
}

// roundTrip asks for a full update and reads the start of the answer:
// every message sent before it has been through the proxy (it frames
// them in order) by then.
func (v *deskViewer) roundTrip() {
	v.write([]byte{3, 0, 0, 0, 0, 0, 0, 16, 0, 16})
	v.read(1)
}

func (v *deskViewer) send(typ string) view.DeskMessage {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := v.ctl.Write(ctx, websocket.MessageText, []byte(`{"type":"`+typ+`"}`)); err != nil {
		v.t.Fatal(err)
	}
	return readDesk(v.t, v.ctl)
}

// deskScene is a Tk program filling an 800x600 desktop with flat colours
// and text, which records every button press (root coordinates) in
// $CLICKS.
const deskScene = `
wm geometry . 800x600+0+0
frame .a -background red -width 400 -height 300
frame .b -background #2040c0 -width 400 -height 300
frame .c -background #20a020 -width 400 -height 300
label .d -background white -foreground black -text "agentd desktop view\nRFB through the proxy" -font {Helvetica 24} -width 400 -height 300
place .a -x 0 -y 0
place .b -x 400 -y 0
place .c -x 0 -y 300
place .d -x 400 -y 300 -width 400 -height 300
bind all <ButtonPress> {
	set f [open $env(CLICKS) a]
	puts $f "%X %Y"
	close $f
}
`

// pointerAt is the desktop's pointer, from xdotool with its display and
// cookie.
func pointerAt(t *testing.T, d wire.DesktopRow) (int, int) {
	t.Helper()
	out, err := onDesktop(d, "xdotool", "getmouselocation", "--shell").Output()
	if err != nil {
		t.Fatalf("xdotool getmouselocation: %v", err)
	}
	var x, y int
	for _, l := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(l, "X="); ok {
			x, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(l, "Y="); ok {
			y, _ = strconv.Atoi(v)
		}
	}
	return x, y
}

// canvasImage reads noVNC's canvas (the framebuffer, one canvas pixel per
// desktop pixel; the page scales it with CSS only).
func canvasImage(ctx context.Context) (img.Image, error) {
	s, err := eval[string](ctx, `document.querySelector("#screen canvas").toDataURL("image/png")`)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "data:image/png;base64,"))
	if err != nil {
		return nil, err
	}
	return png.Decode(strings.NewReader(string(b)))
}

// shrink averages f×f blocks: what a page scaled to 1/f shows, and what
// smooths the encoder's per-pixel noise.
func shrink(m img.Image, f int) [][3]float64 {
	b := m.Bounds()
	w, h := b.Dx()/f, b.Dy()/f
	out := make([][3]float64, w*h)
	for y := 0; y < h*f; y++ {
		for x := 0; x < w*f; x++ {
			r, g, bl, _ := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			p := &out[(y/f)*w+x/f]
			p[0] += float64(r >> 8)
			p[1] += float64(g >> 8)
			p[2] += float64(bl >> 8)
		}
	}
	for i := range out {
		for c := range 3 {
			out[i][c] /= float64(f * f)
		}
	}
	return out
}

// imageDiff is the mean and the largest absolute difference of two
// images' channels after shrinking both by f.
func imageDiff(a, b img.Image, f int) (mean, most float64) {
	sa, sb := shrink(a, f), shrink(b, f)
	for i := range sa {
		for c := range 3 {
			d := math.Abs(sa[i][c] - sb[i][c])
			mean += d
			most = max(most, d)
		}
	}
	return mean / float64(3*len(sa)), most
}

// TestDesktopViewInChromium is issue 28's desktop proof, in real
// headless Chromium against Xvnc: the page's canvas matches agentctl
// screenshot; a click in the canvas does nothing without the lease and
// lands where it should with it, while agents' batches get busy naming
// the lease; a raw viewer's forged key and pointer events do nothing; the
// ninth viewer is told busy, in the page too; an Xvfb desktop is said to
// have no RFB; a desktop removed under the page is said to be gone.
func TestDesktopViewInChromium(t *testing.T) {
	needDesktopTools(t, "Xvnc", "wish", "xdotool")
	t.Parallel()
	h := desktopHome(t)
	d := h.newDesktop("v", "--wm", "none", "--size", "800x600")
	if d.RFB == "" {
		t.Fatalf("desktop %+v has no RFB socket", d)
	}
	dir := t.TempDir()
	clicks := filepath.Join(dir, "clicks")
	os.WriteFile(filepath.Join(dir, "scene.tcl"), []byte(deskScene), 0o600)
	h.ctl(0, "spawn", "tk", "--desktop", "v", "--env", "CLICKS="+clicks, "--", "wish", filepath.Join(dir, "scene.tcl"))
	shot := filepath.Join(dir, "shot.png")
	await(t, 20*time.Second, "the Tk scene on the desktop", func() bool {
		h.ctl(0, "screenshot", "--desktop", "v", "-o", shot, "--force")
		return redIn(t, shot, img.Rect(0, 0, 400, 300)) > 100000
	})

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(h.deskViewURL("v"))); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "the page to show the desktop live", func() bool {
		loc, _ := eval[string](ctx, `location.href`)
		return !strings.Contains(loc, "t=") && strings.HasSuffix(loc, "/desktop#v") && pageText(ctx, "status") == "live"
	})

	// The canvas matches the screenshot. Shrunk 4×4 (the page at a
	// quarter of the size), the mean channel difference must stay under
	// 0.5 and no block may differ by more than 4 of 255. Measured here:
	// 0.001 and 0.2 (Tight's fills and palettes are lossless, so flat
	// areas and text come through exact; the margin is for JPEG, which
	// the page allows at quality 9, on photo-like areas this scene lacks).
	// A canvas showing another picture, a shifted or a stale one differs
	// by tens.
	var mean, most float64
	await(t, 20*time.Second, "the canvas to match agentctl screenshot", func() bool {
		h.ctl(0, "screenshot", "--desktop", "v", "-o", shot, "--force")
		f, err := os.Open(shot)
		if err != nil {
			return false
		}
		want, err := png.Decode(f)
		f.Close()
		got, cerr := canvasImage(ctx)
		if err != nil || cerr != nil || got.Bounds().Size() != want.Bounds().Size() {
			return false
		}
		mean, most = imageDiff(got, want, 4)
		return mean < 0.5 && most <= 4
	})
	t.Logf("canvas vs screenshot, 4×4 blocks: mean difference %.3f, largest %.1f (of 255)", mean, most)

	// clickCanvas clicks the page where desktop pixel (x, y) is shown.
	clickCanvas := func(x, y int) {
		t.Helper()
		r, err := eval[[]float64](ctx, `(() => { const c = document.querySelector("#screen canvas"); const r = c.getBoundingClientRect();
			return [r.left, r.top, r.width / c.width, r.height / c.height]; })()`)
		if err != nil || len(r) != 4 {
			t.Fatalf("canvas geometry: %v %v", r, err)
		}
		if err := chromedp.Do(ctx, chromedp.MouseClickXY(r[0]+(float64(x)+0.5)*r[2], r[1]+(float64(y)+0.5)*r[3])); err != nil {
			t.Fatal(err)
		}
	}
	// Without the lease a click in the canvas does nothing; with it the
	// next one lands where it was made. The proxy passes the page's
	// messages in order, so the first would be in the file before the
	// second.
	x0, y0 := pointerAt(t, d)
	clickCanvas(100, 100)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to hold the lease", func() bool { return strings.HasPrefix(pageText(ctx, "take"), "Hand back") })
	// Agents' batches on the desktop get busy, naming the lease.
	act := `{"actions":[{"kind":"click","x":10,"y":10}],"observe":false}`
	if _, errOut, code := h.agentctl(act, "act", "--desktop", "v", "-"); code != 18 || !strings.Contains(errOut, "view page") {
		t.Errorf("a batch while the page holds the lease: exit %d %q, want 18 (busy) naming the page", code, errOut)
	}
	clickCanvas(600, 450)
	await(t, 10*time.Second, "the click to reach the Tk window", func() bool {
		b, _ := os.ReadFile(clicks)
		return strings.Contains(string(b), "600 450")
	})
	if b, _ := os.ReadFile(clicks); strings.TrimSpace(string(b)) != "600 450" {
		t.Errorf("the Tk window got clicks %q, want only 600 450 (the one made without the lease at %d,%d did not pass)", b, 100, 100)
	}
	if x, y := pointerAt(t, d); x != 600 || y != 450 || (x0 == 600 && y0 == 450) {
		t.Errorf("pointer at %d,%d (was %d,%d), want 600,450", x, y, x0, y0)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to hand back", func() bool { return strings.HasPrefix(pageText(ctx, "take"), "Take over") })
	if _, errOut, code := h.agentctl(act, "act", "--desktop", "v", "-"); code != 0 {
		t.Errorf("a batch after hand back: exit %d %q", code, errOut)
	}
	await(t, 10*time.Second, "the agent's click after hand back to reach the Tk window", func() bool {
		b, _ := os.ReadFile(clicks)
		return strings.Contains(string(b), "10 10")
	})
	if v, err := eval[[]string](ctx, `window.agentdPolicyViolations`); err != nil || len(v) > 0 {
		t.Errorf("content security policy violations in the page: %q %v", v, err)
	}

	// A raw viewer forging input: dropped without the lease, passed with
	// it (the test could fail).
	host, cookie := viewCookie(t, h.deskViewURL("v"))
	raw := newRawViewer(t, host, cookie, "v")
	os.Remove(clicks)
	raw.click(50, 60)
	raw.write([]byte{4, 1, 0, 0, 0, 0, 0xff, 0x0d, 4, 0, 0, 0, 0, 0, 0xff, 0x0d}) // Return
	raw.roundTrip()
	if b, err := os.ReadFile(clicks); err == nil {
		t.Errorf("a view-only viewer's forged click reached the desktop: %q", b)
	}
	if x, y := pointerAt(t, d); x == 50 && y == 60 {
		t.Errorf("a view-only viewer's forged pointer event moved the pointer to %d,%d", x, y)
	}
	if m := raw.send("take"); m.Type != "lease" || !m.Held {
		t.Fatalf("take: %+v", m)
	}
	raw.click(70, 80)
	raw.roundTrip()
	await(t, 10*time.Second, "the leased raw viewer's click", func() bool {
		b, _ := os.ReadFile(clicks)
		return strings.TrimSpace(string(b)) == "70 80"
	})
	// A second page's take-over is refused while one holds the lease.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to say another holds the lease", func() bool {
		return strings.Contains(pageText(ctx, "desk-message"), "already took over")
	})
	if m := raw.send("hand_back"); m.Type != "lease" || m.Held {
		t.Fatalf("hand_back: %+v", m)
	}

	// Eight viewers: the page, the raw one and six more; the ninth is
	// told busy, and so is a page opened as the ninth.
	for range 6 {
		if _, m := openViewer(t, host, cookie, "v"); m.Type != "start" {
			t.Fatalf("viewer %+v, want start", m)
		}
	}
	if _, m := openViewer(t, host, cookie, "v"); m.Type != "error" || m.Code != "busy" || !strings.Contains(m.Message, "8 viewers") {
		t.Errorf("the ninth viewer: %+v, want busy", m)
	}
	tab, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.Navigate(h.deskViewURL("v"))); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "a ninth page to say busy", func() bool {
		return strings.Contains(pageText(tab, "desk-message"), "8 viewers") && pageText(tab, "status") == "busy"
	})
	cancelTab()

	// An Xvfb desktop serves no RFB: said, naming the fix.
	h.newDesktop("f", "--wm", "none", "--server", "xvfb")
	if _, m := openViewer(t, host, cookie, "f"); m.Code != "not_found" || !strings.Contains(m.Message, "Xvfb") || !strings.Contains(m.Message, "tigervnc-standalone-server") {
		t.Errorf("an Xvfb desktop's viewer: %+v", m)
	}

	// The list page lists both desktops: v with a link to its page, f
	// saying why it cannot be watched.
	list, cancelList := chromedp.NewContext(ctx)
	defer cancelList()
	if err := chromedp.Do(list, chromedp.Navigate("http://"+host+"/")); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "the list page to list the desktops", func() bool {
		rows, _ := eval[[][]string](list, `Array.from(document.querySelectorAll("#desk-rows tr")).map(tr => [tr.dataset.name, tr.cells[2].textContent, tr.cells[5].textContent, (tr.querySelector("a") || {}).href || ""])`)
		got := map[string][]string{}
		for _, r := range rows {
			got[r[0]] = r
		}
		v, f := got["v"], got["f"]
		return v != nil && f != nil && v[1] == "xvnc" && strings.HasSuffix(v[3], "/desktop#v") &&
			f[1] == "xvfb" && f[3] == "" && strings.Contains(f[2], "Xvfb serves no RFB")
	})
	cancelList()

	// The desktop removed under the page: the page says it is gone.
	h.ctl(0, "desktop", "rm", "--force", "v")
	await(t, 20*time.Second, "the page to say the desktop is gone", func() bool {
		msg := pageText(ctx, "desk-message")
		return strings.Contains(msg, `desktop "v"`) && pageText(ctx, "status") == "ended"
	})
	if m := readDesk(t, raw.ctl); m.Type != "end" || !strings.Contains(m.Message, `"v"`) {
		t.Errorf("the raw viewer was told %+v, want end naming v", m)
	}
}

// TestDesktopViewNative: --native names the package when TigerVNC's
// viewer is missing.
func TestDesktopViewNative(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"vncviewer", "xtigervncviewer"} {
		if _, err := exec.LookPath(n); err == nil {
			t.Skipf("%s is installed", n)
		}
	}
	h := newHome(t)
	h.startDaemon(nil)
	if _, errOut, code := h.agentctl("", "desktop", "view", "--native", "v"); code != 14 || !strings.Contains(errOut, "tigervnc-viewer") {
		t.Errorf("desktop view --native without vncviewer: exit %d %q, want 14 naming tigervnc-viewer", code, errOut)
	}
}

// deskPage starts a daemon, an Xvnc desktop and a browser with its page
// open, live.
func deskPage(b *testing.B) (*home, *daemonProc, wire.DesktopRow, context.Context) {
	for _, p := range []string{"Xvnc", "xsetroot"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("%s is not installed", p)
		}
	}
	h := newHomeTB(b)
	d := h.startDaemon([]string{"--desktops", "--display", "none"})
	b.Cleanup(func() { h.agentctl("", "desktop", "rm", "--force", "b") })
	var dk wire.DesktopRow
	out := h.ctl(0, "--json", "desktop", "new", "b", "--wm", "none", "--size", "800x600")
	if err := json.Unmarshal([]byte(out), &struct{ Result *wire.DesktopRow }{&dk}); err != nil {
		b.Fatal(err)
	}
	ctx := browser(b)
	var env struct{ Result wire.ViewResult }
	json.Unmarshal([]byte(h.ctl(0, "--json", "desktop", "view", "--print", "b")), &env)
	if err := chromedp.Do(ctx, chromedp.Navigate(env.Result.URL)); err != nil {
		b.Fatal(err)
	}
	await(b, 20*time.Second, "the desktop live in the page", func() bool {
		s, _ := eval[string](ctx, `document.getElementById("status").textContent`)
		return s == "live"
	})
	return h, d, dk, ctx
}

// BenchmarkDesktopViewLatency is issue 28's figure: a desktop change →
// visible in the page. The root window's colour is changed with xsetroot
// (the time is taken before it starts, so the figure includes starting
// it); the page notes, on each animation frame, when the canvas shows the
// new colour (one clock, one machine). At least 20 changes; it reports
// the median and the 95th percentile (the bar: a median of 150 ms).
func BenchmarkDesktopViewLatency(b *testing.B) {
	_, _, dk, ctx := deskPage(b)
	if _, err := eval[bool](ctx, `window.seen = {}; (() => {
		const c = document.querySelector("#screen canvas");
		const g = c.getContext("2d", { willReadFrequently: true });
		const tick = () => {
			const p = g.getImageData(400, 300, 1, 1).data;
			const k = p[0] + "," + p[1] + "," + p[2];
			if (!(k in seen)) seen[k] = performance.timeOrigin + performance.now();
			requestAnimationFrame(tick);
		};
		requestAnimationFrame(tick);
	})(); true`); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 20)
	lat := make([]float64, 0, n)
	b.ResetTimer()
	for i := range n {
		r, g, bl := 10+i*9%240, 200-i*7%180, 30+i*11%200
		cmd := exec.Command("xsetroot", "-solid", fmt.Sprintf("#%02x%02x%02x", r, g, bl))
		cmd.Env = append(os.Environ(), "DISPLAY="+dk.Display, "XAUTHORITY="+dk.Authority)
		t0 := float64(time.Now().UnixNano()) / 1e6
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("xsetroot: %v %s", err, out)
		}
		key := fmt.Sprintf("%d,%d,%d", r, g, bl)
		var ms float64
		await(b, 10*time.Second, "colour "+key+" in the page", func() bool {
			v, _ := eval[*float64](ctx, fmt.Sprintf(`window.seen[%q] ?? null`, key))
			if v != nil {
				ms = *v - t0
			}
			return v != nil
		})
		lat = append(lat, ms)
	}
	b.StopTimer()
	slices.Sort(lat)
	med, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
	b.ReportMetric(med, "median-ms")
	b.ReportMetric(p95, "p95-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("desktop change → shown in the page, %d changes: min %.1f ms, median %.1f ms, p95 %.1f ms, max %.1f ms", n, lat[0], med, p95, lat[n-1])
	if med > 150 {
		b.Errorf("median %.1f ms, over the 150 ms the issue asks", med)
	}
}

// BenchmarkDesktopViewIdleCPU: agentd's CPU time over 20 s with a page
// open on an idle desktop. The bar: 1 % of a core.
func BenchmarkDesktopViewIdleCPU(b *testing.B) {
	_, d, _, _ := deskPage(b)
	idleCPU(b, d.cmd.Process.Pid, "an idle desktop page")
}

// TestWatchedDesktopIsNotIdle: a desktop a page watches is in use: the
// idle sweep (desktop_idle_timeout 1 s) leaves it while the page is open
// and removes it once the page has gone.
func TestWatchedDesktopIsNotIdle(t *testing.T) {
	needDesktopTools(t, "Xvnc")
	t.Parallel()
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--display", "none", "--desktop-idle-timeout", "1s"})
	h.cleanDesktops()
	h.newDesktop("w", "--wm", "none", "--size", "640x480")
	host, cookie := viewCookie(t, h.deskViewURL("w"))
	ctl, err := dialDesk(t, host, cookie, "/ws/desktop?name=w")
	if err != nil {
		t.Fatal(err)
	}
	if m := readDesk(t, ctl); m.Type != "start" {
		t.Fatalf("the viewer's first message: %+v, want start", m)
	}
	// Three idle timeouts and a sweep (2 s) pass with the page open.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := h.desktop("w"); !ok {
			t.Fatal("the watched desktop was removed as idle")
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctl.Close(websocket.StatusNormalClosure, "")
	await(t, 15*time.Second, "the desktop removed as idle once no page watches it", func() bool { _, ok := h.desktop("w"); return !ok })
}

// TestDesktopViewNativeIsViewOnly: --native runs TigerVNC's viewer view
// only on the desktop's RFB socket, --native --input without -ViewOnly,
// and --input alone is a usage error. The viewer here is a script on PATH
// that records how agentctl ran it (what the test holds is that command).
func TestDesktopViewNativeIsViewOnly(t *testing.T) {
	needDesktopTools(t, "Xvnc")
	t.Parallel()
	h := desktopHome(t)
	d := h.newDesktop("n", "--wm", "none", "--size", "640x480")
	bindir := t.TempDir()
	ran := filepath.Join(bindir, "argv")
	if err := os.WriteFile(filepath.Join(bindir, "vncviewer"), []byte(fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %q\n", ran)), 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		os.Remove(ran)
		cmd := exec.Command(bin.agentctl, append([]string{"desktop", "view"}, args...)...)
		cmd.Env = h.env("PATH=" + bindir + ":" + os.Getenv("PATH"))
		_, errOut, code := h.runCmd(cmd)
		b, _ := os.ReadFile(ran)
		if code != 0 && len(b) == 0 {
			return errOut, code
		}
		return strings.TrimSpace(string(b)), code
	}
	if got, code := run("--native", "n"); code != 0 || got != "-ViewOnly\n"+d.RFB {
		t.Errorf("desktop view --native: exit %d, ran the viewer with %q, want -ViewOnly %s", code, got, d.RFB)
	}
	if got, code := run("--native", "--input", "n"); code != 0 || got != d.RFB {
		t.Errorf("desktop view --native --input: exit %d, ran the viewer with %q, want only %s", code, got, d.RFB)
	}
	if got, code := run("--input", "n"); code != 2 || !strings.Contains(got, "--input is for --native") {
		t.Errorf("desktop view --input alone: exit %d %q, want a usage error (2)", code, got)
	}
}
