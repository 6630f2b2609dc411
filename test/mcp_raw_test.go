package test

// Raw bytes on the MCP servers' stdin, no SDK: every malformed line is
// answered per JSON-RPC (or ignored where the spec says so) and the server
// goes on, which a ping after each case proves.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawMCP is an MCP server process driven by raw lines.
type rawMCP struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte // stdout, one message a line
	stderr *syncBuffer
	n      int
}

// startRawMCP starts agentctl with args (mcp or channel mcp).
func (h *home) startRawMCP(t *testing.T, args ...string) *rawMCP {
	t.Helper()
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env("AGENTD_SESSION=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &rawMCP{t: t, stdin: stdin, lines: make(chan []byte, 1024), stderr: stderr}
	go func() {
		defer close(m.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			m.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v after stdin closed, want 0\nstderr: %s", strings.Join(args, " "), err, stderr)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not exit after stdin closed", strings.Join(args, " "))
		}
		if strings.Contains(stderr.String(), "panic") {
			t.Errorf("panic on stderr:\n%s", stderr)
		}
	})
	return m
}

// send writes b and a newline.
func (m *rawMCP) send(b []byte) {
	m.t.Helper()
	if _, err := m.stdin.Write(append(append([]byte(nil), b...), '\n')); err != nil {
		m.t.Fatalf("write stdin: %v\nstderr: %s", err, m.stderr)
	}
}

// rawMsg is a message as the server wrote it, the id kept as its bytes.
type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Params json.RawMessage `json:"params"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

// next reads the next message, failing the test after a deadline.
func (m *rawMCP) next(what string) rawMsg {
	m.t.Helper()
	select {
	case l, ok := <-m.lines:
		if !ok {
			m.t.Fatalf("%s: the server closed stdout (it ended)\nstderr: %s", what, m.stderr)
		}
		var r rawMsg
		if err := json.Unmarshal(l, &r); err != nil {
			m.t.Fatalf("%s: the server wrote a line that is not JSON: %q", what, l)
		}
		r.raw = l
		return r
	case <-time.After(30 * time.Second):
		m.t.Fatalf("%s: no message from the server in 30 s\nstderr: %s", what, m.stderr)
	}
	return rawMsg{}
}

// ping sends a ping and returns every message written before its answer.
func (m *rawMCP) ping(after string) []rawMsg {
	m.t.Helper()
	m.n++
	id := fmt.Sprintf(`"ping-%d"`, m.n)
	m.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	var seen []rawMsg
	for {
		r := m.next("the ping after " + after)
		if string(r.ID) == id {
			if r.Error != nil || string(r.Result) != "{}" {
				m.t.Fatalf("ping after %s: %s, want an empty result", after, r.raw)
			}
			return seen
		}
		seen = append(seen, r)
	}
}

// rawCase is one line and the answer it must get: code 0 is a success
// whose id is wantID; none is no answer at all.
type rawCase struct {
	name   string
	line   []byte
	code   int
	wantID string // the id's exact bytes; "null" for id null
	none   bool
	says   string // in the error message
}

// check sends c and then a ping, and finds c's answer among what came.
func (m *rawMCP) check(c rawCase) {
	m.t.Helper()
	m.send(c.line)
	seen := m.ping(c.name)
	if c.none {
		for _, r := range seen {
			if r.Method == "" {
				m.t.Errorf("%s: answered %s, want no answer", c.name, r.raw)
			}
		}
		return
	}
	// An answer from the SDK's own handlers may come after the ping's.
	for len(seen) == 0 || string(seen[len(seen)-1].ID) != c.wantID {
		found := false
		for _, r := range seen {
			found = found || string(r.ID) == c.wantID
		}
		if found {
			break
		}
		seen = append(seen, m.next(c.name))
	}
	for _, r := range seen {
		if string(r.ID) != c.wantID {
			continue
		}
		switch {
		case c.code == 0 && r.Error != nil:
			m.t.Errorf("%s: %s, want a result", c.name, r.raw)
		case c.code != 0 && (r.Error == nil || r.Error.Code != c.code):
			m.t.Errorf("%s: %s, want error code %d", c.name, r.raw, c.code)
		case c.says != "" && (r.Error == nil || !strings.Contains(r.Error.Message, c.says)):
			m.t.Errorf("%s: %s, want the message to say %q", c.name, r.raw, c.says)
		}
		return
	}
}

const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawCases are the malformed lines every server must survive: before
// initialize (pre) and after it (post).
func rawCases() (pre, post []rawCase) {
	big := func(n int) []byte {
		b := bytes.Repeat([]byte("a"), n)
		return append(append([]byte(`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"`), b...), `"}}`...)
	}
	pre = []rawCase{
		{name: "not JSON", line: []byte("hello"), code: -32700, wantID: "null"},
		{name: "an empty object", line: []byte("{}"), code: -32600, wantID: "null"},
		{name: "a batch", line: []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), code: -32600, wantID: "null", says: "batch"},
		{name: "an empty batch", line: []byte(`[]`), code: -32600, wantID: "null"},
		{name: "id true", line: []byte(`{"jsonrpc":"2.0","id":true,"method":"ping"}`), code: -32600, wantID: "null"},
		{name: "id an object", line: []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`), code: -32600, wantID: "null"},
		{name: "id null", line: []byte(`{"jsonrpc":"2.0","id":null,"method":"ping"}`), code: -32600, wantID: "null"},
		{name: "two objects on a line", line: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`), code: -32700, wantID: "null"},
		{name: "a cut line", line: []byte(`{"jsonrpc":"2.0","id":3,"method":`), code: -32700, wantID: "null"},
		{name: "invalid UTF-8", line: []byte("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"p\xffing\"}"), code: -32700, wantID: "null", says: "UTF-8"},
		{name: "a bare string", line: []byte(`"ping"`), code: -32600, wantID: "null"},
		{name: "jsonrpc 1.0", line: []byte(`{"jsonrpc":"1.0","id":9,"method":"ping"}`), code: -32600, wantID: "9"},
		{name: "no jsonrpc", line: []byte(`{"id":10,"method":"ping"}`), code: -32600, wantID: "10"},
		{name: "method a number", line: []byte(`{"jsonrpc":"2.0","id":11,"method":5}`), code: -32600, wantID: "11"},
		{name: "params an array", line: []byte(`{"jsonrpc":"2.0","id":12,"method":"ping","params":[1]}`), code: -32600, wantID: "12"},
		{name: "a 20 MB line", line: big(20 << 20), code: -32600, wantID: "null", says: "longer than"},
		{name: "a 64 MiB line", line: big(64 << 20), code: -32600, wantID: "null", says: "longer than"},
		{name: "a request before initialize", line: []byte(`{"jsonrpc":"2.0","id":13,"method":"tools/list"}`), code: -32600, wantID: "13", says: "initialize"},
		{name: "ping id 1.5 before initialize", line: []byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`), wantID: "1.5"},
		{name: "a blank line", line: []byte("   \r"), none: true},
		{name: "an answer to nothing", line: []byte(`{"jsonrpc":"2.0","id":77,"result":{}}`), none: true},
		{name: "an unknown notification", line: []byte(`{"jsonrpc":"2.0","method":"notifications/frobnicated"}`), none: true},
	}
	post = []rawCase{
		{name: "id 1.5", line: []byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`), wantID: "1.5"},
		{name: "id 1e3", line: []byte(`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`), wantID: "1e3"},
		{name: "id -0", line: []byte(`{"jsonrpc":"2.0","id":-0,"method":"ping"}`), wantID: "-0"},
		{name: "a big integer id", line: []byte(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`), wantID: "123456789012345678901234567890"},
		{name: "a string id that looks like a number", line: []byte(`{"jsonrpc":"2.0","id":"7","method":"ping"}`), wantID: `"7"`},
		{name: "an empty string id", line: []byte(`{"jsonrpc":"2.0","id":"","method":"ping"}`), wantID: `""`},
		{name: "CRLF", line: []byte("{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r"), wantID: `"crlf"`},
		{name: "an unknown method", line: []byte(`{"jsonrpc":"2.0","id":"u1","method":"frobnicate"}`), code: -32601, wantID: `"u1"`},
		{name: "a notification with an id", line: []byte(`{"jsonrpc":"2.0","id":"n1","method":"notifications/initialized"}`), code: -32600, wantID: `"n1"`},
		{name: "a second initialize", line: []byte(strings.Replace(initLine, `"init"`, `"init2"`, 1)), code: -32600, wantID: `"init2"`, says: "already initialized"},
		{name: "an unknown tool", line: []byte(`{"jsonrpc":"2.0","id":"t1","method":"tools/call","params":{"name":"frobnicate"}}`), code: -32602, wantID: `"t1"`},
		{name: "tools/call without params", line: []byte(`{"jsonrpc":"2.0","id":"t2","method":"tools/call"}`), code: -32600, wantID: `"t2"`, says: "params"},
		{name: "progressToken true", line: []byte(`{"jsonrpc":"2.0","id":"p1","method":"tools/list","params":{"_meta":{"progressToken":true}}}`), wantID: `"p1"`},
		{name: "progressToken an object", line: []byte(`{"jsonrpc":"2.0","id":"p2","method":"tools/list","params":{"_meta":{"progressToken":{"a":[1]}}}}`), wantID: `"p2"`},
		{name: "progressToken null", line: []byte(`{"jsonrpc":"2.0","id":"p3","method":"tools/list","params":{"_meta":{"progressToken":null}}}`), wantID: `"p3"`},
		{name: "progressToken an array", line: []byte(`{"jsonrpc":"2.0","id":"p5","method":"tools/list","params":{"_meta":{"progressToken":[1]}}}`), wantID: `"p5"`},
		{name: "progressToken 1.5", line: []byte(`{"jsonrpc":"2.0","id":"p4","method":"tools/list","params":{"_meta":{"progressToken":1.5}}}`), wantID: `"p4"`},
		{name: "cancel an id never sent", line: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never"}}`), none: true},
		{name: "cancel a finished request", line: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"p1"}}`), none: true},
		{name: "cancel without params", line: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`), none: true},
		{name: "cancel initialize", line: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"init"}}`), none: true},
	}
	post = append(post, pre...)
	return pre, post
}

// runRawSuite runs every case against a server started by start.
func runRawSuite(t *testing.T, m *rawMCP) {
	pre, post := rawCases()
	for _, c := range pre {
		m.check(c)
	}
	m.send([]byte(initLine))
	for {
		r := m.next("initialize")
		if string(r.ID) == `"init"` {
			if r.Error != nil {
				t.Fatalf("initialize: %s", r.raw)
			}
			break
		}
	}
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for _, c := range post {
		if c.name == "a request before initialize" {
			c.code, c.says = 0, "" // initialized now: tools/list answers
		}
		m.check(c)
	}
}

func TestMCPRawStdinToolsServer(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	runRawSuite(t, h.startRawMCP(t, "mcp", "--yes"))
}

func TestMCPRawStdinChannelBridge(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "cc", "--", "sh")
	runRawSuite(t, h.startRawMCP(t, "channel", "mcp", "--session", "cc"))
}

// A cancelled ask is cancelled in agentd: the log records canceled, the
// session takes the next ask at once, and the cancelled request gets no
// response.
func TestMCPRawCancelAsk(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	// Python, whose REPL answers ctrl+c with a new prompt wherever it
	// lands (sh ignores one that comes before it started the command).
	h.ctl(0, "spawn", "s1", "--", "python3", "-q")
	m := h.startRawMCP(t, "mcp", "--yes")
	m.send([]byte(initLine))
	for string(m.next("initialize").ID) != `"init"` {
	}
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	m.send([]byte(`{"jsonrpc":"2.0","id":42.5,"method":"tools/call","params":{"name":"ask","arguments":{"name":"s1","text":"import time; time.sleep(30)"}}}`))
	await(t, 20*time.Second, "the ask to reach s1", func() bool {
		out, _, _ := h.agentctl("", "logs", "s1", "--json")
		return strings.Contains(out, "time.sleep(30)")
	})
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42.5,"reason":"test"}}`))
	await(t, 20*time.Second, "canceled in s1's log", func() bool {
		out, _, _ := h.agentctl("", "logs", "s1", "--json")
		return strings.Contains(out, `"canceled"`)
	})
	// Twice, and then the next ask. The sleep goes on (a cancelled ask
	// leaves the program alone), so interrupt it; the next ask then only
	// waits for the prompt, not for the cancelled ask's lock (which would
	// hold for 30 s and answer lock_timeout).
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42.5}}`))
	h.ctl(0, "send", "s1", "--keys", "ctrl+c")
	// The next ask may start only once Python took the interrupt: the old
	// prompt line on the screen looks like a prompt, and under load the
	// next ask typed its line there before KeyboardInterrupt, which then
	// threw that line away (seen once in a run of all MCP tests).
	await(t, 20*time.Second, "the interrupt in s1's output", func() bool {
		out, _, _ := h.agentctl("", "logs", "s1", "--json")
		return strings.Contains(out, "KeyboardInterrupt")
	})
	m.send([]byte(`{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"ask","arguments":{"name":"s1","text":"print('next', 6*7)","until":"next 42","lock_timeout_ms":10000,"timeout_ms":20000}}}`))
	for {
		r := m.next("the next ask")
		if string(r.ID) == "42.5" {
			t.Fatalf("the cancelled request was answered: %s", r.raw)
		}
		if string(r.ID) == "43" {
			if !strings.Contains(string(r.raw), "next 42") || strings.Contains(string(r.raw), `"isError":true`) {
				t.Fatalf("the ask after the cancelled one: %s", r.raw)
			}
			break
		}
	}
	for _, r := range m.ping("the cancel") {
		if string(r.ID) == "42.5" {
			t.Fatalf("the cancelled request was answered: %s", r.raw)
		}
	}
}

// A cancelled wait or act gets no response, and the server goes on.
func TestMCPRawCancelWaitAndAct(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh")
	m := h.startRawMCP(t, "mcp", "--yes")
	m.send([]byte(initLine))
	for string(m.next("initialize").ID) != `"init"` {
	}
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	m.send([]byte(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait","arguments":{"name":"s1","text":"never shown"},"_meta":{"progressToken":false}}}`))
	m.send([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"act","arguments":{"actions":[{"kind":"wait","ms":5000}],"observe":false}}}`))
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`))
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`))
	// The act has no screen here and may be answered before its cancel
	// arrives: only the wait, which cannot end by itself, must stay silent.
	for _, r := range m.ping("the cancels") {
		if string(r.ID) == `"w"` {
			t.Fatalf("the cancelled wait was answered: %s", r.raw)
		}
	}
	m.send([]byte(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"status","arguments":{"name":"s1"}}}`))
	for {
		r := m.next("status after the cancels")
		if string(r.ID) == `"w"` {
			t.Fatalf("the cancelled wait was answered: %s", r.raw)
		}
		if string(r.ID) == `"s"` {
			break
		}
	}
}

// nextLine reads the next line the server wrote, whatever it holds.
func (m *rawMCP) nextLine(what string) []byte {
	m.t.Helper()
	select {
	case l, ok := <-m.lines:
		if !ok {
			m.t.Fatalf("%s: the server closed stdout (it ended)\nstderr: %s", what, m.stderr)
		}
		return l
	case <-time.After(30 * time.Second):
		m.t.Fatalf("%s: no message from the server in 30 s\nstderr: %s", what, m.stderr)
	}
	return nil
}

// batchAnswer reads lines until one is a JSON array (a batch's answer) and
// returns its elements.
func (m *rawMCP) batchAnswer(what string) []rawMsg {
	m.t.Helper()
	for {
		l := m.nextLine(what)
		if len(l) == 0 || l[0] != '[' {
			continue // a notification the server sent meanwhile
		}
		var elems []rawMsg
		if err := json.Unmarshal(l, &elems); err != nil {
			m.t.Fatalf("%s: %q is not an array of messages: %v", what, l, err)
		}
		for i := range elems {
			elems[i].raw, _ = json.Marshal(elems[i])
		}
		return elems
	}
}

// withID are the messages whose id is id's bytes.
func withID(msgs []rawMsg, id string) []rawMsg {
	var out []rawMsg
	for _, r := range msgs {
		if string(r.ID) == id {
			out = append(out, r)
		}
	}
	return out
}

// Under MCP 2025-03-26, whose stdio transport allows JSON-RPC batches, a
// batch is taken: one array answers its requests, its bad elements each
// get their error in it, notifications get nothing, a batch of
// notifications gets no answer at all, an empty batch one error, and
// initialize may not be in one. The server goes on after each (a ping).
func TestMCPRawBatchesUnder20250326(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "cc", "--", "sh")
	for _, args := range [][]string{{"mcp", "--yes"}, {"channel", "mcp", "--session", "cc"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			m := h.startRawMCP(t, args...)
			// A batch before initialize: no version agreed, refused.
			m.check(rawCase{name: "a batch before initialize", line: []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), code: -32600, wantID: "null", says: "2025-03-26"})
			m.send([]byte(strings.Replace(initLine, "2025-11-25", "2025-03-26", 1)))
			for {
				r := m.next("initialize")
				if string(r.ID) != `"init"` {
					continue
				}
				var res struct{ ProtocolVersion string }
				json.Unmarshal(r.Result, &res)
				if r.Error != nil || res.ProtocolVersion != "2025-03-26" {
					t.Fatalf("initialize with 2025-03-26: %s", r.raw)
				}
				break
			}
			m.send([]byte(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`))
			if seen := m.ping("a batch of one notification"); len(seen) > 0 {
				t.Errorf("a batch of notifications was answered: %s", seen[0].raw)
			}

			m.send([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
				`{"jsonrpc":"2.0","method":"notifications/frobnicated"},` +
				`{"jsonrpc":"2.0","id":"b2","method":"tools/list"},` +
				`{"jsonrpc":"2.0","id":1.5,"method":"frobnicate"},` +
				`{"bad":1},` +
				`7,` +
				`{"jsonrpc":"2.0","id":"i2","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}]`))
			got := m.batchAnswer("the batch")
			if len(got) != 6 {
				t.Errorf("the batch's answer has %d elements, want 6 (1, \"b2\", 1.5, two with id null, \"i2\"): %+v", len(got), got)
			}
			one := func(id string) rawMsg {
				rs := withID(got, id)
				if len(rs) == 0 {
					t.Fatalf("the batch's answer has no id %s: %+v", id, got)
				}
				return rs[0]
			}
			if r := one("1"); r.Error != nil || string(r.Result) != "{}" {
				t.Errorf("ping in the batch: %+v", r)
			}
			if r := one(`"b2"`); r.Error != nil || !strings.Contains(string(r.Result), `"tools"`) {
				t.Errorf("tools/list in the batch: %+v", r)
			}
			if r := one("1.5"); r.Error == nil || r.Error.Code != -32601 {
				t.Errorf("an unknown method in the batch: %+v, want -32601", r)
			}
			for _, r := range withID(got, "null") {
				if r.Error == nil || r.Error.Code != -32600 {
					t.Errorf("a bad element in the batch: %+v, want -32600 with id null", r)
				}
			}
			if r := one(`"i2"`); r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batch") {
				t.Errorf("initialize in the batch: %+v, want -32600 saying it may not be in a batch", r)
			}
			m.ping("the batch")

			m.check(rawCase{name: "an empty batch", line: []byte(`[]`), code: -32600, wantID: "null", says: "empty batch"})
			m.send([]byte(`[[{"jsonrpc":"2.0","id":"n","method":"ping"}]]`))
			if got := m.batchAnswer("a batch in a batch"); len(got) != 1 || got[0].Error == nil || got[0].Error.Code != -32600 || string(got[0].ID) != "null" {
				t.Errorf("a batch in a batch: %+v, want one -32600 with id null", got)
			}
			m.ping("a batch in a batch")
		})
	}
}
