package rpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrameSize is the largest JSON body a frame may carry, in either direction.
// 16 MiB holds a full-screen PNG in base64 and any realistic batch, while a
// hostile or corrupt length prefix still cannot make a peer allocate more.
const MaxFrameSize = 16 << 20

// HeaderSize is the length of the little-endian uint32 that precedes every body.
const HeaderSize = 4

// initialBodyAlloc bounds what is allocated for a body before its bytes have
// arrived: a peer that announces 16 MiB and then stalls costs at most this much.
const initialBodyAlloc = 64 << 10

// Frame errors. A reader that returns one of them has lost its place in the
// stream (except for io.EOF at a frame boundary, which is a clean close); the
// connection must be closed after an error frame is sent where possible.
var (
	// ErrFrameTooLarge is a length prefix over MaxFrameSize. Nothing was
	// allocated for the body.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrEmptyFrame is a length prefix of zero: no message is zero bytes of JSON.
	ErrEmptyFrame = errors.New("empty frame")
	// ErrTruncatedFrame is end of stream inside a header or a body.
	ErrTruncatedFrame = errors.New("truncated frame")
)

// FrameError describes a broken frame: what was wrong, with the announced length.
type FrameError struct {
	Err    error  // one of ErrFrameTooLarge, ErrEmptyFrame, ErrTruncatedFrame
	Length uint32 // the announced body length, when the header was complete
	Got    int    // bytes of the body that arrived before the stream ended
}

func (e *FrameError) Error() string {
	switch e.Err {
	case ErrFrameTooLarge:
		return fmt.Sprintf("frame length %d exceeds the %d-byte limit; send smaller messages (write large images to a path)", e.Length, MaxFrameSize)
	case ErrEmptyFrame:
		return "frame length is zero; every frame carries a JSON message"
	case ErrTruncatedFrame:
		if e.Length == 0 {
			return fmt.Sprintf("stream ended inside a frame header after %d of %d bytes", e.Got, HeaderSize)
		}
		return fmt.Sprintf("stream ended inside a frame body after %d of %d bytes", e.Got, e.Length)
	}
	return e.Err.Error()
}

func (e *FrameError) Unwrap() error { return e.Err }

// FrameReader reads frames from a stream. It buffers reads so that small
// frames cost one system call for several messages. It is not safe for
// concurrent use.
type FrameReader struct {
	r   io.Reader
	hdr [HeaderSize]byte
}

// NewFrameReader returns a FrameReader reading from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// ReadFrame returns the next frame's body. At a frame boundary, end of
// stream is io.EOF; inside a frame it is a *FrameError wrapping
// ErrTruncatedFrame. The length is checked against MaxFrameSize before any
// allocation. The returned slice is the caller's to keep.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	n, err := io.ReadFull(fr.r, fr.hdr[:])
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, &FrameError{Err: ErrTruncatedFrame, Got: n}
		}
		return nil, err
	}
	size := binary.LittleEndian.Uint32(fr.hdr[:])
	if size == 0 {
		return nil, &FrameError{Err: ErrEmptyFrame}
	}
	if size > MaxFrameSize {
		return nil, &FrameError{Err: ErrFrameTooLarge, Length: size}
	}
	if size <= initialBodyAlloc {
		body := make([]byte, size)
		n, err := io.ReadFull(fr.r, body)
		if err != nil {
			return nil, truncated(err, size, n)
		}
		return body, nil
	}
	// Large body: grow with what actually arrives, doubling up to the
	// announced size, so a stalled peer that announced the maximum holds
	// only about what it sent and a whole body never holds more than its size.
	body := make([]byte, 0, initialBodyAlloc)
	for len(body) < int(size) {
		if len(body) == cap(body) {
			nb := make([]byte, len(body), min(2*cap(body), int(size)))
			copy(nb, body)
			body = nb
		}
		n, err := fr.r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err != nil && len(body) < int(size) {
			return nil, truncated(err, size, len(body))
		}
	}
	return body, nil
}

func truncated(err error, size uint32, got int) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &FrameError{Err: ErrTruncatedFrame, Length: size, Got: got}
	}
	return err
}

// ReadFrame reads one frame from r, reading nothing beyond it. Prefer a
// FrameReader for a stream of frames: it makes fewer system calls.
func ReadFrame(r io.Reader) ([]byte, error) {
	fr := FrameReader{r: r}
	return fr.ReadFrame()
}

// AppendFrame appends the frame for body (header then body) to dst.
func AppendFrame(dst, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return dst, &FrameError{Err: ErrEmptyFrame}
	}
	if len(body) > MaxFrameSize {
		return dst, &FrameError{Err: ErrFrameTooLarge, Length: uint32(min(uint64(len(body)), 1<<32-1))}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...), nil
}

// WriteFrame writes body as one frame with a single Write call, so that
// concurrent writers serialised by a mutex never interleave partial frames.
// It refuses a body over MaxFrameSize or an empty one without writing.
func WriteFrame(w io.Writer, body []byte) error {
	buf, err := AppendFrame(make([]byte, 0, HeaderSize+len(body)), body)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// buffered reports whether a whole frame (header and body) is already in
// the reader's buffer, so reading it cannot block. The server then needs no
// read deadline for it.
func (fr *FrameReader) buffered() bool {
	br, ok := fr.r.(*bufio.Reader)
	if !ok || br.Buffered() < HeaderSize {
		return false
	}
	hdr, _ := br.Peek(HeaderSize)
	return uint64(binary.LittleEndian.Uint32(hdr)) <= uint64(br.Buffered()-HeaderSize)
}

// waitStart blocks until the first byte of the next frame is available (or
// the stream ends), without consuming it. The server uses it to start a
// frame's read deadline only once the frame has begun.
func (fr *FrameReader) waitStart() error {
	br, ok := fr.r.(*bufio.Reader)
	if !ok {
		return nil
	}
	_, err := br.Peek(1)
	return err
}
