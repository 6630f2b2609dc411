package view

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/pkg/wire"
)

// nextJSON reads the next text message, skipping terminal output.
func nextJSON(t *testing.T, ctx context.Context, c *websocket.Conn) Message {
	t.Helper()
	for {
		typ, m, _ := readMsg(t, ctx, c)
		if typ == websocket.MessageText {
			return m
		}
	}
}

func sendText(t *testing.T, ctx context.Context, c *websocket.Conn, m Message) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestTakeOver: a page's keys reach the program only while it holds the
// lease; keys forged by a page without it (a raw WebSocket client: the
// server, not the page's script, decides) are refused and typed nowhere; a
// second page cannot take over while the first holds it; the lease ends on
// give, on an idle time and when the page goes.
func TestTakeOver(t *testing.T) {
	t.Parallel()
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "w", Status: "running"}}}
	s := start(t, f, Options{Poll: 20 * time.Millisecond, LeaseIdle: time.Hour})
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func() *websocket.Conn {
		conn, _, err := dialWS(ctx, s, "/ws/term?name=w", c, base(s))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.CloseNow() })
		if m := nextJSON(t, ctx, conn); m.Type != "start" {
			t.Fatalf("first message %+v, want start", m)
		}
		return conn
	}
	a, b := open(), open()

	// Keys from a page without the lease: refused, typed nowhere.
	if err := b.Write(ctx, websocket.MessageBinary, []byte("forged\r")); err != nil {
		t.Fatal(err)
	}
	if m := nextJSON(t, ctx, b); m.Type != "refused" || m.Code != "read_only" || !strings.Contains(m.Message, "nothing was typed") {
		t.Errorf("keys without the lease: %+v, want refused read_only", m)
	}
	// Take over: a's keys reach the program.
	sendText(t, ctx, a, Message{Type: "take"})
	m := nextJSON(t, ctx, a)
	if m.Type != "lease" || !m.Held || !strings.Contains(m.Holder, "the person in the view page (page ") {
		t.Fatalf("take: %+v, want the lease held", m)
	}
	holder := m.Holder
	// b hears who took over; a page opened now hears it after start.
	if m := nextJSON(t, ctx, b); m.Type != "lease" || m.Held || m.Holder != holder || !strings.Contains(m.Message, "read-only here") {
		t.Errorf("b as a takes over: %+v, want told %q has the keyboard", m, holder)
	}
	if m := nextJSON(t, ctx, open()); m.Type != "lease" || m.Held || m.Holder != holder || m.Since.IsZero() {
		t.Errorf("a page opened while a holds the keyboard: %+v, want told %q has it", m, holder)
	}
	if err := a.Write(ctx, websocket.MessageBinary, []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "a's keys to reach the program", func() bool { return f.typedInto("w") == "ls\r" })
	// b's keys are still refused, and b cannot take over.
	b.Write(ctx, websocket.MessageBinary, []byte("forged\r"))
	if m := nextJSON(t, ctx, b); m.Code != "read_only" {
		t.Errorf("b's keys while a holds the lease: %+v, want refused read_only", m)
	}
	sendText(t, ctx, b, Message{Type: "take"})
	if m := nextJSON(t, ctx, b); m.Type != "refused" || m.Code != "busy" || !strings.Contains(m.Message, holder) {
		t.Errorf("b taking over while a holds the lease: %+v, want busy naming %q", m, holder)
	}
	// Hand back: a's keys are refused again.
	sendText(t, ctx, a, Message{Type: "give"})
	if m := nextJSON(t, ctx, a); m.Type != "lease" || m.Held || !strings.Contains(m.Message, "handed back") {
		t.Errorf("give: %+v, want the lease handed back", m)
	}
	if m := nextJSON(t, ctx, b); m.Type != "lease" || m.Held || m.Holder != "" || !strings.Contains(m.Message, holder+" handed the keyboard back") {
		t.Errorf("b as a hands back: %+v, want told it is free", m)
	}
	a.Write(ctx, websocket.MessageBinary, []byte("late\r"))
	if m := nextJSON(t, ctx, a); m.Code != "read_only" {
		t.Errorf("a's keys after the hand-back: %+v, want refused read_only", m)
	}
	// A page that goes hands back.
	sendText(t, ctx, b, Message{Type: "take"})
	if m := nextJSON(t, ctx, b); m.Type != "lease" || !m.Held {
		t.Fatalf("b taking over after a handed back: %+v", m)
	}
	if m := nextJSON(t, ctx, a); m.Type != "lease" || m.Held || m.Holder == "" || m.Holder == holder {
		t.Errorf("a as b takes over: %+v, want told b has the keyboard", m)
	}
	b.CloseNow()
	await(t, 5*time.Second, "the closed page's lease to be handed back", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.ended) == 2 && f.ended[1] == "w: the page closed"
	})
	if f.ended[0] != "w: handed back" {
		t.Errorf("hand-backs %q", f.ended)
	}
	if got := f.typedInto("w"); got != "ls\r" {
		t.Errorf("typed into the program: %q, want only the holder's ls", got)
	}
	if s.leaseFor("w", hash(c.Value)) != "" {
		t.Error("the server still lists a lease after every page handed back")
	}
	if m := nextJSON(t, ctx, a); m.Type != "lease" || m.Held || !strings.Contains(m.Message, "handed the keyboard back (the page closed)") {
		t.Errorf("a as b's page goes: %+v, want told the keyboard is free", m)
	}
	sendText(t, ctx, a, Message{Type: "nonsense"})
	if m := nextJSON(t, ctx, a); m.Code != "bad_message" {
		t.Errorf("an unknown message: %+v, want bad_message", m)
	}
}

// TestLeaseIdleAndEnd: a lease with no key for LeaseIdle is handed back,
// and so is one whose session ends.
func TestLeaseIdleAndEnd(t *testing.T) {
	t.Parallel()
	end := make(chan struct{})
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "idle", Status: "running"}, {Name: "ends", Status: "running"}}}
	f.watch = func(ctx context.Context, name string, w io.Writer) error {
		if name == "ends" {
			select {
			case <-end:
				return fmt.Errorf("exited with code 0")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	s := start(t, f, Options{Poll: time.Hour, LeaseIdle: 300 * time.Millisecond})
	c := login(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"idle", "ends"} {
		conn, _, err := dialWS(ctx, s, "/ws/term?name="+name, c, base(s))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		nextJSON(t, ctx, conn) // start
		sendText(t, ctx, conn, Message{Type: "take"})
		if m := nextJSON(t, ctx, conn); !m.Held {
			t.Fatalf("take %s: %+v", name, m)
		}
		if name == "idle" {
			t0 := time.Now()
			m := nextJSON(t, ctx, conn)
			if m.Type != "lease" || m.Held || !strings.Contains(m.Message, "no key was typed for 300ms") || time.Since(t0) < 250*time.Millisecond {
				t.Errorf("an idle lease: %+v after %s, want handed back after 300ms", m, time.Since(t0))
			}
			continue
		}
		// Keys keep the lease: three keys 200 ms apart outlast 300 ms.
		for range 3 {
			conn.Write(ctx, websocket.MessageBinary, []byte("k"))
			time.Sleep(200 * time.Millisecond) // the span the keys keep the lease over
		}
		f.mu.Lock()
		_, held := f.leases["ends"]
		f.mu.Unlock()
		if !held {
			t.Error("a lease whose page types every 200 ms was handed back (idle 300 ms)")
		}
		close(end)
		if m := nextJSON(t, ctx, conn); m.Type != "end" {
			t.Errorf("the session ended: %+v, want end", m)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []string{"idle: no key typed for 300ms", "ends: the session's terminal ended"}
	if fmt.Sprint(f.ended) != fmt.Sprint(want) {
		t.Errorf("hand-backs %q, want %q", f.ended, want)
	}
}

func await(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // polling
	}
}

// TestApprove: the page's Approve and Deny act as agentctl approve/deny
// --prompt, only for a same-origin JSON POST with the cookie, as the
// lease's holder when the browser's page holds it.
func TestApprove(t *testing.T) {
	t.Parallel()
	type call struct {
		name, prompt, lease string
		deny                bool
	}
	calls := make(chan call, 8)
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "cc", Status: "running", State: "needs_approval"}}}
	f.approve = func(name string, deny bool, promptID, lease string) (*wire.ApproveResult, error) {
		calls <- call{name, promptID, lease, deny}
		if promptID != "p1" {
			return nil, wire.Errorf(wire.CodeInvalidStatus, "session %q asks something else now (prompt p2, not %s): Bash command rm -rf x; nothing was typed", name, promptID)
		}
		return &wire.ApproveResult{Name: name, PromptID: promptID, Choice: "Yes", Kind: "permission"}, nil
	}
	s := start(t, f, Options{Poll: time.Hour})
	c := login(t, s)
	post := func(body string, mod func(*http.Request)) (*http.Response, ApproveAnswer) {
		t.Helper()
		req, _ := http.NewRequest("POST", base(s)+"/api/approve", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", base(s))
		req.AddCookie(c)
		if mod != nil {
			mod(req)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var a ApproveAnswer
		b, _ := io.ReadAll(res.Body)
		json.NewDecoder(bytes.NewReader(b)).Decode(&a)
		return res, a
	}
	good := `{"name":"cc","prompt_id":"p1"}`
	for _, tc := range []struct {
		what string
		body string
		mod  func(*http.Request)
		want int
	}{
		{"no Origin", good, func(r *http.Request) { r.Header.Del("Origin") }, http.StatusForbidden},
		{"a foreign Origin", good, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
		{"a cross-site fetch", good, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		{"a form's body", "name=cc&prompt_id=p1", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
		{"no cookie", good, func(r *http.Request) { r.Header.Del("Cookie") }, http.StatusUnauthorized},
		{"no prompt id", `{"name":"cc"}`, nil, http.StatusBadRequest},
		{"an unknown field", `{"name":"cc","prompt_id":"p1","x":1}`, nil, http.StatusBadRequest},
	} {
		if res, _ := post(tc.body, tc.mod); res.StatusCode != tc.want {
			t.Errorf("approve with %s: %s, want %d", tc.what, res.Status, tc.want)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("refused requests reached the session: %d", len(calls))
	}
	res, a := post(good, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") })
	if res.StatusCode != http.StatusOK || a.Result == nil || a.Result.Choice != "Yes" {
		t.Fatalf("approve: %s %+v", res.Status, a)
	}
	if got := <-calls; got != (call{"cc", "p1", "", false}) {
		t.Errorf("approve reached the session as %+v", got)
	}
	// A prompt that changed: refused, with what the screen shows now.
	res, a = post(`{"name":"cc","prompt_id":"p0","deny":true}`, nil)
	if res.StatusCode != http.StatusConflict || a.Code != "invalid_status" || !strings.Contains(a.Message, "rm -rf x") {
		t.Errorf("deny of a stale prompt: %s %+v, want 409 with what is asked now", res.Status, a)
	}
	if got := <-calls; !got.deny {
		t.Errorf("deny reached the session as %+v", got)
	}
	// With the lease held by this browser's page, approve acts as its holder.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := dialWS(ctx, s, "/ws/term?name=cc", c, base(s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	nextJSON(t, ctx, conn)
	sendText(t, ctx, conn, Message{Type: "take"})
	if m := nextJSON(t, ctx, conn); !m.Held {
		t.Fatalf("take: %+v", m)
	}
	post(good, nil)
	if got := <-calls; got.lease == "" {
		t.Errorf("approve from the holder's browser carried no lease: %+v", got)
	}
}

// TestListDetails: sessions that need a person come with what they ask.
func TestListDetails(t *testing.T) {
	t.Parallel()
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "a", Status: "running", State: "working"}, {Name: "cc", Status: "running", State: "needs_approval"}},
		details: map[string]*wire.StateDetail{"cc": {Kind: "permission", Tool: "Bash command", Subject: "touch x", PromptID: "p1"}}}
	s := start(t, f, Options{Poll: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := dialWS(ctx, s, "/ws/list", login(t, s), base(s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	m := nextJSON(t, ctx, conn)
	if len(m.Details) != 1 || m.Details["cc"] == nil || m.Details["cc"].PromptID != "p1" {
		t.Errorf("list details %+v, want cc's prompt p1 only", m.Details)
	}
}

// TestLeaseOfAPageThatNeverReads: a page that holds the lease and stops
// reading is dropped after the write timeout, and its lease handed back:
// nothing is left holding the session.
func TestLeaseOfAPageThatNeverReads(t *testing.T) {
	t.Parallel()
	start1 := make(chan struct{})
	released := make(chan struct{})
	f := &fakeSessions{rows: []wire.SessionRow{{Name: "flood", Status: "running"}}}
	f.watch = func(ctx context.Context, name string, w io.Writer) error {
		defer close(released)
		<-start1
		chunk := []byte(strings.Repeat("x", 32<<10))
		for ctx.Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	s := start(t, f, Options{WriteTimeout: 300 * time.Millisecond, Poll: time.Hour, LeaseIdle: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := dialWS(ctx, s, "/ws/term?name=flood", login(t, s), base(s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	nextJSON(t, ctx, conn) // start
	sendText(t, ctx, conn, Message{Type: "take"})
	if m := nextJSON(t, ctx, conn); !m.Held {
		t.Fatalf("take: %+v", m)
	}
	close(start1) // the flood begins; the page reads no more
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch of a page that never reads still runs after 10 s (write timeout 300 ms)")
	}
	await(t, 5*time.Second, "the lease of the dropped page to be handed back", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.leases) == 0 && len(f.ended) == 1 && f.ended[0] == "flood: the page closed"
	})
}
