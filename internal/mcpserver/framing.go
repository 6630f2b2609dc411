package mcpserver

// The stdio framing both servers read through. The SDK's own stdio
// transport decodes stdin as one JSON stream: one line that is not a
// JSON-RPC message ends the session (silently, exit 0), a cut line
// swallows the lines after it, and a request id is coerced to an int64 or
// a string, so 1.5 comes back as 1. This layer reads stdin itself, one
// line at a time, and hands the SDK only well-formed messages:
//
//   - A line that is not JSON, is not UTF-8, or holds more than one value
//     is answered with -32700 (parse error, id null); a JSON value that is
//     not a JSON-RPC message (not an object, a wrong or missing "jsonrpc",
//     an id of the wrong type, no method) with -32600 (invalid request),
//     with its id when it has a usable one, else id null. The server goes on.
//   - A line longer than maxLineBytes is dropped as it streams past (never
//     held whole) and answered with -32600.
//   - A batch (a JSON array) is answered with -32600: MCP dropped JSON-RPC
//     batching in 2025-06-18, and this server speaks one message per line.
//   - A second initialize is answered with -32600 (the session has one).
//   - Every request id reaches the SDK as an id of this layer's own and
//     goes back to the client exactly as the client wrote it (1.5, 1e3,
//     "7", -0). A progressToken is handled the same way.
//   - notifications/cancelled for a request in flight cancels its handler
//     (the SDK cancels its context) and its response is never written, as
//     the spec asks; for an id never sent, already answered, or cancelled
//     before, it is dropped.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineBytes bounds one message on stdin. The largest a client sends is
// an ask or a reply: 64 KiB of text, at most 6x that once JSON-escaped.
const maxLineBytes = 4 << 20

// lineTransport is an mcp.Transport over a reader and a writer with this
// file's framing.
type lineTransport struct {
	r io.Reader
	w io.Writer
	// onConn receives the connection once made (the channel bridge writes
	// notifications of its own through it).
	onConn func(*lineConn)
}

// Connect starts reading r.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := newLineConn(t.r, t.w, drainTimeout)
	if t.onConn != nil {
		t.onConn(c)
	}
	return c, nil
}

// pendingReq is a request handed to the SDK and not yet answered.
type pendingReq struct {
	raw       json.RawMessage // the id as the client wrote it
	method    string
	token     string // this layer's progress token for it, if any
	cancelled bool
}

// readItem is one message, or the reading's end.
type readItem struct {
	msg jsonrpc.Message
	err error
}

// lineConn is one stdio MCP connection.
type lineConn struct {
	wmu sync.Mutex // one message written at a time
	w   io.Writer

	msgs   chan readItem
	closed chan struct{}
	once   sync.Once

	// mu guards what follows; never held while writing.
	mu      sync.Mutex
	next    uint64
	pending map[string]*pendingReq // by this layer's id
	byRaw   map[string]string      // client's id (its bytes) -> this layer's id
	tokens  map[string]json.RawMessage
	// initState: 0 no initialize seen, 1 one in flight, 2 answered with
	// success. A failed initialize may be sent again.
	initState int
	initID    string
	drained   chan struct{} // closed when pending empties, once stdin ended
	drainWait time.Duration
}

// drainTimeout bounds how long requests still running when stdin closes
// may take to answer before the server ends (and cancels them).
const drainTimeout = 5 * time.Second

// newLineConn reads r; at its end, requests in flight get up to drain to
// be answered.
func newLineConn(r io.Reader, w io.Writer, drain time.Duration) *lineConn {
	c := &lineConn{w: w, drainWait: drain, msgs: make(chan readItem), closed: make(chan struct{}),
		pending: map[string]*pendingReq{}, byRaw: map[string]string{}, tokens: map[string]json.RawMessage{}}
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

// SessionID is empty: stdio has one session.
func (c *lineConn) SessionID() string { return "" }

// Close stops handing messages to the SDK. stdin itself stays open (it is
// the process's); the reading goroutine ends with it.
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// Read returns the next well-formed message.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case it := <-c.msgs:
		return it.msg, it.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readLoop reads lines until EOF, answering the malformed ones itself.
func (c *lineConn) readLoop(r *bufio.Reader) {
	for {
		line, tooLong, err := readLine(r)
		if tooLong {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes: it was dropped unread; send at most %d bytes per line", maxLineBytes, maxLineBytes))
		} else if len(bytes.TrimSpace(line)) > 0 {
			if msg := c.frame(line); msg != nil {
				select {
				case c.msgs <- readItem{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.drain()
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("read stdin: %w", err)
			}
			select {
			case c.msgs <- readItem{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// drain waits for the requests in flight to be answered: a client that
// writes its requests and closes stdin still gets its answers.
func (c *lineConn) drain() {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	c.drained = make(chan struct{})
	ch := c.drained
	c.mu.Unlock()
	select {
	case <-ch:
	case <-c.closed:
	case <-time.After(c.drainWait):
	}
}

// readLine reads up to a newline. A line over maxLineBytes is read to its
// end and dropped, holding at most maxLineBytes of it.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxLineBytes+1 { // +1: the newline
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, tooLong, err
	}
}

// wireMsg is a JSON-RPC message as it arrives, every field kept raw so
// that its type can be checked.
type wireMsg struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// frame checks one line and returns the message for the SDK, or nil when
// it was answered (or dropped) here.
func (c *lineConn) frame(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid UTF-8; send JSON text in UTF-8, one message per line")
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: "+jsonProblem(err)+"; send one JSON-RPC message per line")
		return nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: more than one JSON value on the line; send one JSON-RPC message per line")
		return nil
	}
	switch v[0] {
	case '{':
	case '[':
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported (MCP removed batching in 2025-06-18); send one message per line")
		return nil
	default:
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object with \"jsonrpc\": \"2.0\"")
		return nil
	}
	var m wireMsg
	if err := json.Unmarshal(v, &m); err != nil {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: "+jsonProblem(err))
		return nil
	}
	hasID := m.ID != nil
	idOK := hasID && validID(m.ID)
	var answerID json.RawMessage // nil: null
	if idOK {
		answerID = m.ID
	}
	if string(m.JSONRPC) != `"2.0"` {
		c.maybeError(hasID, m.Method, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return nil
	}
	if hasID && !idOK {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or a number (MCP allows no null id)")
		return nil
	}
	if m.Method == nil {
		return c.response(m)
	}
	var method string
	if json.Unmarshal(m.Method, &method) != nil || method == "" {
		c.maybeError(hasID, nil, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
		return nil
	}
	if m.Params != nil && m.Params[0] != '{' && string(m.Params) != "null" {
		c.maybeError(hasID, m.Method, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "params" must be a JSON object`)
		return nil
	}
	if string(m.Params) == "null" {
		m.Params = nil
	}
	params, token := c.mapToken(m.Params)
	if !hasID {
		if method == "notifications/cancelled" {
			return c.cancelled(params)
		}
		c.forgetToken(token) // a notification gets no progress
		return &jsonrpc.Request{Method: method, Params: params}
	}
	c.mu.Lock()
	if c.initState != 2 && method != "initialize" && method != "ping" && !sessionless(params) {
		c.mu.Unlock()
		c.forgetToken(token)
		c.writeError(answerID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s before the session is initialized: send initialize (and wait for its answer) first", method))
		return nil
	}
	if method == "initialize" && c.initState != 0 {
		c.mu.Unlock()
		c.forgetToken(token)
		c.writeError(answerID, jsonrpc.CodeInvalidRequest, "invalid request: this session is already initialized (or initializing); a session takes one initialize: start a new server for a new session")
		return nil
	}
	c.next++
	own := "r" + strconv.FormatUint(c.next, 10)
	c.pending[own] = &pendingReq{raw: answerID, method: method, token: token}
	c.byRaw[compact(answerID)] = own
	if method == "initialize" {
		c.initState, c.initID = 1, own
	}
	c.mu.Unlock()
	id, _ := jsonrpc.MakeID(own)
	return &jsonrpc.Request{ID: id, Method: method, Params: params}
}

// maybeError answers a broken request; a broken message that was a
// notification (no id, a method) gets no answer, as JSON-RPC says, except
// when even that cannot be told.
func (c *lineConn) maybeError(hasID bool, method json.RawMessage, id json.RawMessage, code int64, msg string) {
	if !hasID && method != nil {
		return
	}
	c.writeError(id, code, msg)
}

// response passes a response to one of the SDK's own requests through; it
// never answers one.
func (c *lineConn) response(m wireMsg) jsonrpc.Message {
	if m.ID == nil || (m.Result == nil) == (m.Error == nil) {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, `invalid request: a message needs a "method" (a request or notification) or, answering a request, an "id" with "result" or "error"`)
		return nil
	}
	raw, _ := json.Marshal(outMsg{JSONRPC: "2.0", ID: m.ID, Result: m.Result, Error: m.Error})
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil // an answer to nothing this server asked: dropped
	}
	return msg
}

// cancelled handles notifications/cancelled: the request in flight is
// marked (its response is dropped) and the SDK told with its own id, which
// cancels the handler's context. Anything else is dropped.
func (c *lineConn) cancelled(params json.RawMessage) jsonrpc.Message {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason,omitempty"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return nil
	}
	c.mu.Lock()
	own, ok := c.byRaw[string(compact(p.RequestID))]
	pr := c.pending[own]
	if !ok || pr == nil || pr.cancelled || pr.method == "initialize" {
		c.mu.Unlock()
		return nil // never sent, answered, cancelled before, or not cancellable
	}
	pr.cancelled = true
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"requestId": own, "reason": p.Reason})
	return &jsonrpc.Request{Method: "notifications/cancelled", Params: b}
}

// mapToken replaces params._meta.progressToken with a token of this
// layer's own, kept to be put back in progress notifications. A token of
// a type MCP does not allow (not a string or number) is removed: the call
// runs without progress.
func (c *lineConn) mapToken(params json.RawMessage) (json.RawMessage, string) {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return params, ""
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params, ""
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta["progressToken"] == nil {
		return params, ""
	}
	own := ""
	if tok := meta["progressToken"]; validID(tok) {
		c.mu.Lock()
		c.next++
		own = "t" + strconv.FormatUint(c.next, 10)
		c.tokens[own] = tok
		c.mu.Unlock()
		meta["progressToken"], _ = json.Marshal(own)
	} else {
		delete(meta, "progressToken")
	}
	p["_meta"], _ = json.Marshal(meta)
	out, _ := json.Marshal(p)
	return out, own
}

// sessionless is whether a request follows the sessionless protocol
// (SEP-2575: its _meta names the protocol version), which needs no
// initialize; the SDK checks it further.
func sessionless(params json.RawMessage) bool {
	return bytes.Contains(params, []byte(`"io.modelcontextprotocol/protocolVersion"`))
}

// codeless gives an error the SDK wrote with code 0 (a plain Go error from
// a handler) the code JSON-RPC has for it: internal error.
func codeless(e json.RawMessage) json.RawMessage {
	if e == nil {
		return nil
	}
	var we struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(e, &we) != nil || we.Code != 0 {
		return e
	}
	we.Code = jsonrpc.CodeInternalError
	b, _ := json.Marshal(we)
	return b
}

// validID is whether raw is a string or a number.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '"':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// jsonProblem words a decoding error without Go's prefix.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not JSON at byte %d (%s)", se.Offset, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the JSON ends early (a cut line?)"
	}
	return err.Error()
}

// outMsg is a message as written, with the id raw.
type outMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Write writes a message from the SDK: a response goes back with the
// client's own id (or not at all when the request was cancelled), a
// progress notification with the client's own token.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		own, _ := m.ID.Raw().(string)
		c.mu.Lock()
		pr := c.pending[own]
		if pr != nil {
			delete(c.pending, own)
			if len(c.pending) == 0 && c.drained != nil {
				close(c.drained)
				c.drained = nil
			}
			delete(c.tokens, pr.token)
			if c.byRaw[compact(pr.raw)] == own {
				delete(c.byRaw, compact(pr.raw))
			}
			if own == c.initID {
				c.initState = 2
				if m.Error != nil {
					c.initState = 0
				}
			}
		}
		c.mu.Unlock()
		if pr == nil {
			return c.writeRaw(b) // an id this layer did not make
		}
		if pr.cancelled {
			return nil
		}
		// A result: put the client's id in place of ours in the bytes
		// (the SDK writes "jsonrpc" then "id" first), so a large result (a
		// screenshot) is not decoded and encoded again.
		head := []byte(`{"jsonrpc":"2.0","id":"` + own + `",`)
		if m.Error == nil && bytes.HasPrefix(b, head) {
			b = append(append(append([]byte(`{"jsonrpc":"2.0","id":`), pr.raw...), ','), b[len(head):]...)
			break
		}
		var om outMsg
		if err := json.Unmarshal(b, &om); err != nil {
			return err
		}
		om.ID = pr.raw
		om.Error = codeless(om.Error)
		if om.Result == nil && om.Error == nil {
			om.Result = json.RawMessage("{}")
		}
		b, err = json.Marshal(om)
		if err != nil {
			return err
		}
	case *jsonrpc.Request:
		if m.Method == "notifications/progress" && !m.IsCall() {
			b = c.unmapToken(b)
		}
	}
	return c.writeRaw(b)
}

// unmapToken puts the client's progress token back into a progress
// notification; one whose request was cancelled or answered is still
// written (the client drops it).
func (c *lineConn) unmapToken(b []byte) []byte {
	var om outMsg
	if json.Unmarshal(b, &om) != nil {
		return b
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(om.Params, &p) != nil {
		return b
	}
	var own string
	json.Unmarshal(p["progressToken"], &own)
	c.mu.Lock()
	tok, ok := c.tokens[own]
	c.mu.Unlock()
	if !ok {
		return b
	}
	p["progressToken"] = tok
	om.Params, _ = json.Marshal(p)
	out, err := json.Marshal(om)
	if err != nil {
		return b
	}
	return out
}

// forgetToken drops a progress token no request will use.
func (c *lineConn) forgetToken(own string) {
	c.mu.Lock()
	delete(c.tokens, own)
	c.mu.Unlock()
}

// writeError writes an error response; id nil is null.
func (c *lineConn) writeError(id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	b, _ := json.Marshal(outMsg{JSONRPC: "2.0", ID: id, Error: e})
	c.writeRaw(b)
}

// writeRaw writes one message and its newline.
func (c *lineConn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}
