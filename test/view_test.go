package test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/wire"
)

// chromiumPath is the browser the view's tests drive.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium of its own (a private profile, no
// network of its own doing) and returns a tab's context.
func browser(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s: apt-get install chromium", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true), chromedp.Flag("metrics-recording-only", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// viewURL asks agentctl view for a one-time URL.
func (h *home) viewURL(name string) string {
	h.t.Helper()
	args := []string{"view", "--print", "--json"}
	if name != "" {
		args = append(args, name)
	}
	var env struct{ Result wire.ViewResult }
	if err := json.Unmarshal([]byte(h.ctl(0, args...)), &env); err != nil || env.Result.URL == "" {
		h.t.Fatalf("agentctl view --json: %v", err)
	}
	return env.Result.URL
}

// eval runs js in the page and returns its value.
func eval[T any](ctx context.Context, js string) (T, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(c, chromedp.Evaluate[T](js))
}

// pageText is the text of the element with id.
func pageText(ctx context.Context, id string) string {
	s, _ := eval[string](ctx, `document.getElementById(`+strconv.Quote(id)+`).textContent`)
	return s
}

// pageRows is the session table as the page shows it.
func pageRows(ctx context.Context) map[string][]string {
	rows, _ := eval[[][]string](ctx, `Array.from(document.querySelectorAll("#rows tr")).map(tr => Array.from(tr.cells).map(td => td.textContent))`)
	m := map[string][]string{}
	for _, r := range rows {
		if len(r) > 0 {
			m[r[0]] = r
		}
	}
	return m
}

// pageScreen is the terminal's visible lines as xterm.js holds them.
func pageScreen(ctx context.Context) []string {
	lines, _ := eval[[]string](ctx, `window.agentdScreen ? window.agentdScreen() : null`)
	return lines
}

func trimLines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.TrimRight(l, " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// TestViewRefusesStrangers: the page without a token, with a wrong one,
// with a foreign Host and a WebSocket from a foreign Origin, against a
// real agentd, with plain HTTP clients.
func TestViewRefusesStrangers(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	u, err := url.Parse(h.viewURL(""))
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Fatalf("view URL %s, want 127.0.0.1", u.Redacted())
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	do := func(path string, mod func(*http.Request)) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+u.Host+path, nil)
		if mod != nil {
			mod(req)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if res := do("/", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s", res.Status)
	}
	if res := do("/?t=0000", nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("with a wrong token: %s", res.Status)
	}
	if res := do("/?"+u.RawQuery, func(r *http.Request) { r.Host = "attacker.example:" + u.Port() }); res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("with the token and a foreign Host: %s", res.Status)
	}
	res := do("/?"+u.RawQuery, nil)
	if res.StatusCode != http.StatusOK || len(res.Cookies()) != 1 {
		t.Fatalf("with the token: %s, cookies %v", res.Status, res.Cookies())
	}
	cookie := res.Cookies()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}, "Origin": {"http://attacker.example"}}
	if _, res, err := websocket.Dial(ctx, "ws://"+u.Host+"/ws/list", &websocket.DialOptions{HTTPHeader: hdr}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a WebSocket from a foreign Origin: %v", err)
	}
	hdr.Set("Origin", "http://"+u.Host)
	conn, _, err := websocket.Dial(ctx, "ws://"+u.Host+"/ws/list", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("a WebSocket from the page's origin: %v", err)
	}
	conn.CloseNow()
}

// TestViewInChromium opens the page in headless Chromium: the list shows
// the sessions' real states, a terminal shows what agentctl snapshot
// shows, keys typed in the page reach nothing, and a daemon stopping
// under the page is said.
func TestViewInChromium(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "busy", "--", "sleep", "600")
	h.ctl(0, "spawn", "py", "--", "python3", "-q")
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(h.viewURL("py"))); err != nil {
		t.Fatal(err)
	}
	// The page leaves the token's address for one without it.
	await(t, 10*time.Second, "the page's address to drop the token", func() bool {
		loc, _ := eval[string](ctx, `location.href`)
		return !strings.Contains(loc, "t=") && strings.HasSuffix(loc, "/#py")
	})
	await(t, 20*time.Second, "the list to show busy busy and py ready", func() bool {
		rows := pageRows(ctx)
		return len(rows["busy"]) > 2 && rows["busy"][2] == "busy" && len(rows["py"]) > 2 && rows["py"][2] == "ready" && rows["py"][1] == "running"
	})
	rows := pageRows(ctx)
	if !strings.Contains(rows["busy"][4], "sleep 600") || !strings.Contains(rows["py"][4], "python3") {
		t.Errorf("program column: %q, %q", rows["busy"][4], rows["py"][4])
	}
	// The terminal shows what agentctl snapshot shows.
	c := h.client()
	var snap, shown []string
	await(t, 10*time.Second, "the page's terminal to show the snapshot", func() bool {
		s, err := c.Snapshot(context.Background(), "py")
		if err != nil {
			return false
		}
		snap, shown = trimLines(s.Lines), trimLines(pageScreen(ctx))
		return len(snap) > 0 && slices.Equal(snap, shown)
	})
	// A resize of the session reshapes the page's terminal.
	if err := c.Resize(context.Background(), wire.ResizeParams{Name: "py", Cols: 90, Rows: 20}); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page's terminal at 90x20", func() bool {
		size, _ := eval[[]int](ctx, `agentdTerm ? [agentdTerm.cols, agentdTerm.rows] : []`)
		return slices.Equal(size, []int{90, 20})
	})
	// Nothing the page runs breaks its own policy (xterm.js's <style>
	// elements carry the nonce).
	if v, err := eval[[]string](ctx, `window.agentdPolicyViolations`); err != nil || len(v) > 0 {
		t.Errorf("content security policy violations in the page: %q %v", v, err)
	}
	if os.Getenv("AGENTD_VIEW_SCREENSHOT") != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err == nil {
			os.WriteFile(os.Getenv("AGENTD_VIEW_SCREENSHOT"), png, 0o600)
		}
	}
	// Keys typed into the page reach nothing: typed first, then a line
	// sent by agentctl; once the page shows that line's answer, keys that
	// were sent would have arrived before it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#term")), chromedp.SendKeys(chromedp.CSS(".xterm-helper-textarea"), "print('from'+'-the-page')\r")); err != nil {
		t.Fatalf("typing into the page: %v", err)
	}
	if err := c.Send(context.Background(), wire.SendParams{Name: "py", Text: "print(6*7)\n"}); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to show 42", func() bool { return slices.Contains(trimLines(pageScreen(ctx)), "42") })
	s, err := c.Snapshot(context.Background(), "py")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(s.Lines, "\n"), "from-the-page") || strings.Contains(strings.Join(pageScreen(ctx), "\n"), "from-the-page") {
		t.Errorf("keys typed in the page reached the program:\n%s", strings.Join(s.Lines, "\n"))
	}
	// A session that ends while watched says so.
	if err := c.Send(context.Background(), wire.SendParams{Name: "py", Text: "exit()\n"}); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to say the session ended", func() bool {
		msg := pageText(ctx, "term-message")
		return strings.Contains(msg, `session "py"`)
	})
	// A session that does not exist.
	if _, err := eval[string](ctx, `location.hash = "nosuch"`); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to say nosuch does not exist", func() bool {
		msg := pageText(ctx, "term-message")
		return strings.Contains(msg, "nosuch")
	})
	// agentd stops under the page: the page says it does not answer and
	// what to do if it does not come back, and keeps trying.
	h.stopAll()
	d.cmd.Process.Signal(os.Interrupt)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	await(t, 20*time.Second, "the page to say agentd does not answer", func() bool {
		msg := pageText(ctx, "status")
		return strings.Contains(msg, "not answering") && strings.Contains(msg, "run agentctl view")
	})
}

// viewPage starts a daemon, a session running program and a browser with
// the view open on that session's terminal.
func viewPage(b *testing.B, program ...string) (*home, *daemonProc, context.Context) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	h.ctl(0, append([]string{"spawn", "v", "--"}, program...)...)
	ctx := browser(b)
	if err := chromedp.Do(ctx, chromedp.Navigate(h.viewURL("v"))); err != nil {
		b.Fatal(err)
	}
	await(b, 10*time.Second, "the terminal in the page", func() bool { return pageScreen(ctx) != nil })
	return h, d, ctx
}

// BenchmarkViewLatency is issue 28's figure: terminal output → visible in
// the page. The program prints the wall-clock time as it writes a line;
// the page notes the time of xterm.js's first render that shows the line
// (one clock, one machine). At least 20 lines, one at a time; it reports
// the median and the 95th percentile (the bar: a median of 50 ms).
func BenchmarkViewLatency(b *testing.B) {
	h, _, ctx := viewPage(b, "python3", "-q", "-u", "-c",
		"import sys,time\nfor l in sys.stdin:\n  print('MARK', l.strip(), time.time_ns(), flush=True)")
	if _, err := eval[bool](ctx, `window.marks = {}; agentdTerm.onRender(() => {
		const now = performance.timeOrigin + performance.now();
		const b = agentdTerm.buffer.active;
		for (let i = 0; i < agentdTerm.rows; i++) {
			const l = b.getLine(b.viewportY + i); if (!l) continue;
			const m = /^MARK (\d+) (\d+)/.exec(l.translateToString(true));
			if (m && !(m[1] in marks)) marks[m[1]] = now - Number(m[2]) / 1e6;
		}
	}); true`); err != nil {
		b.Fatal(err)
	}
	c := h.client()
	n := max(b.N, 20)
	lat := make([]float64, 0, n)
	b.ResetTimer()
	for i := range n {
		if err := c.Send(context.Background(), wire.SendParams{Name: "v", Text: fmt.Sprintf("%d\n", i)}); err != nil {
			b.Fatal(err)
		}
		var ms float64
		await(b, 10*time.Second, fmt.Sprintf("mark %d in the page", i), func() bool {
			v, _ := eval[*float64](ctx, fmt.Sprintf(`window.marks[%q] ?? null`, strconv.Itoa(i)))
			if v != nil {
				ms = *v
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
	b.Logf("terminal output → rendered in the page, %d lines: min %.1f ms, median %.1f ms, p95 %.1f ms, max %.1f ms", n, lat[0], med, p95, lat[n-1])
	if med > 50 {
		b.Errorf("median %.1f ms, over the 50 ms the issue asks", med)
	}
}

// BenchmarkViewIdleCPU is issue 28's other figure: agentd's CPU time
// (/proc/PID/stat) over 20 s with a page open on an idle session (the
// list's WebSocket and a terminal's). The bar: 1 % of a core.
func BenchmarkViewIdleCPU(b *testing.B) {
	_, d, _ := viewPage(b, "sleep", "600")
	idleCPU(b, d.cmd.Process.Pid, "an idle page")
}

// idleCPU reports pid's share of a core over 20 s with what is open
// (what) and nothing happening, and fails it over 1 %.
func idleCPU(b *testing.B, pid int, what string) {
	const span = 20 * time.Second
	b.ResetTimer()
	c0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(span) // the measurement's span, not a synchronisation
	used, wall := procCPU(b, pid)-c0, time.Since(t0)
	b.StopTimer()
	share := float64(used) / float64(wall) * 100
	b.ReportMetric(share, "cpu-%")
	b.ReportMetric(0, "ns/op")
	b.Logf("agentd's CPU with %s open: %s in %s = %.2f %% of a core", what, used, wall.Round(time.Millisecond), share)
	if share > 1 {
		b.Errorf("%s costs the daemon %.2f %% of a core, over 1 %%", what, share)
	}
}

// TestViewVerbOpensOrPrints: with a display, agentctl view hands xdg-open
// (a stand-in that records its argument: the real one would start a
// browser) a private page that leads to the link, and does not print it; without one, or with --print, it prints
// it. Either link opens the page once.
func TestViewVerbOpensOrPrints(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	dir := t.TempDir()
	got := dir + "/opened"
	if err := os.WriteFile(dir+"/xdg-open", []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (string, string, int) {
		cmd := exec.Command(bin.agentctl, args...)
		cmd.Env = append(h.env(), env...)
		return h.runCmd(cmd)
	}
	pathEnv := "PATH=" + dir + ":" + os.Getenv("PATH")
	out, errOut, code := run([]string{"DISPLAY=:77", pathEnv}, "view", "py")
	if code != 0 || !strings.Contains(out, "opened the view") || strings.Contains(out, "t=") {
		t.Fatalf("view with a display: exit %d, %q %q; want opened, no link printed", code, out, errOut)
	}
	// xdg-open gets a 0600 page that sends the browser on: the token is
	// never on a command line (ps shows those to every user).
	var page string
	await(t, 10*time.Second, "xdg-open to be given the page", func() bool {
		b, err := os.ReadFile(got)
		page = string(b)
		return err == nil && page != ""
	})
	if strings.Contains(page, "t=") {
		t.Fatalf("xdg-open's argument holds the token: %q", page)
	}
	fi, err := os.Stat(page)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the page given to xdg-open: %v, mode %v; want 0600", err, fi)
	}
	b, _ := os.ReadFile(page)
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+/\?[^"]+)"`).FindStringSubmatch(string(b))
	if m == nil || !strings.Contains(m[1], "s=py") {
		t.Fatalf("the page does not send the browser on to the view for py:\n%s", b)
	}
	opened := html.UnescapeString(m[1])
	// A browser given the page lands on the view, past the token.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the browser to land on the view for py", func() bool {
		loc, _ := eval[string](ctx, `location.href`)
		return strings.HasPrefix(loc, "http://127.0.0.1:") && strings.HasSuffix(loc, "/#py") && pageText(ctx, "status") == "live"
	})
	out, _, code = run([]string{"DISPLAY=:77", pathEnv}, "view", "--print")
	printed := strings.SplitN(out, "\n", 2)[0]
	if code != 0 || !strings.HasPrefix(printed, "http://127.0.0.1:") {
		t.Fatalf("view --print: exit %d, %q", code, out)
	}
	out, _, code = run(nil, "view")
	if code != 0 || !strings.HasPrefix(out, "http://127.0.0.1:") || !strings.Contains(out, "works once") {
		t.Fatalf("view without a display: exit %d, %q; want the link printed", code, out)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	for _, u := range []string{opened, printed} {
		wants := []int{http.StatusOK, http.StatusForbidden}
		if u == opened {
			wants = wants[1:] // the browser spent it
		}
		for i, want := range wants {
			res, err := client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("use %d of %s: %s, want %d", i+1, u[:strings.Index(u, "?")], res.Status, want)
			}
		}
	}
	if _, errOut, code := run(nil, "view", "a/b"); code != 2 || !strings.Contains(errOut, "not a session name") {
		t.Errorf("view with a bad name: exit %d, %q; want a usage error naming the problem", code, errOut)
	}
}
