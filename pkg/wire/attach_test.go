package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestAttachWriterRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	w := NewAttachWriter(&stream)
	long := bytes.Repeat([]byte("0123456789"), (3*MaxAttachFrame+5)/10+1)
	if n, err := w.Write(long); n != len(long) || err != nil {
		t.Fatalf("Write %d bytes: %d, %v", len(long), n, err)
	}
	w.Resize(132, 43)
	w.Write([]byte("abc"))

	r := NewAttachFrameReader(&stream)
	var input []byte
	var sizes []WindowSize
	for {
		kind, payload, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(payload) > MaxAttachFrame {
			t.Fatalf("a frame of %d bytes, over MaxAttachFrame", len(payload))
		}
		switch kind {
		case AttachFrameInput:
			input = append(input, payload...)
		case AttachFrameWindow:
			ws, err := DecodeWindowSize(payload)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(input, long) {
				t.Errorf("the window size came after %d bytes of input, want after the %d written before it", len(input), len(long))
			}
			sizes = append(sizes, ws)
		}
	}
	if want := append(append([]byte(nil), long...), "abc"...); !bytes.Equal(input, want) {
		t.Errorf("read %d bytes of input, want the %d written", len(input), len(want))
	}
	if len(sizes) != 1 || sizes[0] != (WindowSize{132, 43}) {
		t.Errorf("window sizes %v, want [{132 43}]", sizes)
	}
}

func TestAttachFrameReaderRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream []byte
		want   string // "" for the error values below
		err    error
	}{
		{"nothing", nil, "", io.EOF},
		{"half a header", []byte{0, 5}, "", io.ErrUnexpectedEOF},
		{"payload cut short", AppendAttachFrame(nil, AttachFrameInput, []byte("hello"))[:8], "", io.ErrUnexpectedEOF},
		{"unknown kind", []byte{7, 1, 0, 0, 0, 'x'}, "kind 7 is not 0 (input) or 1 (window size)", nil},
		// Only the header: refused from it, without waiting for 16 MiB.
		{"over the limit", []byte{0, 0, 0, 0, 1}, "a payload of 16777216 bytes is over the limit of 65536", nil},
	} {
		_, _, err := NewAttachFrameReader(bytes.NewReader(c.stream)).Next()
		var fe *AttachFrameError
		switch {
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		case c.err == nil && (!errors.As(err, &fe) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an AttachFrameError naming %q", c.name, err, c.want)
		}
	}
}

func TestDecodeWindowSize(t *testing.T) {
	if ws, err := DecodeWindowSize([]byte(`{"cols":80,"rows":24}`)); err != nil || ws != (WindowSize{80, 24}) {
		t.Errorf("DecodeWindowSize: %v, %v", ws, err)
	}
	for payload, want := range map[string]string{
		``:                               "EOF",
		`80x24`:                          "cannot unmarshal number into Go value",
		`{"cols":80}`:                    "cols and rows are both needed",
		`{"cols":80,"rows":24,"dpi":96}`: `unknown field "dpi"`,
		`{"cols":80,"rows":24}{}`:        "more after the object",
		`{"cols":"80","rows":24}`:        "cannot unmarshal string",
		`{"cols":80,"rows":24.5}`:        "cannot unmarshal number 24.5",
	} {
		_, err := DecodeWindowSize([]byte(payload))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `send {"cols":C,"rows":R}`) {
			t.Errorf("DecodeWindowSize(%q): %v, want an error naming %q and the form to send", payload, err, want)
		}
	}
}

// FuzzAttachFrames: whatever an attacher sends, the reader neither panics
// nor hands out more than MaxAttachFrame at once, and the frames it reads
// are the bytes it consumed.
func FuzzAttachFrames(f *testing.F) {
	f.Add(AppendAttachFrame(AppendAttachFrame(nil, AttachFrameInput, []byte("ls\r")), AttachFrameWindow, []byte(`{"cols":80,"rows":24}`)))
	f.Add([]byte{1, 3, 0, 0, 0, '{', '}'})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := NewAttachFrameReader(bytes.NewReader(stream))
		var again []byte
		for {
			kind, payload, err := r.Next()
			if err != nil {
				var fe *AttachFrameError
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &fe) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(payload) > MaxAttachFrame || (kind != AttachFrameInput && kind != AttachFrameWindow) {
				t.Fatalf("frame kind %d of %d bytes let through", kind, len(payload))
			}
			if kind == AttachFrameWindow {
				DecodeWindowSize(payload)
			}
			again = AppendAttachFrame(again, kind, payload)
		}
		if !bytes.HasPrefix(stream, again) {
			t.Fatalf("the frames read are not the stream's first %d bytes", len(again))
		}
	})
}
