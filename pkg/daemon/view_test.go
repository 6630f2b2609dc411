package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestViewStartsOnAskAndStopsWithTheDaemon: agent.view starts one view on
// 127.0.0.1 and answers a new one-time URL each time; a bad name is the
// caller's; the view's port closes when the daemon stops.
func TestViewStartsOnAskAndStopsWithTheDaemon(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	c := td.client(t)
	ctx := context.Background()
	if _, err := c.View(ctx, wire.ViewParams{Name: "A/B"}); !errors.Is(err, wire.ErrInvalidParams) {
		t.Errorf("agent.view with a bad name: %v, want invalid_params", err)
	}
	a, err := c.View(ctx, wire.ViewParams{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.View(ctx, wire.ViewParams{Name: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	ua, _ := url.Parse(a.URL)
	ub, _ := url.Parse(b.URL)
	if ua.Hostname() != "127.0.0.1" || ua.Port() != ub.Port() || a.Port != b.Port {
		t.Errorf("two agent.view: %s and %s, want one view on 127.0.0.1", ua.Host, ub.Host)
	}
	if ua.Query().Get("t") == "" || ua.Query().Get("t") == ub.Query().Get("t") || ub.Query().Get("s") != "w1" {
		t.Errorf("tokens %q and %q (session %q): want two different one-time tokens, the second for w1", ua.Query().Get("t"), ub.Query().Get("t"), ub.Query().Get("s"))
	}
	if a.IdleMS != (15 * time.Minute).Milliseconds() {
		t.Errorf("idle %d ms, want the 15 min default", a.IdleMS)
	}
	td.cancel() // the cleanup waits for the stop
	await(t, 10*time.Second, "the view's port to close with the daemon", func() bool {
		conn, err := net.DialTimeout("tcp", ua.Host, time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
}

// TestViewFromConfigAndAfterIdle: view = true starts the view with the
// daemon; once it stopped for idleness, the next agent.view starts another
// whose link works.
func TestViewFromConfigAndAfterIdle(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{View: true, ViewIdle: time.Second})
	td.view.mu.Lock()
	first := td.view.srv
	td.view.mu.Unlock()
	if first == nil {
		t.Fatal("view = true: no view running after start")
	}
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the view still listens 10 s into a 1 s idle time with no page")
	}
	res, err := td.client(t).View(context.Background(), wire.ViewParams{})
	if err != nil {
		t.Fatal(err)
	}
	if res.IdleMS != 1000 {
		t.Errorf("idle %d ms, want view_idle's 1000", res.IdleMS)
	}
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := client.Get(res.URL)
	if err != nil {
		t.Fatalf("the link of the view started again: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("the link of the view started again: %s", r.Status)
	}
}
