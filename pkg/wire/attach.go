package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The kinds of attach frame an attach with framed_input sends (see "Raw
// streaming" in the package documentation).
const (
	// AttachFrameInput is keyboard input: the payload's bytes reach the
	// program as if typed.
	AttachFrameInput byte = 0
	// AttachFrameWindow is the attacher's window size: the payload is the
	// JSON of a WindowSize.
	AttachFrameWindow byte = 1
)

// MaxAttachFrame is the largest payload of one attach frame. Input longer
// than this goes in several frames.
const MaxAttachFrame = 64 << 10

// attachHeader is the kind byte and the payload's length.
const attachHeader = 5

// WindowSize is an attacher's window size, the payload of an
// AttachFrameWindow frame, in character cells.
type WindowSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// AppendAttachFrame appends one attach frame of kind with payload to dst.
// A payload longer than MaxAttachFrame is the caller's mistake: it panics.
func AppendAttachFrame(dst []byte, kind byte, payload []byte) []byte {
	if len(payload) > MaxAttachFrame {
		panic(fmt.Sprintf("wire: attach frame of %d bytes is over MaxAttachFrame", len(payload)))
	}
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// AttachFrameError is an attach frame the daemon cannot take.
type AttachFrameError struct{ Msg string }

func (e *AttachFrameError) Error() string { return "bad attach frame: " + e.Msg }

// AttachFrameReader reads the attach frames of an attach with
// framed_input; the daemon's side.
type AttachFrameReader struct {
	r   io.Reader
	buf []byte
}

// NewAttachFrameReader reads attach frames from r.
func NewAttachFrameReader(r io.Reader) *AttachFrameReader { return &AttachFrameReader{r: r} }

// Next reads one frame and returns its kind and payload, which is valid
// until the next call. At a clean end between frames it returns io.EOF; a
// frame cut short is io.ErrUnexpectedEOF; an unknown kind or a payload
// over MaxAttachFrame is an *AttachFrameError, found from the header
// before anything is allocated for the payload.
func (a *AttachFrameReader) Next() (kind byte, payload []byte, err error) {
	var h [attachHeader]byte
	if _, err := io.ReadFull(a.r, h[:]); err != nil {
		return 0, nil, err
	}
	kind, n := h[0], binary.LittleEndian.Uint32(h[1:])
	switch {
	case kind != AttachFrameInput && kind != AttachFrameWindow:
		return 0, nil, &AttachFrameError{fmt.Sprintf("kind %d is not %d (input) or %d (window size)", kind, AttachFrameInput, AttachFrameWindow)}
	case n > MaxAttachFrame:
		return 0, nil, &AttachFrameError{fmt.Sprintf("a payload of %d bytes is over the limit of %d; split input into several frames", n, MaxAttachFrame)}
	}
	if cap(a.buf) < int(n) {
		a.buf = make([]byte, n)
	}
	payload = a.buf[:n]
	if _, err := io.ReadFull(a.r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return kind, payload, nil
}

// DecodeWindowSize decodes an AttachFrameWindow frame's payload strictly:
// one JSON object with cols and rows and nothing else. The size's range is
// the session's to check.
func DecodeWindowSize(payload []byte) (WindowSize, error) {
	var w WindowSize
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	err := dec.Decode(&w)
	if err == nil && dec.More() {
		err = errors.New("more after the object")
	}
	if err == nil && (w.Cols == 0 || w.Rows == 0) {
		err = errors.New("cols and rows are both needed")
	}
	if err != nil {
		shown := payload[:min(len(payload), 64)]
		return WindowSize{}, &AttachFrameError{fmt.Sprintf("window size %q: %v; send {\"cols\":C,\"rows\":R}", shown, err)}
	}
	return w, nil
}

// AttachWriter writes an attach with framed_input's side of the stream:
// Write sends keyboard input, Resize the window's size. It is safe for
// concurrent use, so a SIGWINCH handler can resize while input is copied.
type AttachWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewAttachWriter writes attach frames to w, the attached connection.
func NewAttachWriter(w io.Writer) *AttachWriter { return &AttachWriter{w: w} }

// Write sends p as keyboard input, in frames of at most MaxAttachFrame.
func (a *AttachWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), MaxAttachFrame)]
		a.buf = AppendAttachFrame(a.buf[:0], AttachFrameInput, chunk)
		if _, err := a.w.Write(a.buf); err != nil {
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// Resize sends the window's new size.
func (a *AttachWriter) Resize(cols, rows int) error {
	payload, err := json.Marshal(WindowSize{Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf = AppendAttachFrame(a.buf[:0], AttachFrameWindow, payload)
	_, err = a.w.Write(a.buf)
	return err
}
