package test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// squatter is an HTTP server on the view's port while agentd is away, as a
// program of another local user could run: it records what the page sends
// it and answers /prove with a proof it cannot make.
type squatter struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH cookie=yes|no"
}

func (q *squatter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	cookie := "no"
	if r.Header.Get("Cookie") != "" {
		cookie = "yes"
	}
	q.seen = append(q.seen, r.Method+" "+r.URL.Path+" cookie="+cookie)
	q.mu.Unlock()
	switch r.URL.Path {
	case "/check":
		w.WriteHeader(http.StatusUnauthorized)
	case "/prove":
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"mac":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`))
	case "/resume":
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (q *squatter) requests() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.seen...)
}

// TestViewPageResumesButNotToASquatter: a page left open over a restart of
// agentd gets back in by itself (the list live again, no new link), and
// while agentd is away a program on the view's port learns no resume key:
// the page asks it to prove it knows the key, without its cookie, and
// hands the key over only to the real view.
func TestViewPageResumesButNotToASquatter(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "py", "--", "python3", "-q")
	raw := h.viewURL("")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(raw)); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the list live", func() bool { return pageText(ctx, "status") == "live" })

	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	// The squatter takes the port the page keeps trying.
	var ln net.Listener
	await(t, 10*time.Second, "the view's port free", func() bool {
		ln, err = net.Listen("tcp4", u.Host)
		return err == nil
	})
	q := &squatter{}
	srv := &http.Server{Handler: q}
	go srv.Serve(ln)
	// A whole try: the challenge, then the page's next try (a try that
	// handed the key over would have done so before).
	await(t, 30*time.Second, "the page to challenge the squatter and try again", func() bool {
		seen := strings.Join(q.requests(), "\n")
		i := strings.Index(seen, "GET /prove")
		return i >= 0 && strings.Contains(seen[i:], "GET /check")
	})
	srv.Close()
	for _, r := range q.requests() {
		if strings.HasPrefix(r, "POST /resume") || strings.HasPrefix(r, "GET /prove cookie=yes") {
			t.Errorf("the page sent the squatter %q", r)
		}
	}
	t.Logf("the squatter saw: %q", q.requests())

	// agentd back on the same port: the page resumes, no new link.
	d2 := h.startDaemon(nil)
	await(t, 30*time.Second, "the page to resume", func() bool {
		rows := pageRows(ctx)
		return pageText(ctx, "status") == "live" && rows["py"] != nil
	})
	if !strings.Contains(d2.stderr.String(), "reconnected") {
		t.Errorf("agentd's log does not record the page's return")
	}
}
