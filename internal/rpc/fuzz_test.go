package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// The seed corpus is in testdata/fuzz/<FuzzName>/; these f.Add seeds are the
// golden messages, so the fuzzers always start from real traffic.

// refReadFrames is an independent, obviously correct frame parser over a
// complete input: the frames' bodies, then how the stream ends.
func refReadFrames(data []byte) (bodies [][]byte, end *FrameError) {
	for {
		if len(data) == 0 {
			return bodies, nil // io.EOF at a boundary
		}
		if len(data) < HeaderSize {
			return bodies, &FrameError{Err: ErrTruncatedFrame, Got: len(data)}
		}
		n := binary.LittleEndian.Uint32(data)
		data = data[HeaderSize:]
		switch {
		case n == 0:
			return bodies, &FrameError{Err: ErrEmptyFrame}
		case n > MaxFrameSize:
			return bodies, &FrameError{Err: ErrFrameTooLarge, Length: n}
		case uint64(len(data)) < uint64(n):
			return bodies, &FrameError{Err: ErrTruncatedFrame, Length: n, Got: len(data)}
		}
		bodies = append(bodies, data[:n])
		data = data[n:]
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, g := range goldenFrames {
		if len(g.body) < 1000 {
			f.Add(g.frameBytes(f))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0})
	f.Add(header(0))
	f.Add(header(MaxFrameSize + 1))
	f.Add(header(0xFFFFFFFF))
	f.Add(cat(header(70000), []byte(`{"id":1}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		wantBodies, wantEnd := refReadFrames(data)
		readers := map[string]func() ([]byte, error){
			"FrameReader":          NewFrameReader(bytes.NewReader(data)).ReadFrame,
			"FrameReader one byte": NewFrameReader(iotest.OneByteReader(bytes.NewReader(data))).ReadFrame,
		}
		unbuffered := bytes.NewReader(data)
		readers["ReadFrame"] = func() ([]byte, error) { return ReadFrame(unbuffered) }
		for name, read := range readers {
			var got [][]byte
			var err error
			for {
				var b []byte
				b, err = read()
				if err != nil {
					if b != nil {
						t.Errorf("%s: got a body %q with error %v, want nil", name, b, err)
					}
					break
				}
				if len(b) < 1 || len(b) > MaxFrameSize || cap(b) > MaxFrameSize {
					t.Fatalf("%s: got a body of %d bytes (capacity %d), want 1..%d", name, len(b), cap(b), MaxFrameSize)
				}
				got = append(got, b)
				if len(got) > len(wantBodies) {
					t.Fatalf("%s: got more frames than the %d in %x", name, len(wantBodies), data)
				}
			}
			if len(got) != len(wantBodies) {
				t.Fatalf("%s: got %d frames from %x, want %d", name, len(got), data, len(wantBodies))
			}
			for i := range got {
				if !bytes.Equal(got[i], wantBodies[i]) {
					t.Errorf("%s: frame %d of %x: got %x, want %x", name, i, data, got[i], wantBodies[i])
				}
			}
			if wantEnd == nil {
				if err != io.EOF {
					t.Errorf("%s: end of %x: got %v, want io.EOF", name, data, err)
				}
				continue
			}
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Err != wantEnd.Err || fe.Length != wantEnd.Length || fe.Got != wantEnd.Got {
				t.Errorf("%s: end of %x: got %#v, want %#v", name, data, err, wantEnd)
			}
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	for _, g := range goldenFrames {
		if _, ok := g.msg.(Request); ok && len(g.body) < 1000 {
			f.Add([]byte(g.body))
		}
	}
	f.Add([]byte(`{"id":7,"method":42}`))
	f.Add([]byte(`{"id":7,"method":"a","params":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			var werr *Error
			if !errors.As(err, &werr) {
				t.Fatalf("DecodeRequest(%q): got %T %v, want a *wire.Error", body, err, err)
			}
			if werr.Code != CodeMalformedFrame && werr.Code != CodeInvalidParams {
				t.Errorf("DecodeRequest(%q): got code %s, want malformed_frame or invalid_params", body, werr.Code)
			}
			if werr.Message == "" {
				t.Errorf("DecodeRequest(%q): empty message", body)
			}
			if req != nil && req.ID == 0 {
				t.Errorf("DecodeRequest(%q): returned a request with id 0 with the error, want nil or a real id", body)
			}
			if werr.Code == CodeInvalidParams && req == nil {
				t.Errorf("DecodeRequest(%q): invalid_params without the request's id", body)
			}
			return
		}
		if req == nil {
			t.Fatalf("DecodeRequest(%q): nil request and nil error", body)
		}
		if req.ID == 0 {
			t.Errorf("DecodeRequest(%q): accepted id 0", body)
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Errorf("DecodeRequest(%q): accepted a body that is not valid UTF-8 JSON", body)
		}
		if req.Params != nil && req.Params[0] != '{' {
			t.Errorf("DecodeRequest(%q): accepted params %q that are not an object", body, req.Params)
		}
		// Re-encode, frame, read, decode: the same request.
		enc, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", req, err)
		}
		frame, err := AppendFrame(nil, enc)
		if err != nil {
			t.Fatalf("AppendFrame(%q): %v", enc, err)
		}
		back, err := ReadFrame(bytes.NewReader(frame))
		if err != nil {
			t.Fatalf("ReadFrame(AppendFrame(%q)): %v", enc, err)
		}
		req2, err := DecodeRequest(back)
		if err != nil {
			t.Fatalf("DecodeRequest(%q) (re-encoded from %q): %v", back, body, err)
		}
		if req2.ID != req.ID || req2.Method != req.Method || !bytes.Equal(canon(t, req2.Params), canon(t, req.Params)) {
			t.Errorf("round trip of %q: got %s, want %s", body, describe(*req2), describe(*req))
		}
	})
}

// canon returns raw JSON in a canonical form (keys sorted, one encoding of
// each string), so that a re-encoded value compares equal to the original
// although encoding/json may compact it and escape <, > and &.
func canon(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if raw == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %q: %v", raw, err)
	}
	return b
}

func FuzzDecodeIncoming(f *testing.F) {
	for _, g := range goldenFrames {
		if _, ok := g.msg.(Request); !ok {
			f.Add([]byte(g.body))
		}
	}
	f.Add([]byte(`{"id":5,"result":{},"error":{"code":"internal"}}`))
	f.Add([]byte(`{"id":5,"error":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeIncoming(body)
		if err != nil {
			if in.Response != nil || in.Notification != nil {
				t.Errorf("DecodeIncoming(%q): got a message with error %v", body, err)
			}
			return
		}
		if (in.Response == nil) == (in.Notification == nil) {
			t.Fatalf("DecodeIncoming(%q) = %s, want exactly one of a response and a notification", body, describeIncoming(in))
		}
		var enc []byte
		if r := in.Response; r != nil {
			if (r.Result == nil) == (r.Error == nil) {
				t.Fatalf("DecodeIncoming(%q) = %s, want exactly one of result and error", body, describe(*r))
			}
			if r.Error != nil && r.Error.Code == "" {
				t.Errorf("DecodeIncoming(%q): error without a code", body)
			}
			enc, err = AppendResponse(nil, r.ID, r.Result, r.Error)
		} else {
			enc, err = json.Marshal(in.Notification)
		}
		if err != nil {
			t.Fatalf("re-encoding %s: %v", describeIncoming(in), err)
		}
		in2, err := DecodeIncoming(enc)
		if err != nil {
			t.Fatalf("DecodeIncoming(%q) (re-encoded from %q): %v", enc, body, err)
		}
		// Compare raw JSON fields in canonical form.
		norm := func(in Incoming) Incoming {
			if n := in.Notification; n != nil {
				c := *n
				c.Params = canon(t, c.Params)
				return Incoming{Notification: &c}
			}
			r := *in.Response
			r.Result = canon(t, r.Result)
			if r.Error != nil {
				e := *r.Error
				e.Details = canon(t, e.Details)
				r.Error = &e
			}
			return Incoming{Response: &r}
		}
		if a, b := norm(in2), norm(in); !incomingEqual(a, b) {
			t.Errorf("round trip of %q: got %s, want %s", body, describeIncoming(a), describeIncoming(b))
		}
	})
}
