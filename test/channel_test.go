package test

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/pkg/wire"
)

// listenProc is a running `agentctl channel listen`.
type listenProc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func (h *home) startListen(args ...string) *listenProc {
	h.t.Helper()
	return h.startListenEnv(nil, args...)
}

// startListenEnv is startListen with extra environment (a session's
// token, to bind its channel from outside it).
func (h *home) startListenEnv(env []string, args ...string) *listenProc {
	h.t.Helper()
	cmd := exec.Command(bin.agentctl, append([]string{"channel", "listen"}, args...)...)
	cmd.Env = h.env(env...)
	lp := &listenProc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = lp.stdout, lp.stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { lp.err = cmd.Wait(); close(lp.done) }()
	h.t.Cleanup(func() {
		cmd.Process.Kill()
		<-lp.done
	})
	return lp
}

// messages parses the JSON lines the listener printed.
func (lp *listenProc) messages(t testing.TB) []wire.ChannelMessage {
	var out []wire.ChannelMessage
	for _, line := range strings.Split(lp.stdout.String(), "\n") {
		if line == "" {
			continue
		}
		var m wire.ChannelMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			continue // a line still being written
		}
		out = append(out, m)
	}
	return out
}

// awaitChannel waits until channel id is registered.
func (h *home) awaitChannel(id string) wire.ChannelRow {
	h.t.Helper()
	var row wire.ChannelRow
	await(h.t, 10*time.Second, "channel "+id+" registered", func() bool {
		c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
		if err != nil {
			return false
		}
		defer c.Close()
		l, err := c.ListChannels(context.Background())
		if err != nil {
			return false
		}
		for _, ch := range l.Channels {
			if ch.ChannelID == id || (id == "" && len(l.Channels) > 0) {
				row = ch
				return true
			}
		}
		return false
	})
	return row
}

func TestChannelListenAndPushThroughAgentctl(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	// Binding s1 needs proof of running inside it: its token.
	h.ctl(0, "spawn", "s1", "--", "cat")
	lp := h.startListenEnv([]string{"AGENTD_SESSION_TOKEN=" + h.sessionToken("s1")}, "--id", "svc.1", "--session", "s1")
	row := h.awaitChannel("svc.1")
	if row.Session != "s1" || row.Listener.PID != lp.cmd.Process.Pid || !strings.HasSuffix(row.Listener.Exe, "agentctl") {
		t.Errorf("list row %+v, want bound to s1 with the listener's pid %d and executable", row, lp.cmd.Process.Pid)
	}
	h.ctl(0, "channel", "push", "svc.1", `{"a": 1}`)
	h.ctl(0, "channel", "push", "--session", "s1", "plain text")
	h.ctl(0, "channel", "push", "svc.1", "--text", "42")
	h.ctl(0, "--timeout", "10s", "channel", "push", "svc.1", "--ack", "[true]")
	out := h.ctl(0, "channel", "list")
	if !strings.Contains(out, "svc.1") || !strings.Contains(out, "s1") {
		t.Errorf("channel list:\n%s\nwant svc.1 bound to s1", out)
	}
	var msgs []wire.ChannelMessage
	await(t, 10*time.Second, "4 messages printed", func() bool { msgs = lp.messages(t); return len(msgs) >= 4 })
	want := []string{`{"a":1}`, `"plain text"`, `"42"`, `[true]`}
	for i, m := range msgs {
		if m.Seq != uint64(i+1) || string(m.Message) != want[i] || m.ChannelID != "svc.1" || m.From.PID == 0 || !strings.HasSuffix(m.From.Exe, "agentctl") {
			t.Errorf("message %d = %+v, want seq %d %s from agentctl", i, m, i+1, want[i])
		}
	}

	long := strings.Repeat("x", 65*1024)
	cases := []struct {
		name string
		args []string
		exit int
	}{
		{"unknown channel", []string{"channel", "push", "nobody", "1"}, 20},
		{"unknown session", []string{"channel", "push", "--session", "ghost", "1"}, 20},
		{"message over 64 KiB", []string{"channel", "push", "svc.1", long}, 2},
		{"reply to an unknown ask", []string{"channel", "reply", "ask-0000", "x"}, 2},
		{"id of 1000 characters", []string{"channel", "listen", "--id", strings.Repeat("a", 1000)}, 2},
		{"id with control characters", []string{"channel", "listen", "--id", "a\x1b[2Jb"}, 2},
		{"id taken", []string{"channel", "listen", "--id", "svc.1"}, 18},
		{"no sub-command", []string{"channel"}, 2},
		{"unknown sub-command", []string{"channel", "shout"}, 2},
		{"push without a message", []string{"channel", "push", "svc.1"}, 2},
	}
	for _, tc := range cases {
		out, errOut, code := h.agentctl("", tc.args...)
		if code != tc.exit {
			t.Errorf("%s: agentctl %.60q exited %d, want %d\nstdout: %s\nstderr: %s", tc.name, strings.Join(tc.args, " "), code, tc.exit, out, errOut)
		}
	}

	// The listener goes away: its channel with it.
	lp.cmd.Process.Signal(syscall.SIGKILL)
	<-lp.done
	await(t, 10*time.Second, "push to a dead listener refused", func() bool {
		_, _, code := h.agentctl("", "channel", "push", "svc.1", "1")
		return code == 20
	})
}

func TestChannelListenerSeesDaemonRestart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	lp := h.startListen("--id", "keep")
	h.awaitChannel("keep")
	h.ctl(0, "channel", "push", "keep", "before")
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	select {
	case <-lp.done:
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not notice the daemon going away")
	}
	if code := lp.cmd.ProcessState.ExitCode(); code != wire.ExitUnreachable {
		t.Errorf("listener exited %d, want %d\nstderr: %s", code, wire.ExitUnreachable, lp.stderr)
	}
	if msgs := lp.messages(t); len(msgs) != 1 || string(msgs[0].Message) != `"before"` {
		t.Errorf("listener printed %+v, want the one message", msgs)
	}
	h.startDaemon(nil)
	lp2 := h.startListen("--id", "keep", "--count", "1")
	h.awaitChannel("keep")
	h.ctl(0, "--timeout", "10s", "channel", "push", "keep", "--ack", "after")
	select {
	case <-lp2.done:
	case <-time.After(10 * time.Second):
		t.Fatal("listen --count 1 did not exit after its message")
	}
	if lp2.err != nil || !strings.Contains(lp2.stdout.String(), `"after"`) {
		t.Errorf("second listener: %v, printed %q", lp2.err, lp2.stdout)
	}
}

// tapTransport takes Claude Code's channel notifications out of what an
// MCP client reads, so the test can look at them (the SDK's client does
// not know them).
type tapTransport struct {
	inner mcp.Transport
	notes chan *jsonrpc.Request
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, notes: t.notes}, nil
}

type tapConn struct {
	mcp.Connection
	notes chan *jsonrpc.Request
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/claude/channel" {
			c.notes <- r
			continue
		}
		return m, nil
	}
}

// channelEvent is the params of notifications/claude/channel.
type channelEvent struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

func nextEvent(t *testing.T, notes <-chan *jsonrpc.Request) channelEvent {
	t.Helper()
	select {
	case r := <-notes:
		var ev channelEvent
		dec := json.NewDecoder(strings.NewReader(string(r.Params)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("channel event params %s: %v, want exactly {content, meta}", r.Params, err)
		}
		metaKey := regexp.MustCompile(`^[A-Za-z0-9_]+$`)
		for k := range ev.Meta {
			if !metaKey.MatchString(k) {
				t.Errorf("meta key %q would be dropped by Claude Code", k)
			}
		}
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/claude/channel within 15s")
	}
	return channelEvent{}
}

func TestChannelMCPBridge(t *testing.T) {
	t.Parallel()
	// The SDK's newest protocol, and the initialize handshake Claude Code uses.
	for _, version := range []string{"latest", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testMCPBridge(t, strings.TrimPrefix(version, "latest"))
		})
	}
}

func testMCPBridge(t *testing.T, protocolVersion string) {
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "cc", "--", "cat")

	cmd := exec.Command(bin.agentctl, "channel", "mcp")
	// Run from the test, not inside cc: the bridge proves cc with its token.
	cmd.Env = h.env("AGENTD_SESSION=cc", "AGENTD_SESSION_TOKEN="+h.sessionToken("cc"))
	bridgeErr := &syncBuffer{}
	cmd.Stderr = bridgeErr
	notes := make(chan *jsonrpc.Request, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "channel-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &tapTransport{inner: &mcp.CommandTransport{Command: cmd}, notes: notes},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("connect to agentctl channel mcp: %v\nstderr: %s", err, bridgeErr)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	if _, ok := caps.Experimental["claude/channel"]; !ok || caps.Tools == nil {
		t.Errorf("server capabilities %+v, want experimental claude/channel and tools", caps)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "reply" {
		t.Fatalf("tools %+v %v, want the one reply tool", tools, err)
	}

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bridge stderr:\n%s", bridgeErr)
		}
	})
	row := h.awaitChannel("")
	if row.Session != "cc" {
		t.Fatalf("bridge registered %+v, want a channel bound to session cc", row)
	}

	// A plain push becomes an event whose content is the string.
	h.ctl(0, "--timeout", "10s", "channel", "push", "--session", "cc", "--ack", "build failed on main")
	ev := nextEvent(t, notes)
	if ev.Content != "build failed on main" || ev.Meta["channel_id"] != row.ChannelID || ev.Meta["seq"] != "1" || ev.Meta["from_pid"] == "" {
		t.Errorf("push event = %+v, want the text with channel_id %s, seq 1, from_pid", ev, row.ChannelID)
	}

	// agent.ask reaches Claude through the bridge; the reply tool answers it.
	c := h.client()
	type answer struct {
		r   *wire.AskResult
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		r, err := c.Ask(ctx, wire.AskParams{Name: "cc", Text: "what is 6*7?", TimeoutMS: 30000})
		asked <- answer{r, err}
	}()
	ev = nextEvent(t, notes)
	if ev.Content != "what is 6*7?" || ev.Meta["kind"] != "ask" || !strings.HasPrefix(ev.Meta["ask_id"], "ask-") || ev.Meta["seq"] != "2" {
		t.Fatalf("ask event = %+v, want the question with kind ask, an ask_id and seq 2", ev)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reply", Arguments: map[string]any{"ask_id": ev.Meta["ask_id"], "text": "42"}})
	if err != nil || res.IsError {
		t.Fatalf("reply tool: %+v %v", res, err)
	}
	a := <-asked
	if a.err != nil || a.r.Reason != "reply" || a.r.Answer != "42" || a.r.Name != "cc" {
		t.Errorf("ask answered %+v %v, want reason reply and 42", a.r, a.err)
	}
	// The ask through the channel is in the session's log and counter.
	logs, _, _ := h.agentctl("", "--json", "logs", "cc")
	if !strings.Contains(logs, `"type":"ask"`) || !strings.Contains(logs, `"reason":"reply"`) {
		t.Errorf("the channel ask is not in the session's log:\n%s", logs)
	}
	if st, _, _ := h.agentctl("", "--json", "status", "cc"); !strings.Contains(st, `"asks":1`) {
		t.Errorf("asks counter after a channel ask: %s", st)
	}
	// Replying again is refused, as a tool error with ok false (not a
	// protocol error).
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "reply", Arguments: map[string]any{"ask_id": ev.Meta["ask_id"], "text": "again"}})
	if err != nil || !res.IsError || !strings.Contains(string(mustJSON(t, res.StructuredContent)), `"ok":false`) {
		t.Errorf("second reply: %+v %v, want a tool error with ok false", res, err)
	}
	if strings.Contains(bridgeErr.String(), "panic") {
		t.Errorf("bridge stderr: %s", bridgeErr)
	}
}
