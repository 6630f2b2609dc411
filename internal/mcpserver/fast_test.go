package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/testhome"
	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/daemon"
	"github.com/agentd/agentd/pkg/wire"
)

// lineServer is one Run of the tools server on pipes, driven by raw lines.
type lineServer struct {
	in   io.WriteCloser
	out  *bufio.Reader
	done chan error
	fast atomic.Int64 // calls the framing served itself
}

func startLineServer(t *testing.T, cfg Config) *lineServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &lineServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	cfg.Stdin, cfg.Stdout, cfg.Stderr = inR, outW, io.Discard
	cfg.onFast = func() { s.fast.Add(1) }
	go func() { s.done <- Run(context.Background(), cfg); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("server ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("server did not end within 10 s of stdin closing")
		}
	})
	return s
}

// exchange writes line and returns the next message read, decoded; a
// notification (no answer) returns nil.
func (s *lineServer) exchange(t *testing.T, line string) any {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, `"id"`) {
		return nil
	}
	got := make(chan string, 1)
	go func() { l, _ := s.out.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("answer to %s is not JSON: %q", line, l)
		}
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no answer to %s within 20 s", line)
	}
	return nil
}

// volatile are the result fields that differ between two runs of the same
// call: clocks and counters.
var volatile = map[string]bool{"duration_ms": true, "captured_at": true, "capture_ms": true, "encode_ms": true, "frame_id": true}

var inMS = regexp.MustCompile(`in \d+ ms`)

// cutText is a text --max-output cut: what it shows starts at the same
// byte in both runs, but a duration with one digit more moves the cut by
// a byte, so only the marker's shown count is compared.
var cutText = regexp.MustCompile(`(?s)^.*\n\[cut by --max-output: (\d+) of \d+ bytes shown\]$`)

// ofBytes is a cut's whole size in act's text, which holds a duration.
var ofBytes = regexp.MustCompile(`(\d+) of \d+ bytes`)

// steady is v with the volatile fields and the duration in act's text
// taken out.
func steady(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !volatile[k] {
				out[k] = steady(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = steady(e)
		}
		return out
	case string:
		if cutText.MatchString(x) {
			return cutText.ReplaceAllString(x, "[cut by --max-output: $1 bytes shown]")
		}
		return ofBytes.ReplaceAllString(inMS.ReplaceAllString(x, "in N ms"), "$1 of N bytes")
	}
	return v
}

// startActDaemon runs agentd in this process on a private Xvfb, allowing
// act, and returns its socket.
func startActDaemon(t *testing.T) string {
	t.Helper()
	x := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	socket := filepath.Join(testhome.ShortDir(t), "agentd.sock")
	d := daemon.New(daemon.Config{SocketPath: socket, StateDir: filepath.Join(t.TempDir(), "state"), Display: x.Display, AllowAct: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("agentd did not stop within 10 s")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := wire.Dial(ctx, socket, wire.ClientOptions{})
		if err == nil {
			_, err = c.Hello(ctx, wire.HelloParams{})
			c.Close()
		}
		cancel()
		if err == nil {
			return socket
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd not serving within 10 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pointerAt moves the pointer to x, y (screen pixels), so that each
// server's run starts from the same screen.
func pointerAt(t *testing.T, socket string, x, y int) {
	t.Helper()
	c, err := wire.Dial(context.Background(), socket, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	no := false
	fx, fy := float64(x), float64(y)
	if _, err := c.Act(context.Background(), wire.ActParams{Actions: []wire.Action{{Kind: "move", X: &fx, Y: &fy}}, Observe: &no}); err != nil {
		t.Fatal(err)
	}
}

// TestFastPathAnswersAsTheSDK drives two servers, one serving act past the
// SDK (the framing's fast path) and one through the SDK, with the same
// lines against the same agentd and screen, one after the other, and holds
// every answer to be the same JSON (clocks aside): good batches, refused
// ones of every kind, the loop guard, a read-only server, a capped one.
func TestFastPathAnswersAsTheSDK(t *testing.T) {
	socket := startActDaemon(t)
	move := func(x, y int) string {
		return fmt.Sprintf(`{"kind":"move","x":%d,"y":%d}`, x, y)
	}
	moves := "[" + move(10, 10) + "," + move(20, 15) + "," + move(30, 20) + "]"
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"act","arguments":` + args + `}}`
	}
	init := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	lines := append(append([]string{}, init...),
		// Before any screenshot: coordinates have no space yet.
		call(`1`, `{"actions":`+moves+`,"observe":false}`),
		// A key needs no space.
		call(`"two"`, `{"actions":[{"kind":"key","key":"shift"}],"observe":false}`),
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"screenshot","arguments":{}}}`,
		call(`4`, `{"actions":`+moves+`,"observe":false}`),
		call(`4.5`, `{"actions":[`+move(100, 100)+`]}`),
		call(`5`, `{"actions":[`+move(101, 100)+`],"observe":true,"settle_ms":0}`),
		// Malformed calls, each an isError result naming the fix.
		call(`6`, `{"actions":[{"kind":"fly","x":1,"y":1}],"observe":false}`),
		call(`7`, `{"actions":[{"kind":"move","x":"ten","y":1}]}`),
		call(`8`, `{"actions":[{"kind":"move","x":1,"y":1,"wings":2}]}`),
		call(`9`, `{"actions":[],"observe":false}`),
		call(`10`, `{"observe":false}`),
		call(`11`, `{"actions":`+moves+`,"speed":3}`),
		call(`12`, `5`),
		call(`13`, `null`),
		call(`14`, `{"actions":[{"kind":"move","x":-5,"y":1}],"observe":false}`),
		call(`15`, `{"actions":[{"kind":"hold_key","key":"a","duration":31}],"observe":false}`),
		call(`16`, `{"actions":[{"kind":"left_click_drag","x":1,"y":1}],"observe":false}`),
		call(`17`, `{"actions":[{"kind":"click","x":1,"y":1,"to_x":3}],"observe":false}`),
		call(`18`, `{"actions":[{"kind":"key","key":"nosuchkey"}],"observe":false}`),
		call(`19`, `{"actions":[{"kind":"move","x":5000,"y":1}],"observe":false}`),
		call(`20`, `{"actions":`+moves+`,"desktop":"nope"}`),
		call(`21`, `{"actions":[{"kind":"wait","ms":1}],"settle_ms":-1}`),
		// No arguments at all, and params the fast path leaves to the SDK.
		`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"act"}}`,
		`{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"act","arguments":{"actions":`+moves+`,"observe":false},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"act","arguments":{"actions":`+moves+`,"observe":false},"_meta":{}}}`,
	)
	// The same batch, again and again: the loop guard refuses the fourth.
	for k := range 5 {
		lines = append(lines, call(fmt.Sprint(30+k), `{"actions":[`+move(200, 200)+`],"observe":false}`))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":40,"method":"ping"}`)

	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"acting", Config{Socket: socket, Yes: true}},
		{"read-only", Config{Socket: socket}},
		{"max-output", Config{Socket: socket, Yes: true, MaxOutput: 40}},
	} {
		fastCfg, sdkCfg := c.cfg, c.cfg
		sdkCfg.sdkOnly = true
		fast := startLineServer(t, fastCfg)
		sdk := startLineServer(t, sdkCfg)
		var fastAnswers, sdkAnswers []any
		pointerAt(t, socket, 512, 384)
		for _, l := range lines {
			fastAnswers = append(fastAnswers, fast.exchange(t, l))
		}
		pointerAt(t, socket, 512, 384)
		for _, l := range lines {
			sdkAnswers = append(sdkAnswers, sdk.exchange(t, l))
		}
		for k, l := range lines {
			if testing.Verbose() {
				f, _ := json.Marshal(steady(fastAnswers[k]))
				t.Logf("%s: %.80s\n -> %.300s", c.name, l, f)
			}
			if !reflect.DeepEqual(steady(fastAnswers[k]), steady(sdkAnswers[k])) {
				f, _ := json.Marshal(fastAnswers[k])
				s, _ := json.Marshal(sdkAnswers[k])
				t.Errorf("%s: %s\nfast path answered %.2000s\nthe SDK answered   %.2000s", c.name, l, f, s)
			}
		}
		// The answers are what the calls should get, so the comparison
		// is of answers that mean something.
		texts := map[string]string{}
		for k, l := range lines {
			var req struct{ ID json.RawMessage }
			json.Unmarshal([]byte(l), &req)
			b, _ := json.Marshal(fastAnswers[k])
			texts[string(req.ID)] = string(b)
		}
		for id, want := range map[string]string{"4": `"ok: 3 actions in`, "1": "take a screenshot first", "6": "(enum)", "33": "loop guard", "40": `"result":{}`} {
			switch {
			case c.name == "read-only" && id != "40" && id != "6":
				want = "(disabled)"
			case c.name == "max-output" && id == "33":
				want = `"truncated"`
			}
			if !strings.Contains(texts[id], want) {
				t.Errorf("%s: the answer to id %s is %.300s, want it to hold %s", c.name, id, texts[id], want)
			}
		}
		// Every act call but the two with _meta took the fast path.
		want := int64(0)
		for _, l := range lines {
			if strings.Contains(l, `"name":"act"`) && !strings.Contains(l, `"_meta"`) {
				want++
			}
		}
		if n := fast.fast.Load(); n != want {
			t.Errorf("%s: the fast path served %d calls, want %d", c.name, n, want)
		}
		if n := sdk.fast.Load(); n != 0 {
			t.Errorf("%s: the SDK-only server served %d calls past the SDK", c.name, n)
		}
	}
}

// fastConn is a lineConn, initialized, that serves the tool "act" with h
// past the SDK, reading stdin from the returned writer.
func fastConn(h fastHandler, version string) (*lineConn, *io.PipeWriter, *lockedBuf) {
	pr, pw := io.Pipe()
	out := &lockedBuf{}
	c := makeLineConn(out, drainTimeout)
	c.initState, c.version = 2, version
	c.fast = func(name string) fastHandler {
		if name == "act" {
			return h
		}
		return nil
	}
	go c.readLoop(bufio.NewReader(pr))
	return c, pw, out
}

// TestFastPathCancelDrainAndBatch: a call served past the SDK is cancelled
// by notifications/cancelled (its context ends, nothing is written, a
// second cancel is dropped), is answered before the server ends when stdin
// closes while it runs, and answers inside a batch's one array.
func TestFastPathCancelDrainAndBatch(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	release := make(chan struct{})
	h := func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult {
		if string(args) == `"block"` {
			<-ctx.Done()
			close(ended)
		}
		if string(args) == `"slow"` {
			<-release
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + string(args)}}}
	}
	c, pw, out := fastConn(h, "")
	io.WriteString(pw, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"act","arguments":"block"}}`+"\n")
	io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`+"\n")
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's context did not end within 10 s")
	}
	io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`+"\n")
	// A call running when stdin closes is answered before the end.
	io.WriteString(pw, `{"jsonrpc":"2.0","id":2.50,"method":"tools/call","params":{"name":"act","arguments":"slow"}}`+"\n")
	pw.Close()
	eof := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); eof <- err }()
	select {
	case err := <-eof:
		t.Fatalf("the server ended (%v) with a call still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-eof; err != io.EOF {
		t.Fatalf("read after stdin closed: %v, want EOF", err)
	}
	got := out.lines()
	if len(got) != 1 || !strings.HasPrefix(got[0], `{"jsonrpc":"2.0","id":2.50,"result":{"content":[{"type":"text","text":"done \"slow\""}]}`) {
		t.Errorf("written %q, want only the slow call's answer, with its id as sent", got)
	}

	// Under 2025-03-26, a batch of two fast calls and a cancelled one is
	// one array of the two answers.
	ended = make(chan struct{})
	c, pw, out = fastConn(h, batchVersion)
	io.WriteString(pw, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"act","arguments":{}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"act","arguments":"block"}},`+
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"act"}}]`+"\n")
	io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`+"\n")
	<-ended
	deadline := time.Now().Add(10 * time.Second)
	for out.lines()[0] == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var arr []struct {
		ID json.RawMessage `json:"id"`
	}
	if got := out.lines(); len(got) != 1 || json.Unmarshal([]byte(got[0]), &arr) != nil || len(arr) != 2 ||
		!(string(arr[0].ID)+string(arr[1].ID) == "13" || string(arr[0].ID)+string(arr[1].ID) == "31") {
		t.Errorf("the batch was answered %q, want one array answering ids 1 and 3", got)
	}
	pw.Close()
	c.Close()
}

// TestFastPathCancelReachesAgentd: an act served past the SDK and
// cancelled mid-batch is cancelled in agentd (the screen is free for the
// next batch at once, where the cancelled one would hold it for seconds),
// and never answered.
func TestFastPathCancelReachesAgentd(t *testing.T) {
	socket := startActDaemon(t)
	s := startLineServer(t, Config{Socket: socket, Yes: true})
	s.exchange(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.exchange(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.WriteString(s.in, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"act","arguments":{"actions":[{"kind":"wait","ms":5000},{"kind":"wait","ms":5000}],"observe":false}}}`+"\n")
	c, err := wire.Dial(context.Background(), socket, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The batch holds the screen once the daemon says so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		scr, err := c.Screen(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if scr.Holder != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the act batch did not take the screen within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(s.in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}`+"\n")
	// The next batch gets the screen within its 3 s lock timeout, less
	// than the cancelled batch's first wait: only the cancel frees it.
	no := false
	x, y := 5.0, 5.0
	if _, err := c.Act(context.Background(), wire.ActParams{Actions: []wire.Action{{Kind: "move", X: &x, Y: &y}}, Observe: &no, LockTimeoutMS: 3000}); err != nil {
		t.Fatalf("the next batch after the cancel: %v (the cancel did not stop the batch in agentd)", err)
	}
	if r := s.exchange(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); !strings.Contains(fmt.Sprint(r), "id:p") {
		t.Errorf("after the cancel the next answer is %v, want the ping's (the cancelled call is never answered)", r)
	}
	if n := s.fast.Load(); n != 1 {
		t.Errorf("the fast path served %d calls, want the act", n)
	}
}
