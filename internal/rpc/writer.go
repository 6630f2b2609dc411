package rpc

import (
	"context"
	"net"
	"sync"
	"time"
)

// frameWriter is the write half both ends of a connection share: one frame
// per Write call under a mutex, so concurrent writers never interleave
// partial frames; a reused buffer; and the two bounds on a write that
// blocks because the peer stopped reading: a timeout (the server drops such
// a peer instead of holding its handlers) and a caller's context (Ctrl-C on
// a client ends a blocked call). A write that fails closes the connection,
// since a frame cut short leaves the stream unusable.
type frameWriter struct {
	conn    net.Conn
	timeout time.Duration // zero: no deadline of the writer's own

	mu     sync.Mutex
	buf    []byte
	dlSet  time.Time // when the deadline was last moved
	closed bool      // no more frames: the connection became a raw stream
	// failed is the error of the write that closed the connection, kept
	// so the owner can tell a peer that stopped reading (a timeout) from
	// one that left; read with failure.
	failed error
}

// maxKeptWriteBuf is the largest buffer kept between writes, so one large
// frame does not stay pinned.
const maxKeptWriteBuf = 1 << 20

// write writes body as one frame, bounded by the writer's timeout. The
// deadline is moved only when it has come closer than the timeout by a
// sixteenth, which bounds each write to between 15/16 and all of the
// timeout and saves a runtime timer update per write.
func (w *frameWriter) write(body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.frameLocked(body); err != nil {
		return err
	}
	w.armLocked()
	_, err := w.conn.Write(w.buf)
	return w.doneLocked(err)
}

// armLocked keeps the writer's timeout, if it has one, ahead of a write.
func (w *frameWriter) armLocked() {
	if w.timeout > 0 {
		if now := time.Now(); now.Sub(w.dlSet) > w.timeout/16 {
			w.conn.SetWriteDeadline(now.Add(w.timeout))
			w.dlSet = now
		}
	}
}

// writeCtx writes body as one frame, bounded by the writer's timeout, if
// it has one (a call from a serving end), and by ctx: when ctx ends during
// the write, the write is cut short (a past deadline) and the connection
// closed. It
// returns the frame's error, or the write's; the caller tells them apart
// by ctx.Err().
func (w *frameWriter) writeCtx(ctx context.Context, body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.frameLocked(body); err != nil {
		return err
	}
	w.armLocked()
	var dmu sync.Mutex
	writing := true
	stop := context.AfterFunc(ctx, func() {
		dmu.Lock()
		defer dmu.Unlock()
		if writing {
			w.conn.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	_, err := w.conn.Write(w.buf)
	dmu.Lock()
	writing = false
	dmu.Unlock()
	if !stop() {
		w.conn.SetWriteDeadline(time.Time{})
		w.dlSet = time.Time{} // a timeout, if any, is set again next time
	}
	return w.doneLocked(err)
}

// frameLocked puts body's frame in the buffer.
func (w *frameWriter) frameLocked(body []byte) error {
	if w.closed {
		return ErrClosed
	}
	var err error
	w.buf, err = AppendFrame(w.buf[:0], body)
	return err
}

// doneLocked ends a write: it drops a large buffer and, on an error,
// closes the connection.
func (w *frameWriter) doneLocked(err error) error {
	if cap(w.buf) > maxKeptWriteBuf {
		w.buf = nil
	}
	if err != nil {
		// Recorded before the close, so whoever sees the connection end
		// also sees why.
		if w.failed == nil {
			w.failed = err
		}
		w.conn.Close()
	}
	return err
}

// failure returns the error of the write that closed the connection, or
// nil.
func (w *frameWriter) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// writeWithin writes body as one frame with a deadline of its own (d from
// now), for a last frame to a peer that may not read it.
func (w *frameWriter) writeWithin(body []byte, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.frameLocked(body); err != nil {
		return err
	}
	w.conn.SetWriteDeadline(time.Now().Add(d))
	w.dlSet = time.Time{}
	_, err := w.conn.Write(w.buf)
	return w.doneLocked(err)
}

// stop refuses every later frame (ErrClosed) once the connection has
// become a raw stream, and clears the writer's deadline for the stream.
func (w *frameWriter) stop() {
	w.mu.Lock()
	w.closed = true
	w.conn.SetWriteDeadline(time.Time{})
	w.mu.Unlock()
}
