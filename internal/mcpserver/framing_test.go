package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lockedBuf is a writer tests read while the connection writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimRight(l.b.String(), "\n"), "\n")
}

// readAll reads every message the connection hands the SDK until EOF.
func readAll(t *testing.T, c *lineConn) []jsonrpc.Message {
	t.Helper()
	var out []jsonrpc.Message
	for {
		m, err := c.Read(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func TestFramingIDsGoBackExactly(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"1.5","method":"ping"}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping","params":{"_meta":{"progressToken":2.25}}}`,
	}, "\n")
	out := &lockedBuf{}
	c := newLineConn(strings.NewReader(in), out, drainTimeout)
	msgs := make(chan jsonrpc.Message, 8)
	go func() {
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				close(msgs)
				return
			}
			msgs <- m
		}
	}()
	var got []*jsonrpc.Request
	for i := 0; i < 3; i++ {
		got = append(got, (<-msgs).(*jsonrpc.Request))
	}
	// The SDK sees ids of the framing's own; the token is mapped too.
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	json.Unmarshal(got[2].Params, &p)
	tok, _ := p.Meta["progressToken"].(string)
	if tok == "" {
		t.Fatalf("params %s: the progress token was not mapped", got[2].Params)
	}
	note, _ := json.Marshal(map[string]any{"progressToken": tok, "progress": 1})
	c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/progress", Params: note})
	for _, r := range got {
		c.Write(context.Background(), &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)})
	}
	c.Close()
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":2.25}}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":"1.5","result":{}}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`,
	}
	lines := out.lines()
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("written:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestFramingCancelledRequestGetsNoResponse(t *testing.T) {
	pr, pw := io.Pipe()
	out := &lockedBuf{}
	c := newLineConn(pr, out, drainTimeout)
	c.mu.Lock()
	c.initState = 2 // as after initialize
	c.mu.Unlock()
	go pw.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}` + "\n"))
	req := mustRead(t, c).(*jsonrpc.Request)
	go pw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` + "\n"))
	n := mustRead(t, c).(*jsonrpc.Request)
	var np struct {
		RequestID any `json:"requestId"`
	}
	json.Unmarshal(n.Params, &np)
	if np.RequestID != req.ID.Raw() {
		t.Errorf("the SDK was told to cancel %v, want its own id %v", np.RequestID, req.ID.Raw())
	}
	// Twice: dropped here.
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` + "\n"))
		pw.Write([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}` + "\n"))
	}()
	if m := mustRead(t, c).(*jsonrpc.Request); m.Method != "ping" {
		t.Errorf("after a second cancel the SDK got %s, want the ping", m.Method)
	}
	c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
	c.Close()
	pw.Close()
	if got := out.lines(); len(got) != 1 || got[0] != "" {
		t.Errorf("written %q, want nothing for the cancelled request", got)
	}
}

func mustRead(t *testing.T, c *lineConn) jsonrpc.Message {
	t.Helper()
	m, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzFraming: whatever the lines, the framing never panics, writes only
// JSON-RPC error responses of its own, and hands the SDK only messages it
// can encode.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{"hello", "{}", "[]", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "\xff",
		`{"jsonrpc":"2.0","id":true,"method":"x"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"a","method":"m","params":{"_meta":{"progressToken":[1]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		out := &lockedBuf{}
		c := newLineConn(bytes.NewReader(line), out, 0)
		for _, m := range readAll(t, c) {
			if _, err := jsonrpc.EncodeMessage(m); err != nil {
				t.Fatalf("handed the SDK a message it cannot encode: %v", err)
			}
		}
		sc := bufio.NewScanner(strings.NewReader(out.b.String()))
		for sc.Scan() {
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.JSONRPC != "2.0" || r.Error == nil || r.ID == nil {
				t.Fatalf("wrote %q, want a JSON-RPC error response", sc.Bytes())
			}
		}
	})
}

// TestFramingBatchAnswersOnceWhole: under 2025-03-26 a batch's answers go
// out as one array once every request is answered, with the clients' ids;
// a cancelled request has no entry, and a batch whose requests were all
// cancelled is not answered at all.
func TestFramingBatchAnswersOnceWhole(t *testing.T) {
	pr, pw := io.Pipe()
	out := &lockedBuf{}
	c := newLineConn(pr, out, drainTimeout)
	c.mu.Lock()
	c.initState, c.version = 2, batchVersion // as after initialize
	c.mu.Unlock()
	go pw.Write([]byte(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{}},{"jsonrpc":"2.0","id":3,"method":"ping"}]` + "\n"))
	a, b, d := mustRead(t, c).(*jsonrpc.Request), mustRead(t, c).(*jsonrpc.Request), mustRead(t, c).(*jsonrpc.Request)
	c.Write(context.Background(), &jsonrpc.Response{ID: d.ID, Result: json.RawMessage(`{}`)})
	c.Write(context.Background(), &jsonrpc.Response{ID: a.ID, Result: json.RawMessage(`{}`)})
	if got := out.lines(); len(got) != 1 || got[0] != "" {
		t.Fatalf("written %q before the batch was whole, want nothing", got)
	}
	go pw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.5}}` + "\n"))
	mustRead(t, c) // the cancel, told to the SDK
	c.Write(context.Background(), &jsonrpc.Response{ID: b.ID, Result: json.RawMessage(`{}`)})
	want := `[{"jsonrpc":"2.0","id":3,"result":{}},{"jsonrpc":"2.0","id":"a","result":{}}]`
	if got := out.lines(); len(got) != 1 || got[0] != want {
		t.Errorf("written %q, want %s", got, want)
	}

	go pw.Write([]byte(`[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}]` + "\n"))
	r := mustRead(t, c).(*jsonrpc.Request)
	go pw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}` + "\n"))
	mustRead(t, c)
	c.Write(context.Background(), &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)})
	c.Close()
	pw.Close()
	if got := out.lines(); len(got) != 1 {
		t.Errorf("written %q, want nothing more for a batch whose one request was cancelled", got)
	}
}

// repeatReader gives n bytes of b, then rest.
type repeatReader struct {
	b    byte
	n    int
	rest []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		k := min(len(p), r.n)
		for i := range k {
			p[i] = r.b
		}
		r.n -= k
		return k, nil
	}
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.rest)
	r.rest = r.rest[k:]
	return k, nil
}

// An over-long line is dropped as it streams past: reading a 64 MiB line
// allocates about its first maxLineBytes, never the line, and the line
// after it reads whole.
func TestFramingDropsALongLineUnheld(t *testing.T) {
	r := bufio.NewReaderSize(&repeatReader{b: 'a', n: 64 << 20, rest: []byte("\n{\"next\":1}\n")}, 64<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	line, tooLong, err := readLine(r)
	runtime.ReadMemStats(&after)
	if !tooLong || line != nil || err != nil {
		t.Fatalf("readLine of a 64 MiB line: %d bytes, tooLong %v, %v; want it dropped", len(line), tooLong, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*maxLineBytes {
		t.Errorf("reading a 64 MiB line allocated %d MiB; it must not be held (at most about %d MiB)", alloc>>20, 3*maxLineBytes>>20)
	}
	if line, tooLong, err := readLine(r); tooLong || string(line) != "{\"next\":1}\n" || err != nil {
		t.Errorf("the line after it: %q %v %v", line, tooLong, err)
	}
}

// A line under the limit but longer than the reader's buffer reads whole.
func TestFramingReadsALongLineWhole(t *testing.T) {
	for _, n := range []int{64<<10 - 1, 64 << 10, 1 << 20, maxLineBytes} {
		r := bufio.NewReaderSize(&repeatReader{b: 'b', n: n, rest: []byte("\n")}, 64<<10)
		line, tooLong, err := readLine(r)
		if tooLong || err != nil || len(line) != n+1 || bytes.Count(line, []byte("b")) != n || line[n] != '\n' {
			t.Errorf("a %d-byte line read as %d bytes (tooLong %v, %v)", n, len(line), tooLong, err)
		}
	}
}
