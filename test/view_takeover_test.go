package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/view"
	"github.com/agentd/agentd/pkg/wire"
)

// viewCookie trades a fresh one-time URL for the view's cookie, as a
// browser would, and returns the server's host:port with it.
func (h *home) viewCookie(name string) (string, *http.Cookie) {
	h.t.Helper()
	u, err := url.Parse(h.viewURL(name))
	if err != nil {
		h.t.Fatal(err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	res, err := client.Get(u.String())
	if err != nil {
		h.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || len(res.Cookies()) != 1 {
		h.t.Fatalf("trading the view's token: %s, cookies %v", res.Status, res.Cookies())
	}
	return u.Host, res.Cookies()[0]
}

// rawTerm opens a session's terminal WebSocket as a plain client, not the
// page: whatever it sends, the server decides.
func rawTerm(t *testing.T, ctx context.Context, host string, c *http.Cookie, name string) *websocket.Conn {
	t.Helper()
	hdr := http.Header{"Cookie": {c.Name + "=" + c.Value}, "Origin": {"http://" + host}}
	conn, _, err := websocket.Dial(ctx, "ws://"+host+"/ws/term?name="+url.QueryEscape(name), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// nextText reads a view WebSocket's next JSON message, skipping output.
func nextText(t *testing.T, ctx context.Context, conn *websocket.Conn) view.Message {
	t.Helper()
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the view's WebSocket: %v", err)
		}
		if typ != websocket.MessageText {
			continue
		}
		var m view.Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// leaseOf is the lease agentctl status --json shows, nil for none.
func (h *home) leaseOf(name string) *wire.SessionLease {
	h.t.Helper()
	var env struct{ Result wire.SessionStatus }
	if err := json.Unmarshal([]byte(h.ctl(0, "status", name, "--json")), &env); err != nil {
		h.t.Fatal(err)
	}
	return env.Result.Lease
}

// typeKeys types s into the focused element as a keyboard does: each key
// a keyDown that carries its text, then a keyUp, so the browser makes the
// keypress and input events itself and skips them when the page cancels
// the keydown, as xterm.js does. (chromedp.SendKeys sends a separate char
// event that a cancelled keydown does not stop: xterm.js would see each
// key twice, which no person's browser does.)
func typeKeys(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range s {
			text := string(r)
			if r == '\n' {
				text = "\r"
			}
			key := chromedp.KeyEvent(string(r), func(k *input.DispatchKeyEventParams) {
				switch k.Type {
				case kb.KeyDown:
					k.Text, k.UnmodifiedText = text, text
				case kb.KeyChar:
					// KeyEvent skips a char event with a modifier
					// other than Shift: this one goes unsent.
					k.Modifiers |= int64(chromedp.ModifierAlt)
				}
			})
			if _, err := key(ctx, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestViewTakeOverInChromium: the page's Take over gives the person the
// keyboard (keys typed in xterm.js reach the program; agentctl's sends and
// asks are busy naming the page; status and list show it; a second page
// is refused; keys forged by a page without the lease are dropped), Hand
// back, a page that goes and a restart of agentd end it, and both ends are
// in the event log and agentd's log.
func TestViewTakeOverInChromium(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "py", "--", "python3", "-q")
	c := h.client()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(h.viewURL("py"))); err != nil {
		t.Fatal(err)
	}
	visible := func(ctx context.Context, id string) bool {
		v, _ := eval[bool](ctx, `!document.getElementById("`+id+`").hidden`)
		return v
	}
	await(t, 10*time.Second, "the terminal and its Take over button", func() bool {
		return pageScreen(ctx) != nil && visible(ctx, "take")
	})
	await(t, 10*time.Second, "python's prompt in the page", func() bool {
		return slices.ContainsFunc(pageScreen(ctx), func(l string) bool { return strings.HasPrefix(l, ">>>") })
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to hold the keyboard", func() bool {
		return pageText(ctx, "term-mode") == "you have the keyboard" && visible(ctx, "give")
	})
	l := h.leaseOf("py")
	if l == nil || !strings.HasPrefix(l.Holder, "the person in the view page (page ") || time.Since(l.Since) > time.Minute {
		t.Fatalf("status while taken over: lease %+v", l)
	}
	if out := h.ctl(0, "status", "py"); !strings.Contains(out, "taken over by "+l.Holder) {
		t.Errorf("status while taken over does not say so:\n%s", out)
	}
	var list struct{ Result wire.ListResult }
	json.Unmarshal([]byte(h.ctl(0, "list", "--json")), &list)
	if len(list.Result.Sessions) != 1 || list.Result.Sessions[0].Lease == nil || list.Result.Sessions[0].Lease.Holder != l.Holder {
		t.Errorf("list --json while taken over: %+v, want the lease of %q", list.Result.Sessions, l.Holder)
	}
	// Agents are told busy, naming the holder.
	for _, args := range [][]string{{"send", "py", "print('agent'+'-send')\n"}, {"ask", "py", "print('agent'+'-ask')", "--timeout", "5s"}} {
		_, errOut, code := h.agentctl("", args...)
		if code != 18 || !strings.Contains(errOut, `session "py" is taken over by `+l.Holder) || !strings.Contains(errOut, "hand back") {
			t.Errorf("agentctl %s while taken over: exit %d, %q; want busy (18) naming the page", args[0], code, errOut)
		}
	}
	// The person's keys reach the program.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#term")), typeKeys("print('from'+'-the-holder')\r")); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the holder's keys in agentctl snapshot", func() bool {
		s, err := c.Snapshot(context.Background(), "py")
		return err == nil && slices.Contains(trimLines(s.Lines), "from-the-holder")
	})
	// A page without the lease: keys forged on its WebSocket are refused
	// and typed nowhere, and it cannot take over while this page holds it.
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	host, cookie := h.viewCookie("")
	raw := rawTerm(t, wctx, host, cookie, "py")
	if m := nextText(t, wctx, raw); m.Type != "start" {
		t.Fatalf("raw client's first message: %+v", m)
	}
	// It hears who has the keyboard.
	if m := nextText(t, wctx, raw); m.Type != "lease" || m.Held || m.Holder != l.Holder {
		t.Errorf("raw client opened while the page holds the lease: %+v, want told %q has it", m, l.Holder)
	}
	if err := raw.Write(wctx, websocket.MessageBinary, []byte("print('for'+'ged')\r")); err != nil {
		t.Fatal(err)
	}
	if m := nextText(t, wctx, raw); m.Type != "refused" || m.Code != "read_only" {
		t.Errorf("forged keys: %+v, want refused read_only", m)
	}
	raw.Write(wctx, websocket.MessageText, []byte(`{"type":"take"}`))
	if m := nextText(t, wctx, raw); m.Type != "refused" || m.Code != "busy" || !strings.Contains(m.Message, l.Holder) {
		t.Errorf("a take-over while the page holds the lease: %+v, want busy naming %q", m, l.Holder)
	}
	// Hand back: agents type again.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#give"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to be read-only again", func() bool {
		return pageText(ctx, "term-mode") == "read-only" && visible(ctx, "take")
	})
	if l := h.leaseOf("py"); l != nil {
		t.Errorf("status after the hand-back: lease %+v", l)
	}
	if m := nextText(t, wctx, raw); m.Type != "lease" || m.Held || !strings.Contains(m.Message, "handed the keyboard back") {
		t.Errorf("raw client as the page hands back: %+v, want told the keyboard is free", m)
	}
	if err := c.Send(context.Background(), wire.SendParams{Name: "py", Text: "print(6*7)\n"}); err != nil {
		t.Fatalf("send after the hand-back: %v", err)
	}
	await(t, 10*time.Second, "the page to show 42", func() bool { return slices.Contains(trimLines(pageScreen(ctx)), "42") })
	snap, _ := c.Snapshot(context.Background(), "py")
	if s := strings.Join(snap.Lines, "\n"); strings.Contains(s, "forged") || strings.Contains(s, "agent-") {
		t.Errorf("a refused send, ask or forged key reached the program:\n%s", s)
	}
	// The raw client takes over now, then goes: its lease ends with it.
	raw.Write(wctx, websocket.MessageText, []byte(`{"type":"take"}`))
	if m := nextText(t, wctx, raw); m.Type != "lease" || !m.Held {
		t.Fatalf("a take-over after the hand-back: %+v", m)
	}
	if h.leaseOf("py") == nil {
		t.Fatal("no lease in status after the raw client took over")
	}
	// The page in Chromium says who has the keyboard now.
	await(t, 10*time.Second, "the page to say another page took over", func() bool {
		return strings.Contains(pageText(ctx, "term-message"), "took over the keyboard") && pageText(ctx, "term-mode") == "read-only"
	})
	raw.CloseNow()
	await(t, 10*time.Second, "the lease of a page that went to end", func() bool { return h.leaseOf("py") == nil })
	// Both ends of each lease are in the event log.
	logs, err := c.Logs(context.Background(), wire.LogsParams{Name: "py"})
	if err != nil {
		t.Fatal(err)
	}
	var marks []string
	for _, ev := range logs.Events {
		if ev.Type == wire.EventMarker && ev.Reason != "" {
			marks = append(marks, ev.Reason+" "+ev.Text)
		}
	}
	if len(marks) != 4 || !strings.HasPrefix(marks[0], "take_over taken over by "+l.Holder) || !strings.HasSuffix(marks[1], ": handed back") ||
		!strings.HasPrefix(marks[2], "take_over") || !strings.HasSuffix(marks[3], ": the page closed") {
		t.Errorf("the event log's lease markers: %q", marks)
	}
	if n := strings.Count(d.stderr.String(), "session taken over"); n != 2 {
		t.Errorf("agentd's log has %d take-overs, want 2", n)
	}
	// A page left open, holding the lease, over a restart of agentd: the
	// lease ends with the daemon; the page reconnects by itself to the
	// view the new agentd serves on the same port with the same cookie,
	// read-only, and takes nothing over again.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to hold the keyboard again", func() bool { return pageText(ctx, "term-mode") == "you have the keyboard" })
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	await(t, 20*time.Second, "the page to say agentd does not answer", func() bool {
		return strings.Contains(pageText(ctx, "term-message"), "not answering") && pageText(ctx, "term-mode") == "read-only"
	})
	h.startDaemon(nil)
	await(t, 30*time.Second, "the page to reconnect, read-only", func() bool {
		return pageText(ctx, "status") == "live" && pageText(ctx, "term-mode") == "read-only" && visible(ctx, "take") &&
			pageScreen(ctx) != nil && !visible(ctx, "term-message")
	})
	if l := h.leaseOf("py"); l != nil {
		t.Errorf("a lease after agentd restarted: %+v", l)
	}
	if err := h.client().Send(context.Background(), wire.SendParams{Name: "py", Text: "print('after'+'-restart')\n"}); err != nil {
		t.Errorf("send after agentd restarted: %v", err)
	}
	await(t, 10*time.Second, "the reconnected page to show the output", func() bool {
		return slices.Contains(trimLines(pageScreen(ctx)), "after-restart")
	})
	if os.Getenv("AGENTD_VIEW_SCREENSHOT") != "" {
		if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(os.Getenv("AGENTD_VIEW_SCREENSHOT"), png, 0o600)
		}
	}
}

// BenchmarkViewKeyEcho: with the keyboard taken over, a key typed in the
// page → its echo rendered in the page: xterm.js's onData (the key leaving
// for the server) to the first render that shows it, on the page's clock.
// The program is cat; the terminal's echo is the kernel's. 20 keys, one at
// a time.
func BenchmarkViewKeyEcho(b *testing.B) {
	_, _, ctx := viewPage(b, "cat")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#take"))); err != nil {
		b.Fatal(err)
	}
	await(b, 10*time.Second, "the keyboard", func() bool { return pageText(ctx, "term-mode") == "you have the keyboard" })
	if _, err := eval[bool](ctx, `window.keyAt = []; window.echoAt = [];
		agentdTerm.onData(() => keyAt.push(performance.now()));
		agentdTerm.onRender(() => {
			const b = agentdTerm.buffer.active;
			const l = b.getLine(b.baseY + b.cursorY);
			const n = l ? l.translateToString(true).length : 0;
			while (echoAt.length < n) echoAt.push(performance.now());
		}); true`); err != nil {
		b.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#term"))); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 20)
	lat := make([]float64, 0, n)
	b.ResetTimer()
	for i := range n {
		if err := chromedp.Do(ctx, typeKeys("k")); err != nil {
			b.Fatal(err)
		}
		var ms float64
		await(b, 10*time.Second, fmt.Sprintf("echo %d in the page", i), func() bool {
			v, _ := eval[*float64](ctx, fmt.Sprintf(`echoAt.length > %d && keyAt.length > %d ? echoAt[%d] - keyAt[%d] : null`, i, i, i, i))
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
	b.Logf("key typed in the page → its echo rendered in the page, %d keys: min %.1f ms, median %.1f ms, p95 %.1f ms, max %.1f ms", n, lat[0], med, p95, lat[n-1])
}
