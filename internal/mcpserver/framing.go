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
//   - A batch (a JSON array) is taken when the session negotiated MCP
//     2025-03-26, whose stdio transport allows one (of requests and
//     notifications, and of responses; never initialize): every element is
//     checked as a line is, and the answers to its requests (the errors of
//     its bad elements among them) go back as one array once all are in,
//     nothing for notifications, nothing at all when none needs an answer;
//     an empty batch is one -32600, as JSON-RPC says. Under any other
//     version, or before initialize, a batch is answered with -32600: MCP
//     dropped batching in 2025-06-18.
//   - A second initialize is answered with -32600 (the session has one).
//   - Every request id reaches the SDK as an id of this layer's own and
//     goes back to the client exactly as the client wrote it (1.5, 1e3,
//     "7", -0). A progressToken is handled the same way.
//   - notifications/cancelled for a request in flight cancels its handler
//     (the SDK cancels its context) and its response is never written, as
//     the spec asks; for an id never sent, already answered, or cancelled
//     before, it is dropped.
//   - A tools/call of a tool the transport's fast hook names (act: a
//     model's act loop sends many) is served here, past the SDK's request
//     handling, when it needs nothing only the SDK has: params of name and
//     arguments alone (no _meta, so no progress token), after initialize.
//     It runs the same handler the SDK would and writes the result the SDK
//     would write; cancellation, drain and batches treat it as any request.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
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
	// fast, when set, names the tools served outside the SDK (see
	// fastCall): their handler, or nil for a tool the SDK serves. Their
	// calls run under fastCtx.
	fast    func(name string) fastHandler
	fastCtx context.Context
}

// fastHandler answers one tools/call from its raw arguments, as the tool's
// SDK handler would.
type fastHandler func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult

// Connect starts reading r.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := makeLineConn(t.w, drainTimeout)
	c.fast = t.fast
	if t.fastCtx != nil {
		c.fastCtx = t.fastCtx
	}
	in, restore := pollable(t.r)
	c.restoreStdin = restore
	go c.readLoop(bufio.NewReaderSize(in, 64<<10))
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
	batch     *batch // the batch it came in, or nil
	// cancel ends a call served outside the SDK (fastCall); nil for one
	// the SDK serves.
	cancel context.CancelFunc
}

// batch collects the answers to one JSON-RPC batch: they go back as one
// array once every request in it is answered. Guarded by lineConn.mu.
type batch struct {
	out     [][]byte // answers so far
	waiting int      // requests handed to the SDK, not yet answered
	sealed  bool     // every element was read
	sent    bool
}

// batchVersion is the only MCP version whose sessions take batches.
const batchVersion = "2025-03-26"

// ready returns the batch's answer, an array, once it is whole and not
// yet sent; nil otherwise, and when nothing in the batch needs an answer.
// c.mu held.
func (b *batch) ready() []byte {
	if !b.sealed || b.waiting > 0 || b.sent {
		return nil
	}
	b.sent = true
	if len(b.out) == 0 {
		return nil
	}
	return append(append([]byte{'['}, bytes.Join(b.out, []byte{','})...), ']')
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
	// restoreStdin gives stdin its blocking mode back (pollable); called
	// when reading ends and on Close.
	restoreStdin func()

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
	version   string        // the protocol version initialize agreed on
	drained   chan struct{} // closed when pending empties and writing ends, once stdin ended
	drainWait time.Duration
	writing   int // answers taken from pending (answered) and not yet written

	fast    func(name string) fastHandler // see lineTransport; set before reading
	fastCtx context.Context
}

// drainTimeout bounds how long requests still running when stdin closes
// may take to answer before the server ends (and cancels them).
const drainTimeout = 5 * time.Second

// newLineConn reads r; at its end, requests in flight get up to drain to
// be answered.
func newLineConn(r io.Reader, w io.Writer, drain time.Duration) *lineConn {
	c := makeLineConn(w, drain)
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

// makeLineConn is a lineConn not yet reading.
func makeLineConn(w io.Writer, drain time.Duration) *lineConn {
	return &lineConn{w: w, drainWait: drain, msgs: make(chan readItem), closed: make(chan struct{}), restoreStdin: func() {},
		pending: map[string]*pendingReq{}, byRaw: map[string]string{}, tokens: map[string]json.RawMessage{}, fastCtx: context.Background()}
}

// SessionID is empty: stdio has one session.
func (c *lineConn) SessionID() string { return "" }

// Close stops handing messages to the SDK and gives stdin its blocking
// mode back. stdin itself stays open (it is the process's); the reading
// goroutine ends with it.
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	c.restoreStdin()
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

// pollable returns r read through Go's poller when it is a pipe or a
// socket, as an MCP client's stdin is: a read then parks its goroutine,
// where a blocking read holds a thread in the kernel that the runtime hands
// its processor away from, and watches every 20 µs while calls go on (a
// tenth of the server's CPU in a model's act loop). It reads a duplicate of
// the descriptor, non-blocking; a terminal or a file is left as it is.
//
// O_NONBLOCK belongs to the open file description, which the process that
// handed over the pipe shares: restore puts the flag back as it was, so
// that a parent reading the same pipe after this server finds it blocking
// again. (A server killed by a signal cannot; MCP clients give their
// server a pipe of its own.)
func pollable(r io.Reader) (pr io.Reader, restore func()) {
	none := func() {}
	f, ok := r.(*os.File)
	if !ok {
		return r, none
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return r, none
	}
	// Through Control, not f.Fd(): Fd would make the description blocking
	// before its mode is read.
	rc, err := f.SyscallConn()
	if err != nil {
		return r, none
	}
	fd, flags := -1, 0
	if cerr := rc.Control(func(sfd uintptr) {
		if fd, err = unix.Dup(int(sfd)); err == nil {
			flags, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		}
	}); cerr != nil || err != nil || unix.SetNonblock(fd, true) != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return r, none
	}
	dup := os.NewFile(uintptr(fd), f.Name())
	restore = none
	if flags&unix.O_NONBLOCK == 0 {
		// Through the duplicate's own file, which the closure keeps
		// alive: once reading ends nothing else refers to it, and its
		// finalizer would close the descriptor (whose number another
		// file may then take) before restore runs.
		restore = sync.OnceFunc(func() {
			if rc, err := dup.SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
			}
		})
	}
	return dup, restore
}

// readLoop reads lines until EOF, answering the malformed ones itself.
func (c *lineConn) readLoop(r *bufio.Reader) {
	defer c.restoreStdin()
	for {
		line, tooLong, err := readLine(r)
		if tooLong {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes: it was dropped unread; send at most %d bytes per line", maxLineBytes, maxLineBytes))
		} else if len(bytes.TrimSpace(line)) > 0 {
			for _, msg := range c.frame(line) {
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
	if len(c.pending) == 0 && c.writing == 0 {
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
			switch n := len(buf) + len(chunk); {
			case n > maxLineBytes+1: // +1: the newline
				tooLong, buf = true, nil
			case n > cap(buf):
				// Doubling, not append's quarter steps: a line near the
				// limit costs about twice its size in allocations, not
				// five times.
				grown := make([]byte, 0, min(max(2*cap(buf), n), maxLineBytes+1))
				buf = append(append(grown, buf...), chunk...)
			default:
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

// frame checks one line and returns the messages for the SDK: none when
// it was answered (or dropped) here, several for a batch.
func (c *lineConn) frame(line []byte) []jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid UTF-8; send JSON text in UTF-8, one message per line")
		return nil
	}
	// A line that decodes as one object is a message to check (the common
	// case: one pass to validate, one to decode); anything else is worded
	// below.
	if line[0] == '{' {
		var m wireMsg
		if json.Unmarshal(line, &m) == nil {
			if msg := c.request(m, c.writeError, nil); msg != nil {
				return []jsonrpc.Message{msg}
			}
			return nil
		}
	}
	// One scan says a line is one JSON value; the decoder only words what
	// is wrong with one that is not.
	v := json.RawMessage(line)
	if !json.Valid(line) {
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&v); err != nil {
			c.writeError(nil, jsonrpc.CodeParseError, "parse error: "+jsonProblem(err)+"; send one JSON-RPC message per line")
			return nil
		}
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: more than one JSON value on the line; send one JSON-RPC message per line")
		return nil
	}
	if v[0] == '[' {
		return c.batch(v)
	}
	if msg := c.message(v, c.writeError, nil); msg != nil {
		return []jsonrpc.Message{msg}
	}
	return nil
}

// batch frames each message of a batch; their answers go back as one
// array (see batch).
func (c *lineConn) batch(v json.RawMessage) []jsonrpc.Message {
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: "+jsonProblem(err))
		return nil
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	switch {
	case version != batchVersion:
		agreed := "no version yet (send initialize first, alone)"
		if version != "" {
			agreed = version
		}
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches belong to MCP "+batchVersion+
			" only (MCP removed them in 2025-06-18), and this session agreed on "+agreed+"; send one message per line")
		return nil
	case len(elems) == 0:
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: an empty batch; a batch holds at least one message")
		return nil
	}
	b := &batch{}
	fail := func(id json.RawMessage, code int64, msg string) {
		e := errorMsg(id, code, msg)
		c.mu.Lock()
		b.out = append(b.out, e)
		c.mu.Unlock()
	}
	var msgs []jsonrpc.Message
	for _, e := range elems {
		if msg := c.message(e, fail, b); msg != nil {
			msgs = append(msgs, msg)
		}
	}
	c.mu.Lock()
	b.sealed = true
	out := b.ready()
	c.mu.Unlock()
	if out != nil {
		c.writeRaw(out)
	}
	return msgs
}

// message checks one JSON value as a message and returns it for the SDK,
// or nil when it was answered through fail (or dropped). b is the batch it
// came in, or nil.
func (c *lineConn) message(v json.RawMessage, fail func(id json.RawMessage, code int64, msg string), b *batch) jsonrpc.Message {
	switch v[0] {
	case '{':
	case '[':
		fail(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch inside a batch; a batch holds messages (JSON objects)")
		return nil
	default:
		fail(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object with \"jsonrpc\": \"2.0\"")
		return nil
	}
	var m wireMsg
	if err := json.Unmarshal(v, &m); err != nil {
		fail(nil, jsonrpc.CodeParseError, "parse error: "+jsonProblem(err))
		return nil
	}
	return c.request(m, fail, b)
}

// request checks a decoded JSON object as a message (see message).
func (c *lineConn) request(m wireMsg, fail func(id json.RawMessage, code int64, msg string), b *batch) jsonrpc.Message {
	hasID := m.ID != nil
	idOK := hasID && validID(m.ID)
	var answerID json.RawMessage // nil: null
	if idOK {
		answerID = m.ID
	}
	if string(m.JSONRPC) != `"2.0"` {
		maybeError(fail, hasID, m.Method, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return nil
	}
	if hasID && !idOK {
		fail(nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or a number (MCP allows no null id)")
		return nil
	}
	if m.Method == nil {
		return c.response(m, fail)
	}
	var method string
	if json.Unmarshal(m.Method, &method) != nil || method == "" {
		maybeError(fail, hasID, nil, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
		return nil
	}
	if m.Params != nil && m.Params[0] != '{' && string(m.Params) != "null" {
		maybeError(fail, hasID, m.Method, answerID, jsonrpc.CodeInvalidRequest, `invalid request: "params" must be a JSON object`)
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
	fast, args := c.fastCall(method, params, token)
	c.mu.Lock()
	if c.initState != 2 && method != "initialize" && method != "ping" && !sessionless(params) {
		c.mu.Unlock()
		c.forgetToken(token)
		fail(answerID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s before the session is initialized: send initialize (and wait for its answer) first", method))
		return nil
	}
	if method == "initialize" && b != nil {
		c.mu.Unlock()
		c.forgetToken(token)
		fail(answerID, jsonrpc.CodeInvalidRequest, "invalid request: initialize must not be part of a batch; send it alone")
		return nil
	}
	if method == "initialize" && c.initState != 0 {
		c.mu.Unlock()
		c.forgetToken(token)
		fail(answerID, jsonrpc.CodeInvalidRequest, "invalid request: this session is already initialized (or initializing); a session takes one initialize: start a new server for a new session")
		return nil
	}
	c.next++
	own := "r" + strconv.FormatUint(c.next, 10)
	pr := &pendingReq{raw: answerID, method: method, token: token, batch: b}
	c.pending[own] = pr
	if b != nil {
		b.waiting++
	}
	c.byRaw[compact(answerID)] = own
	if method == "initialize" {
		c.initState, c.initID = 1, own
	}
	var ctx context.Context
	if fast != nil {
		// The request is in pending before it runs: a cancel read next
		// finds it, and a drain waits for it.
		ctx, pr.cancel = context.WithCancel(c.fastCtx)
	}
	c.mu.Unlock()
	if fast != nil {
		go c.serveFast(ctx, own, fast, args)
		return nil
	}
	id, _ := jsonrpc.MakeID(own)
	return &jsonrpc.Request{ID: id, Method: method, Params: params}
}

// maybeError answers a broken request through fail; a broken message that
// was a notification (no id, a method) gets no answer, as JSON-RPC says,
// except when even that cannot be told.
func maybeError(fail func(id json.RawMessage, code int64, msg string), hasID bool, method json.RawMessage, id json.RawMessage, code int64, msg string) {
	if !hasID && method != nil {
		return
	}
	fail(id, code, msg)
}

// response passes a response to one of the SDK's own requests through; it
// never answers one.
func (c *lineConn) response(m wireMsg, fail func(id json.RawMessage, code int64, msg string)) jsonrpc.Message {
	if m.ID == nil || (m.Result == nil) == (m.Error == nil) {
		fail(nil, jsonrpc.CodeInvalidRequest, `invalid request: a message needs a "method" (a request or notification) or, answering a request, an "id" with "result" or "error"`)
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
	cancel := pr.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel() // served here (fastCall): the SDK never saw it
		return nil
	}
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
		pr := c.answered(own)
		if pr != nil {
			defer c.settled()
			if own == c.initID {
				c.initState = 2
				if m.Error != nil {
					c.initState = 0
				}
				var r struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				if json.Unmarshal(m.Result, &r) == nil {
					c.version = r.ProtocolVersion
				}
			}
		}
		c.mu.Unlock()
		if pr == nil {
			return c.writeRaw(b) // an id this layer did not make
		}
		if pr.cancelled {
			return c.deliver(pr, nil)
		}
		// A result: put the client's id in place of ours in the bytes
		// (the SDK writes "jsonrpc" then "id" first), so a large result (a
		// screenshot) is not decoded and encoded again.
		head := []byte(`{"jsonrpc":"2.0","id":"` + own + `",`)
		if m.Error == nil && bytes.HasPrefix(b, head) {
			b = append(append(append([]byte(`{"jsonrpc":"2.0","id":`), pr.raw...), ','), b[len(head):]...)
			return c.deliver(pr, b)
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
		return c.deliver(pr, b)
	case *jsonrpc.Request:
		if m.Method == "notifications/progress" && !m.IsCall() {
			b = c.unmapToken(b)
		}
	}
	return c.writeRaw(b)
}

// answered takes request own out of the requests in flight and returns
// it, or nil when there is none. c.mu held. Once its answer is written,
// settled tells a drain.
func (c *lineConn) answered(own string) *pendingReq {
	pr := c.pending[own]
	if pr == nil {
		return nil
	}
	delete(c.pending, own)
	c.writing++
	delete(c.tokens, pr.token)
	if c.byRaw[compact(pr.raw)] == own {
		delete(c.byRaw, compact(pr.raw))
	}
	return pr
}

// settled follows answered once the answer is written (or dropped): a
// drain waiting for the requests in flight ends when none is left, so the
// server ends only once the last answer is out.
func (c *lineConn) settled() {
	c.mu.Lock()
	c.writing--
	if len(c.pending) == 0 && c.writing == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

// fastCall returns the handler and arguments of a tools/call this layer
// serves itself (see lineTransport.fast), or nil for the SDK to serve it:
// another method, a tool the hook does not name, a progress token, or
// params with anything but name and arguments (_meta, or a field the SDK
// would read or refuse). Whether the session is initialized is checked by
// the caller, as for any request.
func (c *lineConn) fastCall(method string, params json.RawMessage, token string) (fastHandler, json.RawMessage) {
	if c.fast == nil || method != "tools/call" || token != "" || len(params) == 0 {
		return nil, nil
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil, nil
	}
	for k := range p {
		if k != "name" && k != "arguments" {
			return nil, nil
		}
	}
	var name string
	if p["name"] == nil || p["name"][0] != '"' || json.Unmarshal(p["name"], &name) != nil {
		return nil, nil
	}
	h := c.fast(name)
	if h == nil {
		return nil, nil
	}
	return h, p["arguments"]
}

// serveFast runs a call fastCall took and writes its answer as the SDK
// would: the result JSON-encoded without HTML escaping, content never null,
// nothing when the call was cancelled.
func (c *lineConn) serveFast(ctx context.Context, own string, h fastHandler, args json.RawMessage) {
	res := h(ctx, args)
	c.mu.Lock()
	pr := c.answered(own)
	c.mu.Unlock()
	defer c.settled()
	pr.cancel()
	if pr.cancelled {
		c.deliver(pr, nil)
		return
	}
	if res.Content == nil {
		r := *res
		r.Content = []mcp.Content{}
		res = &r
	}
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(pr.raw)
	buf.WriteString(`,"result":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		c.deliver(pr, errorMsg(pr.raw, jsonrpc.CodeInternalError, "internal error: the result could not be encoded: "+err.Error()))
		return
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	c.deliver(pr, append(b, '}'))
}

// deliver writes the answer b to request pr (nil: none, it was
// cancelled), or adds it to pr's batch, writing the batch's array once it
// is whole.
func (c *lineConn) deliver(pr *pendingReq, b []byte) error {
	if pr.batch == nil {
		if b == nil {
			return nil
		}
		return c.writeRaw(b)
	}
	c.mu.Lock()
	if b != nil {
		pr.batch.out = append(pr.batch.out, b)
	}
	pr.batch.waiting--
	out := pr.batch.ready()
	c.mu.Unlock()
	if out == nil {
		return nil
	}
	return c.writeRaw(out)
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
	c.writeRaw(errorMsg(id, code, msg))
}

// errorMsg is an error response; id nil is null.
func errorMsg(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	b, _ := json.Marshal(outMsg{JSONRPC: "2.0", ID: id, Error: e})
	return b
}

// writeRaw writes one message and its newline.
func (c *lineConn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}
