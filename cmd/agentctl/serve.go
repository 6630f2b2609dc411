package main

// agentctl serve: the socket protocol as JSON lines on stdin and stdout,
// for scripts in any language (every language can write lines to a pipe;
// few read 4-byte length prefixes comfortably).
//
//   - A line in is {"id": ANY, "method": "agent.…", "params": {…}}: the
//     socket's method and params, and an optional id of any JSON type that
//     the answer echoes. A line out is {"id", "result"} or {"id", "error":
//     {code, message, retryable, details}}, with the socket's codes, or a
//     notification {"method", "params"} (followed logs, channel messages).
//   - Requests run one at a time, in the order of the lines, so a script can
//     write "spawn" then "ask" without waiting in between; the socket allows
//     more in flight, but a line protocol piped from a shell is read as a
//     sequence. A followed agent.logs is the exception: it streams in the
//     background (its events as notification lines) until the session ends
//     or stdin closes. One connection to agentd serves them all, so what the
//     daemon ties to a connection (a channel, the "unchanged" observation of
//     act) lasts for the whole serve session.
//   - Stdout carries only protocol lines; diagnostics go to stderr. A line
//     that is not a request gets an error line showing the shape expected,
//     with the id when one could be read, and the session goes on.
//   - Closing stdin is the graceful end: requests in flight are answered,
//     then serve exits 0. Followed logs end there: their stream is what the
//     closed stdin stopped asking for.
//
// It adds nothing underneath: every request goes to the daemon as it is.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// maxServeLine is the longest line serve reads: the socket's frame cap, since
// a longer request could not be sent on. A longer line is skipped without
// being kept and answered with an error.
const maxServeLine = wire.MaxFrameSize

// idPeek is how much of an over-long line is kept to find its id in.
const idPeek = 64 << 10

// requestShape is shown in every error about a line that is not a request.
const requestShape = `send one JSON object per line: {"id": 1, "method": "agent.hello", "params": {}} (id is optional and may be any JSON value; agent.hello lists the methods)`

// lineOut is one line serve writes.
type lineOut struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wire.Error     `json:"error,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// server is one running agentctl serve.
type server struct {
	e   *env
	wmu sync.Mutex // one line at a time on stdout

	mu     sync.Mutex
	client *wire.Client
}

func serveVerb() command {
	return verb[*selfPrinted]{
		use:     "serve",
		summary: `speak agentd's protocol as JSON lines on stdin/stdout, for scripts: {"id": 1, "method": "agent.list", "params": {}} per line; closing stdin ends it`,
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			s := &server{e: e}
			if err := s.run(ctx); err != nil {
				return nil, err
			}
			return nil, errPrinted
		},
	}
}

func (s *server) logf(format string, args ...any) {
	fmt.Fprintf(s.e.stderr, "agentctl serve: "+format+"\n", args...)
}

// write writes one line. A failed write (stdout closed) is not reported:
// there is nobody left to report it to.
func (s *server) write(l lineOut) {
	b, err := json.Marshal(l)
	if err != nil {
		b, _ = json.Marshal(lineOut{ID: l.ID, Error: wire.Errorf(wire.CodeInternal, "could not encode the answer: %v", err)})
	}
	b = append(b, '\n')
	s.wmu.Lock()
	s.e.stdout.Write(b)
	s.wmu.Unlock()
}

// conn returns the connection to agentd, dialling when there is none or the
// last one ended.
func (s *server) conn(ctx context.Context) (*wire.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		select {
		case <-s.client.Done():
			s.logf("the connection to agentd ended: %v; the next request connects again", s.client.Err())
			s.client = nil
		default:
			return s.client, nil
		}
	}
	c, err := wire.Dial(ctx, s.e.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		s.write(lineOut{Method: n.Method, Params: n.Params})
	}})
	if err != nil {
		return nil, err
	}
	s.client = c
	return c, nil
}

func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// run reads requests until stdin ends or ctx does.
func (s *server) run(ctx context.Context) error {
	defer s.close()
	if _, err := s.conn(ctx); err != nil {
		s.logf("%v; each request will say so until agentd runs", err)
	} else {
		s.logf("agentctl %s serving %s; one JSON request per line on stdin, closing stdin ends", buildinfo.Version, s.e.socket)
	}
	// Followed logs run beside the other requests and end with stdin.
	streams, endStreams := context.WithCancel(ctx)
	defer endStreams()
	var wg sync.WaitGroup
	lines := make(chan inLine)
	readErr := make(chan error, 1)
	go func() { readErr <- s.read(lines) }()
	for {
		var line inLine
		select {
		case line = <-lines:
		case err := <-readErr:
			if err != nil {
				s.logf("reading stdin: %v", err)
			}
			endStreams()
			wg.Wait()
			return nil
		case <-ctx.Done():
			// Interrupted: close the connection at once, so agentd
			// cancels what is in flight.
			s.close()
			wg.Wait()
			return ctx.Err()
		}
		req, id, bad := parseServeLine(line.n, line)
		if bad != nil {
			s.write(lineOut{ID: id, Error: bad})
			continue
		}
		if !req.follow {
			s.call(ctx, req)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.call(streams, req)
		}()
	}
}

// inLine is one line read from stdin: its bytes, or for a line longer
// than maxServeLine its first idPeek bytes and its length.
type inLine struct {
	n    int // its number, counting from 1, blank lines included
	text []byte
	long *overlong
}

// overlong describes a line longer than maxServeLine.
type overlong struct {
	prefix []byte
	size   int64
}

// read sends stdin's lines to lines, one at a time. It returns nil at EOF.
func (s *server) read(lines chan<- inLine) error {
	r := bufio.NewReaderSize(s.e.stdin, 64<<10)
	for n := 1; ; n++ {
		line, long, err := readServeLine(r)
		if long != nil || len(bytes.TrimSpace(line)) > 0 {
			lines <- inLine{n, line, long}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readServeLine reads one line, keeping at most maxServeLine bytes: a
// longer line is read to its end but only its first idPeek bytes are kept.
// A last line without a newline counts as a line.
func readServeLine(r *bufio.Reader) (line []byte, long *overlong, err error) {
	var size int64
	for {
		chunk, err := r.ReadSlice('\n')
		size += int64(len(chunk))
		switch {
		case long != nil:
			long.size = size
		case size > maxServeLine+1: // +1: the newline is not the request's
			keep := line
			if len(keep) > idPeek {
				keep = keep[:idPeek]
			}
			long = &overlong{prefix: bytes.Clone(keep), size: size}
			line = nil
		default:
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, long, err
	}
}

// serveRequest is a parsed line.
type serveRequest struct {
	id     json.RawMessage // as sent; nil when absent
	method string
	params json.RawMessage // nil when absent
	follow bool            // agent.logs with follow: a stream
}

// parseServeLine checks line n and returns the request, or the error line's
// id and error.
func parseServeLine(n int, in inLine) (*serveRequest, json.RawMessage, *wire.Error) {
	if o := in.long; o != nil {
		return nil, peekID(o.prefix), wire.Errorf(wire.CodeMalformedFrame,
			"line %d is %d bytes, longer than the %d-byte limit (the socket's frame cap); it was skipped. Write large text to a file and send its path; %s",
			n, o.size, maxServeLine, requestShape)
	}
	line := bytes.TrimSpace(in.text)
	if !utf8.Valid(line) {
		return nil, nil, wire.Errorf(wire.CodeMalformedFrame, "line %d is not valid UTF-8; %s", n, requestShape)
	}
	if !json.Valid(line) {
		return nil, peekID(line), wire.Errorf(wire.CodeMalformedFrame, "line %d is not JSON; %s", n, requestShape)
	}
	if line[0] != '{' {
		return nil, nil, wire.Errorf(wire.CodeMalformedFrame, "line %d is a JSON %s, not an object; %s", n, jsonKindOf(line), requestShape)
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(line, &fields)
	req := &serveRequest{id: fields["id"]}
	for k := range fields {
		if k != "id" && k != "method" && k != "params" {
			return nil, req.id, wire.Errorf(wire.CodeMalformedFrame, "line %d has a field %q; a request has only id, method and params; %s", n, k, requestShape)
		}
	}
	m, ok := fields["method"]
	if !ok || json.Unmarshal(m, &req.method) != nil || req.method == "" {
		what := "no \"method\""
		if ok {
			what = "a method that is not a string (" + jsonKindOf(m) + ")"
		}
		return nil, req.id, wire.Errorf(wire.CodeMalformedFrame, "line %d has %s; %s", n, what, requestShape)
	}
	if req.method == wire.MethodAttach {
		return nil, req.id, wire.Errorf(wire.CodeInvalidParams, "%s turns a connection into a raw terminal stream, which JSON lines cannot carry; use `agentctl attach`, or agent.snapshot, agent.send and agent.logs with follow", req.method)
	}
	if p, ok := fields["params"]; ok && !bytes.Equal(p, []byte("null")) {
		if p[0] != '{' {
			return nil, req.id, wire.Errorf(wire.CodeInvalidParams, "line %d: params of %s must be a JSON object, not %s", n, req.method, jsonKindOf(p))
		}
		req.params = p
		var f struct {
			Follow bool `json:"follow"`
		}
		json.Unmarshal(p, &f)
		req.follow = req.method == wire.MethodLogs && f.Follow
	}
	return req, req.id, nil
}

// peekID reads a top-level "id" from the start of what may be a broken or
// cut JSON object, so an error line can still carry it.
func peekID(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			return v
		}
	}
	return nil
}

// jsonKindOf names the JSON type of a valid value for messages.
func jsonKindOf(v json.RawMessage) string {
	switch v = bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v[0] == '"':
		return "string"
	case v[0] == 't' || v[0] == 'f':
		return "boolean"
	case v[0] == 'n':
		return "null"
	}
	return "number"
}

// call sends one request to agentd and writes its answer.
func (s *server) call(ctx context.Context, req *serveRequest) {
	c, err := s.conn(ctx)
	if err != nil {
		s.write(lineOut{ID: req.id, Error: serveError(err)})
		return
	}
	var params any
	if req.params != nil {
		params = req.params
	}
	result, err := c.CallRaw(ctx, req.method, params)
	if err != nil {
		if req.follow && ctx.Err() != nil {
			return // stdin closed: the stream ends without an answer
		}
		s.write(lineOut{ID: req.id, Error: serveError(err)})
		return
	}
	s.write(lineOut{ID: req.id, Result: result})
}

// serveError is the error object of an answer that did not come from the
// daemon's own error, with the codes agentctl --json uses.
func serveError(err error) *wire.Error {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, new(*wire.UnreachableError)), errors.Is(err, wire.ErrClosed):
		return &wire.Error{Code: "unreachable", Message: err.Error(), Retryable: true}
	case errors.Is(err, context.Canceled):
		return &wire.Error{Code: "canceled", Message: "agentctl serve was interrupted before agentd answered"}
	}
	return wire.Errorf(wire.CodeInternal, "%v", err)
}
