package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// goldenFrame is one message and its exact bytes on the wire. The header is
// written out by hand (hex of the 4-byte little-endian length) so that the
// table is an independent witness of the byte order and the length.
type goldenFrame struct {
	name   string
	header string // hex of the length prefix
	body   string
	msg    any // Request, Response or Notification that body encodes
}

// longAsk is a request whose body is exactly 0x010203 bytes: every byte of
// its header differs, and it is over initialBodyAlloc, so it takes the
// reader's large-body path.
var longAsk = `{"id":6,"method":"agent.ask","params":{"text":"` + strings.Repeat("x", 66001) + `"}}`

var goldenFrames = []goldenFrame{
	{
		name:   "request hello",
		header: "36000000",
		body:   `{"id":1,"method":"agent.hello","params":{"version":1}}`,
		msg:    Request{ID: 1, Method: "agent.hello", Params: json.RawMessage(`{"version":1}`)},
	},
	{
		name:   "request without params",
		header: "1f000000",
		body:   `{"id":42,"method":"agent.list"}`,
		msg:    Request{ID: 42, Method: "agent.list"},
	},
	{
		name:   "request max id and utf-8",
		header: "61000000",
		body:   `{"id":18446744073709551615,"method":"channel.send","params":{"channel":"ci","text":"héllo ✓"}}`,
		msg:    Request{ID: 1<<64 - 1, Method: "channel.send", Params: json.RawMessage(`{"channel":"ci","text":"héllo ✓"}`)},
	},
	{
		name:   "request over 64 KiB",
		header: "03020100",
		body:   longAsk,
		msg:    Request{ID: 6, Method: "agent.ask", Params: json.RawMessage(longAsk[len(`{"id":6,"method":"agent.ask","params":`) : len(longAsk)-1])},
	},
	{
		name:   "success object",
		header: "20000000",
		body:   `{"id":1,"result":{"protocol":1}}`,
		msg:    Response{ID: 1, Result: json.RawMessage(`{"protocol":1}`)},
	},
	{
		name:   "success null",
		header: "16000000",
		body:   `{"id":2,"result":null}`,
		msg:    Response{ID: 2, Result: json.RawMessage(`null`)},
	},
	{
		name:   "success array",
		header: "21000000",
		body:   `{"id":3,"result":[1,"two",false]}`,
		msg:    Response{ID: 3, Result: json.RawMessage(`[1,"two",false]`)},
	},
	{
		name:   "error without details",
		header: "8b000000",
		body:   "{\"id\":4,\"error\":{\"code\":\"agent_not_found\",\"message\":\"session \\\"w1\\\" does not exist; `agentctl list` shows the sessions\",\"retryable\":false}}",
		msg: Response{ID: 4, Error: &Error{
			Code:    CodeAgentNotFound,
			Message: "session \"w1\" does not exist; `agentctl list` shows the sessions",
		}},
	},
	{
		name:   "error with details",
		header: "8b000000",
		body:   `{"id":5,"error":{"code":"timeout","message":"no answer within 30s","retryable":true,"details":{"seen":"partial output","waited_ms":30000}}}`,
		msg: Response{ID: 5, Error: &Error{
			Code:      CodeTimeout,
			Message:   "no answer within 30s",
			Retryable: true,
			Details:   json.RawMessage(`{"seen":"partial output","waited_ms":30000}`),
		}},
	},
	{
		name:   "notification",
		header: "4b000000",
		body:   `{"method":"channel.message","params":{"channel":"ci","text":"build green"}}`,
		msg:    Notification{Method: "channel.message", Params: json.RawMessage(`{"channel":"ci","text":"build green"}`)},
	},
	{
		name:   "notification without params",
		header: "19000000",
		body:   `{"method":"agent.output"}`,
		msg:    Notification{Method: "agent.output"},
	},
}

// frameBytes is the golden frame: the hand-written header, then the body.
func (g goldenFrame) frameBytes(t testing.TB) []byte {
	t.Helper()
	h, err := hex.DecodeString(g.header)
	if err != nil || len(h) != HeaderSize {
		t.Fatalf("%s: bad golden header %q", g.name, g.header)
	}
	return append(h, g.body...)
}

// encodeMessage encodes msg the way the package's senders do: the client
// marshals a Request, the server uses AppendResponse and marshals a
// Notification.
func encodeMessage(msg any) ([]byte, error) {
	switch m := msg.(type) {
	case Request:
		return json.Marshal(m)
	case Response:
		return AppendResponse(nil, m.ID, m.Result, m.Error)
	case Notification:
		return json.Marshal(m)
	}
	return nil, fmt.Errorf("unknown message type %T", msg)
}

// decodeMessage decodes body as the kind of message msg is.
func decodeMessage(body []byte, msg any) (any, error) {
	switch msg.(type) {
	case Request:
		req, err := DecodeRequest(body)
		if err != nil {
			return nil, err
		}
		return *req, nil
	case Response:
		in, err := DecodeIncoming(body)
		if err != nil {
			return nil, err
		}
		if in.Response == nil {
			return nil, fmt.Errorf("decoded as %+v, not a response", in)
		}
		return *in.Response, nil
	case Notification:
		in, err := DecodeIncoming(body)
		if err != nil {
			return nil, err
		}
		if in.Notification == nil {
			return nil, fmt.Errorf("decoded as %+v, not a notification", in)
		}
		return *in.Notification, nil
	}
	return nil, fmt.Errorf("unknown message type %T", msg)
}

// shorten keeps failure messages readable for the 64 KiB golden body.
func shorten(b []byte) string {
	if len(b) <= 200 {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:100])) + fmt.Sprintf("...(%d bytes)...", len(b)-200) + strconv.Quote(string(b[len(b)-100:]))
}

// writeRecorder records every Write call separately.
type writeRecorder struct {
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestGoldenFrames(t *testing.T) {
	t.Parallel()
	for _, g := range goldenFrames {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			frame := g.frameBytes(t)
			if got, want := binary.LittleEndian.Uint32(frame), uint32(len(g.body)); got != want {
				t.Fatalf("golden header %s announces %d bytes, body has %d", g.header, got, want)
			}

			// Message to body.
			body, err := encodeMessage(g.msg)
			if err != nil {
				t.Fatalf("encode %+v: %v", g.msg, err)
			}
			if !bytes.Equal(body, []byte(g.body)) {
				t.Errorf("encode %+v:\ngot  %s\nwant %s", g.msg, shorten(body), shorten([]byte(g.body)))
			}

			// Body to frame.
			got, err := AppendFrame(nil, []byte(g.body))
			if err != nil {
				t.Fatalf("AppendFrame(%s): %v", shorten([]byte(g.body)), err)
			}
			if !bytes.Equal(got, frame) {
				t.Errorf("AppendFrame(nil, %s):\ngot  %s\nwant %s", shorten([]byte(g.body)), shorten(got), shorten(frame))
			}
			prefix := []byte("prefix")
			got, err = AppendFrame(prefix, []byte(g.body))
			if err != nil || !bytes.Equal(got, append([]byte("prefix"), frame...)) {
				t.Errorf("AppendFrame(%q, body) = %s, %v; want the prefix then the frame", "prefix", shorten(got), err)
			}
			var w writeRecorder
			if err := WriteFrame(&w, []byte(g.body)); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
			if len(w.writes) != 1 || !bytes.Equal(w.writes[0], frame) {
				t.Errorf("WriteFrame made %d writes %v; want exactly one write of the frame %s", len(w.writes), w.writes, shorten(frame))
			}

			// Frame to body, buffered and unbuffered.
			fr := NewFrameReader(bytes.NewReader(frame))
			rb, err := fr.ReadFrame()
			if err != nil || !bytes.Equal(rb, []byte(g.body)) {
				t.Errorf("FrameReader.ReadFrame(%s) = %s, %v; want the body", shorten(frame), shorten(rb), err)
			}
			if _, err := fr.ReadFrame(); err != io.EOF {
				t.Errorf("FrameReader.ReadFrame after the only frame: got %v, want io.EOF", err)
			}
			rb, err = ReadFrame(bytes.NewReader(frame))
			if err != nil || !bytes.Equal(rb, []byte(g.body)) {
				t.Errorf("ReadFrame(%s) = %s, %v; want the body", shorten(frame), shorten(rb), err)
			}

			// Body to message.
			dec, err := decodeMessage([]byte(g.body), g.msg)
			if err != nil {
				t.Fatalf("decode %s: %v", shorten([]byte(g.body)), err)
			}
			if !reflect.DeepEqual(dec, g.msg) {
				t.Errorf("decode %s:\ngot  %s\nwant %s", shorten([]byte(g.body)), describe(dec), describe(g.msg))
			}
		})
	}
}

// describe prints a message with its raw JSON fields as text.
func describe(v any) string {
	switch m := v.(type) {
	case Request:
		return fmt.Sprintf("Request{ID:%d Method:%q Params:%s}", m.ID, m.Method, shorten(m.Params))
	case Response:
		if m.Error != nil {
			return fmt.Sprintf("Response{ID:%d Result:%s Error:%+v Details:%s}", m.ID, shorten(m.Result), *m.Error, shorten(m.Error.Details))
		}
		return fmt.Sprintf("Response{ID:%d Result:%s}", m.ID, shorten(m.Result))
	case Notification:
		return fmt.Sprintf("Notification{Method:%q Params:%s}", m.Method, shorten(m.Params))
	}
	return fmt.Sprintf("%#v", v)
}

// goldenStream is every golden frame back to back, and their bodies.
func goldenStream(t testing.TB) (stream []byte, bodies []string) {
	for _, g := range goldenFrames {
		stream = append(stream, g.frameBytes(t)...)
		bodies = append(bodies, g.body)
	}
	return stream, bodies
}

// readAll reads frames until an error and returns the bodies and the error.
func readAll(read func() ([]byte, error)) ([][]byte, error) {
	var out [][]byte
	for {
		b, err := read()
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
}

// readCounter counts the Read calls made on the reader it wraps and the
// bytes they returned.
type readCounter struct {
	r     io.Reader
	calls int
	n     int
}

func (c *readCounter) Read(p []byte) (int, error) {
	c.calls++
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadFrameStream(t *testing.T) {
	t.Parallel()
	stream, want := goldenStream(t)
	readers := []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(stream) }},
		{"one byte", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) }},
		{"half", func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) }},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) }},
	}
	for _, rd := range readers {
		t.Run(rd.name+"/FrameReader", func(t *testing.T) {
			t.Parallel()
			fr := NewFrameReader(rd.r())
			got, err := readAll(fr.ReadFrame)
			checkBodies(t, got, err, want)
		})
		t.Run(rd.name+"/ReadFrame", func(t *testing.T) {
			t.Parallel()
			r := rd.r()
			got, err := readAll(func() ([]byte, error) { return ReadFrame(r) })
			checkBodies(t, got, err, want)
		})
	}
}

func checkBodies(t *testing.T, got [][]byte, err error, want []string) {
	t.Helper()
	if err != io.EOF {
		t.Errorf("after the last frame: got error %v, want io.EOF", err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("frame %d: got %s, want %s", i, shorten(got[i]), shorten([]byte(want[i])))
		}
	}
}

// TestReadFrameSeveralFramesOneRead checks that small frames arriving in one
// read are returned from one system call's worth of data, and that each body
// is the caller's to keep (not overwritten by the next read).
func TestReadFrameSeveralFramesOneRead(t *testing.T) {
	t.Parallel()
	var stream []byte
	var want []string
	for _, g := range goldenFrames {
		if len(g.body) < 1000 {
			stream = append(stream, g.frameBytes(t)...)
			want = append(want, g.body)
		}
	}
	rc := &readCounter{r: bytes.NewReader(stream)}
	fr := NewFrameReader(rc)
	got, err := readAll(fr.ReadFrame)
	checkBodies(t, got, err, want)
	if rc.calls > 2 {
		t.Errorf("reading %d frames of %d bytes in all made %d Read calls, want at most 2 (the data, then EOF)", len(want), len(stream), rc.calls)
	}
}

// TestReadFrameEverySplit delivers two frames in two reads split at every
// possible byte.
func TestReadFrameEverySplit(t *testing.T) {
	t.Parallel()
	a, b := goldenFrames[0], goldenFrames[5]
	stream := append(a.frameBytes(t), b.frameBytes(t)...)
	for k := 0; k <= len(stream); k++ {
		r := io.MultiReader(bytes.NewReader(stream[:k]), bytes.NewReader(stream[k:]))
		got, err := readAll(NewFrameReader(r).ReadFrame)
		if err != io.EOF || len(got) != 2 || string(got[0]) != a.body || string(got[1]) != b.body {
			t.Errorf("split at %d: got %q, %v; want [%q %q], io.EOF", k, got, err, a.body, b.body)
		}
	}
}

// header returns a length prefix.
func header(n uint32) []byte {
	return binary.LittleEndian.AppendUint32(nil, n)
}

func cat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

func TestReadFrameBoundaries(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name       string
		in         io.Reader // nil: use data
		data       []byte
		wantBodies []string
		wantErr    error  // matched with errors.Is; io.EOF must be io.EOF itself
		wantLen    uint32 // FrameError.Length
		wantGot    int    // FrameError.Got
		wantMsg    string // substring of the error text
	}{
		{name: "empty stream", data: nil, wantErr: io.EOF},
		{name: "header 1 byte", data: []byte{5}, wantErr: ErrTruncatedFrame, wantGot: 1, wantMsg: "header after 1 of 4 bytes"},
		{name: "header 2 bytes", data: []byte{5, 0}, wantErr: ErrTruncatedFrame, wantGot: 2, wantMsg: "header after 2 of 4 bytes"},
		{name: "header 3 bytes", data: []byte{5, 0, 0}, wantErr: ErrTruncatedFrame, wantGot: 3, wantMsg: "header after 3 of 4 bytes"},
		{name: "length 0", data: header(0), wantErr: ErrEmptyFrame, wantMsg: "zero"},
		{name: "length 0 then data", data: cat(header(0), []byte(`{}`)), wantErr: ErrEmptyFrame},
		{name: "length 1", data: cat(header(1), []byte("1")), wantBodies: []string{"1"}, wantErr: io.EOF},
		{name: "length cap+1", data: cat(header(MaxFrameSize+1), []byte("{")), wantErr: ErrFrameTooLarge, wantLen: MaxFrameSize + 1, wantMsg: "16777217"},
		{name: "length 0x80000000", data: header(0x80000000), wantErr: ErrFrameTooLarge, wantLen: 0x80000000, wantMsg: "2147483648"},
		{name: "length 0xFFFFFFFF", data: header(0xFFFFFFFF), wantErr: ErrFrameTooLarge, wantLen: 0xFFFFFFFF, wantMsg: "4294967295"},
		{name: "body missing", data: header(5), wantErr: ErrTruncatedFrame, wantLen: 5, wantGot: 0, wantMsg: "body after 0 of 5 bytes"},
		{name: "body short", data: cat(header(5), []byte("ab")), wantErr: ErrTruncatedFrame, wantLen: 5, wantGot: 2, wantMsg: "body after 2 of 5 bytes"},
		{name: "large body short", data: cat(header(70000), bytes.Repeat([]byte("a"), 100)), wantErr: ErrTruncatedFrame, wantLen: 70000, wantGot: 100, wantMsg: "body after 100 of 70000 bytes"},
		{name: "max body short", data: cat(header(MaxFrameSize), bytes.Repeat([]byte("a"), 100000)), wantErr: ErrTruncatedFrame, wantLen: MaxFrameSize, wantGot: 100000},
		{name: "frame then partial header", data: cat(header(2), []byte("{}"), []byte{1, 0}), wantBodies: []string{"{}"}, wantErr: ErrTruncatedFrame, wantGot: 2},
		{name: "frame then empty frame", data: cat(header(2), []byte("{}"), header(0)), wantBodies: []string{"{}"}, wantErr: ErrEmptyFrame},
		{name: "reader error in header", in: io.MultiReader(bytes.NewReader([]byte{1, 0}), iotest.ErrReader(errBoom)), wantErr: errBoom},
		{name: "reader error in body", in: io.MultiReader(bytes.NewReader(cat(header(9), []byte("ab"))), iotest.ErrReader(errBoom)), wantErr: errBoom},
		{name: "reader error in large body", in: io.MultiReader(bytes.NewReader(cat(header(1<<20), []byte("ab"))), iotest.ErrReader(errBoom)), wantErr: errBoom},
	}
	for _, tt := range tests {
		readers := map[string]func(io.Reader) func() ([]byte, error){
			"FrameReader": func(r io.Reader) func() ([]byte, error) { return NewFrameReader(r).ReadFrame },
			"FrameReader one byte": func(r io.Reader) func() ([]byte, error) {
				return NewFrameReader(iotest.OneByteReader(r)).ReadFrame
			},
			"ReadFrame": func(r io.Reader) func() ([]byte, error) { return func() ([]byte, error) { return ReadFrame(r) } },
		}
		for rname, mk := range readers {
			if tt.in != nil && rname != "FrameReader" {
				continue // a reader with an error can be used once
			}
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				t.Parallel()
				in := tt.in
				if in == nil {
					in = bytes.NewReader(tt.data)
				}
				got, err := readAll(mk(in))
				if len(got) != len(tt.wantBodies) {
					t.Fatalf("input %s: got %d bodies %q, want %q", shorten(tt.data), len(got), got, tt.wantBodies)
				}
				for i := range got {
					if string(got[i]) != tt.wantBodies[i] {
						t.Errorf("input %s: body %d: got %q, want %q", shorten(tt.data), i, got[i], tt.wantBodies[i])
					}
				}
				if tt.wantErr == io.EOF {
					if err != io.EOF {
						t.Fatalf("input %s: got error %v, want io.EOF itself", shorten(tt.data), err)
					}
					return
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("input %s: got error %v, want %v", shorten(tt.data), err, tt.wantErr)
				}
				var fe *FrameError
				isFrameErr := errors.As(err, &fe)
				switch tt.wantErr {
				case ErrTruncatedFrame, ErrEmptyFrame, ErrFrameTooLarge:
					if !isFrameErr {
						t.Fatalf("input %s: got %T %v, want a *FrameError", shorten(tt.data), err, err)
					}
					if fe.Length != tt.wantLen || fe.Got != tt.wantGot {
						t.Errorf("input %s: got FrameError{Length: %d, Got: %d}, want {Length: %d, Got: %d}", shorten(tt.data), fe.Length, fe.Got, tt.wantLen, tt.wantGot)
					}
					if !strings.Contains(err.Error(), tt.wantMsg) {
						t.Errorf("input %s: got message %q, want it to contain %q", shorten(tt.data), err.Error(), tt.wantMsg)
					}
				default:
					if isFrameErr {
						t.Errorf("input %s: got *FrameError %v for a reader's own error, want the reader's error passed through", shorten(tt.data), err)
					}
				}
			})
		}
	}
}

// maxBody is a valid JSON body of exactly MaxFrameSize bytes.
var maxBody = sync.OnceValue(func() []byte {
	b := bytes.Repeat([]byte("a"), MaxFrameSize)
	b[0], b[len(b)-1] = '"', '"'
	return b
})

// TestReadFrameExactlyMax reads a frame of exactly MaxFrameSize bytes, and
// checks that the body does not hold on to more memory than the cap.
func TestReadFrameExactlyMax(t *testing.T) {
	t.Parallel()
	body := maxBody()
	frame := cat(header(MaxFrameSize), body, header(2), []byte("{}"))
	for name, fr := range map[string]*FrameReader{
		"whole": NewFrameReader(bytes.NewReader(frame)),
		"half":  NewFrameReader(iotest.HalfReader(bytes.NewReader(frame))),
	} {
		got, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: ReadFrame of a %d-byte frame: got error %v, want the body", name, MaxFrameSize, err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("%s: ReadFrame of a %d-byte frame: got %d bytes %s, want the body", name, MaxFrameSize, len(got), shorten(got))
		}
		if cap(got) > MaxFrameSize {
			t.Errorf("%s: ReadFrame of a %d-byte frame returned a buffer of capacity %d, want at most %d: a body must not allocate over the cap", name, MaxFrameSize, cap(got), MaxFrameSize)
		}
		next, err := fr.ReadFrame()
		if err != nil || string(next) != "{}" {
			t.Errorf("%s: frame after the maximal one: got %q, %v; want \"{}\"", name, next, err)
		}
	}
}

// repeatReader returns the same bytes forever.
type repeatReader struct {
	p   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.p[r.off:])
		n += c
		r.off = (r.off + c) % len(r.p)
	}
	return n, nil
}

// TestReadFrameTooLargeAllocatesNothing checks that an over-cap length is
// rejected before the body is read or allocated. Not parallel: it measures
// the allocations of the whole process.
func TestReadFrameTooLargeAllocatesNothing(t *testing.T) {
	for _, n := range []uint32{MaxFrameSize + 1, 0x80000000, 0xFFFFFFFF} {
		// The body is not read: ReadFrame consumes exactly the header.
		rc := &readCounter{r: bytes.NewReader(cat(header(n), bytes.Repeat([]byte("{"), 1<<20)))}
		if _, err := ReadFrame(rc); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("ReadFrame(length %d): got %v, want ErrFrameTooLarge", n, err)
		}
		if rc.n != HeaderSize {
			t.Errorf("ReadFrame(length %d) read %d bytes, want only the %d-byte header", n, rc.n, HeaderSize)
		}

		// Nothing is allocated but the error: a FrameReader over a stream
		// of nothing but such headers rejects each one cheaply.
		fr := NewFrameReader(&repeatReader{p: header(n)})
		var err error
		allocs := testing.AllocsPerRun(1000, func() { _, err = fr.ReadFrame() })
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("FrameReader.ReadFrame(length %d): got %v, want ErrFrameTooLarge", n, err)
		}
		if allocs > 1 {
			t.Errorf("FrameReader.ReadFrame(length %d): got %v allocations per call, want at most 1 (the error)", n, allocs)
		}
		const runs = 1000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			_, err = fr.ReadFrame()
		}
		runtime.ReadMemStats(&after)
		if perCall := (after.TotalAlloc - before.TotalAlloc) / runs; perCall > 256 {
			t.Errorf("FrameReader.ReadFrame(length %d): allocated %d bytes per call, want at most 256", n, perCall)
		}
	}
}

// stallReader returns its data, then blocks in Read until released, then
// returns EOF.
type stallReader struct {
	data    []byte
	stalled chan struct{} // closed when Read has run out of data
	release chan struct{}
	once    sync.Once
}

func (r *stallReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.stalled) })
	<-r.release
	return 0, io.EOF
}

// TestReadFrameStalledLargeFrame announces the largest frame, sends a few
// bytes and stalls: the reader must hold about initialBodyAlloc, not the
// announced 16 MiB. Not parallel: it measures the allocations of the whole
// process.
func TestReadFrameStalledLargeFrame(t *testing.T) {
	for _, n := range []uint32{MaxFrameSize, initialBodyAlloc + 1} {
		r := &stallReader{
			data:    cat(header(n), []byte(`{"id":1,`)),
			stalled: make(chan struct{}),
			release: make(chan struct{}),
		}
		fr := NewFrameReader(r)
		type result struct {
			body []byte
			err  error
		}
		done := make(chan result, 1)
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		go func() {
			b, err := fr.ReadFrame()
			done <- result{b, err}
		}()
		<-r.stalled
		runtime.ReadMemStats(&during)
		// The initial body buffer, plus slack for the goroutine and the
		// error. Under the race detector bytes.Buffer.Grow allocates its
		// buffer twice (the append(make) optimisation is off).
		limit := uint64(initialBodyAlloc + 16<<10)
		if raceEnabled {
			limit += initialBodyAlloc
		}
		if got := during.TotalAlloc - before.TotalAlloc; got > limit {
			t.Errorf("announced %d bytes, sent 8 and stalled: %d bytes allocated, want at most %d", n, got, limit)
		}
		close(r.release)
		res := <-done
		var fe *FrameError
		if !errors.As(res.err, &fe) || fe.Err != ErrTruncatedFrame || fe.Length != n || fe.Got != 8 {
			t.Errorf("announced %d bytes, sent 8, then EOF: got %q, %#v; want FrameError{ErrTruncatedFrame, Length: %d, Got: 8}", n, res.body, res.err, n)
		}
	}
}

func TestWriteFrameRefuses(t *testing.T) {
	t.Parallel()
	over := make([]byte, MaxFrameSize+1)
	tests := []struct {
		name    string
		body    []byte
		wantErr error
		wantLen uint32
	}{
		{"nil body", nil, ErrEmptyFrame, 0},
		{"empty body", []byte{}, ErrEmptyFrame, 0},
		{"cap+1", over, ErrFrameTooLarge, MaxFrameSize + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w writeRecorder
			err := WriteFrame(&w, tt.body)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("WriteFrame(%d bytes): got %v, want %v", len(tt.body), err, tt.wantErr)
			}
			var fe *FrameError
			if errors.As(err, &fe) && fe.Length != tt.wantLen {
				t.Errorf("WriteFrame(%d bytes): got FrameError.Length %d, want %d", len(tt.body), fe.Length, tt.wantLen)
			}
			if len(w.writes) != 0 {
				t.Errorf("WriteFrame(%d bytes) wrote %d times, want nothing written", len(tt.body), len(w.writes))
			}
			dst := []byte("keep")
			got, err := AppendFrame(dst, tt.body)
			if !errors.Is(err, tt.wantErr) || string(got) != "keep" {
				t.Errorf("AppendFrame(%q, %d bytes) = %q, %v; want %q unchanged, %v", "keep", len(tt.body), shorten(got), err, "keep", tt.wantErr)
			}
		})
	}
}

func TestWriteFrameExactlyMax(t *testing.T) {
	t.Parallel()
	body := maxBody()
	var w writeRecorder
	if err := WriteFrame(&w, body); err != nil {
		t.Fatalf("WriteFrame(%d bytes): got %v, want nil", len(body), err)
	}
	if len(w.writes) != 1 {
		t.Fatalf("WriteFrame(%d bytes): %d writes, want 1", len(body), len(w.writes))
	}
	out := w.writes[0]
	if got, want := hex.EncodeToString(out[:HeaderSize]), "00000001"; got != want {
		t.Errorf("WriteFrame(%d bytes): header %s, want %s", len(body), got, want)
	}
	if len(out) != HeaderSize+MaxFrameSize || !bytes.Equal(out[HeaderSize:], body) {
		t.Errorf("WriteFrame(%d bytes): wrote %d bytes, want the header and the body (%d)", len(body), len(out), HeaderSize+MaxFrameSize)
	}
}

// errWriter fails every write.
type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteFrameWriterError(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	if err := WriteFrame(errWriter{errBoom}, []byte("{}")); !errors.Is(err, errBoom) {
		t.Errorf("WriteFrame to a failing writer: got %v, want %v", err, errBoom)
	}
}
