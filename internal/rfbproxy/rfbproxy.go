// Package rfbproxy relays one RFB (VNC) viewer to a desktop's RFB server
// and reads the viewer's side message by message, so that a viewer that
// may only watch cannot type, point or paste, whatever it sends.
//
// The server's side is copied as it comes once the handshake is over
// (framebuffer updates are the server's word and cost nothing to pass
// on); the viewer's side is framed: the protocol version, the security
// type (None only: the proxy reaches the server over a 0600 Unix socket
// and the page in front of it is the gate), ClientInit (always shared, so
// no viewer can disconnect the others), then each message of RFC 6143 and
// the extensions noVNC sends (QEMU extended key events, fences,
// continuous updates, SetDesktopSize, xvp). KeyEvent, PointerEvent,
// ClientCutText, QEMU key events and SetDesktopSize pass only while
// Options.Input says so; xvp (power operations) never passes. A message
// the proxy cannot frame ends the connection with a ProtocolError naming
// it: passing bytes it does not understand could smuggle input.
//
// The ExtendedMouseButtons pseudo-encoding is taken out of the viewer's
// SetEncodings: it changes PointerEvent's length once the server agrees,
// which only the server's stream says, and the proxy does not parse that
// stream past ServerInit. Without it, pointer events stay six bytes.
//
// It knows nothing of agentd: it must not import anything of it.
package rfbproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of what the proxy reads.
const (
	// MaxEncodings bounds a SetEncodings message: noVNC sends about 30,
	// TigerVNC's viewer about 40.
	MaxEncodings = 512
	// MaxCutText bounds a ClientCutText body: a desktop's clipboard holds
	// 64 KiB of text; an extended clipboard message carries it deflated.
	MaxCutText = 1 << 20
	// maxReason bounds a server's failure reason during the handshake.
	maxReason = 4096
	// maxName bounds the desktop name in ServerInit.
	maxName = 4096
	// maxScreens bounds SetDesktopSize's screens.
	maxScreens = 16
	// DefaultWriteTimeout drops a viewer that has not read for this long.
	DefaultWriteTimeout = 10 * time.Second
	// handshakeTimeout bounds the whole handshake.
	handshakeTimeout = 15 * time.Second
)

// pseudoExtendedMouseButtons is the encoding the proxy strips (see the
// package doc).
const pseudoExtendedMouseButtons = -316

// Errors Relay ends with; a ProtocolError for what it cannot frame.
var (
	// ErrServerGone: the RFB server closed the connection (the desktop
	// was removed, or its server exited).
	ErrServerGone = errors.New("the desktop's RFB server closed the connection: the desktop was removed or its X server exited")
	// ErrViewerGone: the viewer closed its side.
	ErrViewerGone = errors.New("the viewer left")
	// ErrSlowViewer: the viewer did not read within the write timeout.
	ErrSlowViewer = errors.New("the viewer did not read within the write timeout and was dropped")
)

// ProtocolError is a viewer (or server) message the proxy cannot frame or
// will not pass; the connection ends with it.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return "RFB proxy: " + e.Reason }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Reason: fmt.Sprintf(format, args...)}
}

// Options configure a Relay.
type Options struct {
	// Input reports whether the viewer's input may pass now (its page
	// holds the desktop's lease). Nil: never.
	Input func() bool
	// WriteTimeout drops a viewer that has not read for this long; zero
	// is DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Stats count what the viewer sent.
type Stats struct {
	// Passed and Dropped count the viewer's messages after ClientInit.
	Passed, Dropped int64
	// Width and Height are ServerInit's framebuffer size.
	Width, Height int
}

// Relay runs the handshake, then copies both ways until one side ends or
// ctx does. It closes neither connection; it returns why it ended: a
// ProtocolError, ErrServerGone, ErrViewerGone, ErrSlowViewer or ctx's
// error. stats, when not nil, is filled as it goes (read it after Relay
// returns).
func Relay(ctx context.Context, viewer, server net.Conn, opts Options, stats *Stats) error {
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if stats == nil {
		stats = &Stats{}
	}
	r := &relay{viewer: viewer, server: server, opts: opts, stats: stats}
	// Ending ctx unblocks every read and write at once.
	stop := context.AfterFunc(ctx, func() {
		r.fail(ctx.Err())
		viewer.SetDeadline(time.Now())
		server.SetDeadline(time.Now())
	})
	defer stop()
	deadline := time.Now().Add(handshakeTimeout)
	viewer.SetReadDeadline(deadline)
	server.SetReadDeadline(deadline)
	if err := r.handshake(); err != nil {
		return r.fail(err)
	}
	viewer.SetReadDeadline(time.Time{})
	server.SetReadDeadline(time.Time{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := r.serverToViewer()
		r.fail(err)
		viewer.SetReadDeadline(time.Now()) // ends viewerToServer
	}()
	err := r.viewerToServer()
	r.fail(err)
	server.SetReadDeadline(time.Now()) // ends serverToViewer
	wg.Wait()
	return r.err()
}

type relay struct {
	viewer, server net.Conn
	opts           Options
	stats          *Stats
	version        int // 3, 7 or 8: the minor version both speak

	mu    sync.Mutex
	first error // the first reason the relay ended
	ended atomic.Bool
}

// fail records the first reason and returns it.
func (r *relay) fail(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil && err != nil {
		r.first = err
		r.ended.Store(true)
	}
	return r.first
}

func (r *relay) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// fromServer and fromViewer read exactly len(b) bytes, naming the side
// that failed.
func (r *relay) fromServer(b []byte) error {
	if _, err := io.ReadFull(r.server, b); err != nil {
		if r.ended.Load() {
			return r.err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return protoErr("the RFB server did not finish the handshake in %s", handshakeTimeout)
		}
		return ErrServerGone
	}
	return nil
}

func (r *relay) fromViewer(b []byte) error {
	if _, err := io.ReadFull(r.viewer, b); err != nil {
		if r.ended.Load() {
			return r.err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return protoErr("the viewer did not finish the handshake in %s", handshakeTimeout)
		}
		return ErrViewerGone
	}
	return nil
}

func (r *relay) toViewer(b []byte) error {
	r.viewer.SetWriteDeadline(time.Now().Add(r.opts.WriteTimeout))
	if _, err := r.viewer.Write(b); err != nil {
		if r.ended.Load() {
			return r.err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return ErrSlowViewer
		}
		return ErrViewerGone
	}
	return nil
}

func (r *relay) toServer(b []byte) error {
	r.server.SetWriteDeadline(time.Now().Add(r.opts.WriteTimeout))
	if _, err := r.server.Write(b); err != nil {
		if r.ended.Load() {
			return r.err()
		}
		return ErrServerGone
	}
	return nil
}

// serverToViewer copies the server's stream after ServerInit.
func (r *relay) serverToViewer() error {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.server.Read(buf)
		if n > 0 {
			if werr := r.toViewer(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			if r.ended.Load() {
				return r.err()
			}
			return ErrServerGone
		}
	}
}

// viewerToServer frames the viewer's messages, passing or dropping each.
func (r *relay) viewerToServer() error {
	var b [20]byte
	for {
		if err := r.fromViewer(b[:1]); err != nil {
			return err
		}
		msg, input, err := r.readMessage(b[0])
		if err != nil {
			return err
		}
		if msg == nil || (input && !r.inputAllowed()) {
			r.stats.Dropped++
			continue
		}
		r.stats.Passed++
		if err := r.toServer(msg); err != nil {
			return err
		}
	}
}

func (r *relay) inputAllowed() bool { return r.opts.Input != nil && r.opts.Input() }

// Client-to-server message types (RFC 6143 and its registered
// extensions).
const (
	msgSetPixelFormat    = 0
	msgSetEncodings      = 2
	msgUpdateRequest     = 3
	msgKeyEvent          = 4
	msgPointerEvent      = 5
	msgClientCutText     = 6
	msgContinuousUpdates = 150
	msgClientFence       = 248
	msgXvp               = 250
	msgSetDesktopSize    = 251
	msgQEMU              = 255
)

// readMessage reads the rest of a message of type t and returns it whole
// (nil: never passed), and whether it is input.
func (r *relay) readMessage(t byte) (msg []byte, input bool, err error) {
	fixed := func(n int) ([]byte, error) {
		m := make([]byte, n)
		m[0] = t
		return m, r.fromViewer(m[1:])
	}
	switch t {
	case msgSetPixelFormat:
		msg, err = fixed(20)
		return msg, false, err
	case msgSetEncodings:
		hdr, err := fixed(4)
		if err != nil {
			return nil, false, err
		}
		n := int(binary.BigEndian.Uint16(hdr[2:]))
		if n > MaxEncodings {
			return nil, false, protoErr("the viewer's SetEncodings lists %d encodings, more than the %d the proxy reads", n, MaxEncodings)
		}
		body := make([]byte, 4*n)
		if err := r.fromViewer(body); err != nil {
			return nil, false, err
		}
		out := hdr[:4:4]
		kept := 0
		for i := 0; i < n; i++ {
			e := body[4*i : 4*i+4]
			if int32(binary.BigEndian.Uint32(e)) == pseudoExtendedMouseButtons {
				continue
			}
			out = append(out, e...)
			kept++
		}
		binary.BigEndian.PutUint16(out[2:], uint16(kept))
		return out, false, nil
	case msgUpdateRequest:
		msg, err = fixed(10)
		return msg, false, err
	case msgKeyEvent:
		msg, err = fixed(8)
		return msg, true, err
	case msgPointerEvent:
		msg, err = fixed(6)
		return msg, true, err
	case msgClientCutText:
		hdr, err := fixed(8)
		if err != nil {
			return nil, false, err
		}
		// A negative length is the extended clipboard's: its size is the
		// absolute value.
		n := int64(int32(binary.BigEndian.Uint32(hdr[4:])))
		if n < 0 {
			n = -n
		}
		if n > MaxCutText {
			return nil, false, protoErr("the viewer's ClientCutText holds %d bytes, more than the %d the proxy reads", n, MaxCutText)
		}
		msg = make([]byte, 8+n)
		copy(msg, hdr)
		return msg, true, r.fromViewer(msg[8:])
	case msgContinuousUpdates:
		msg, err = fixed(10)
		return msg, false, err
	case msgClientFence:
		hdr, err := fixed(9)
		if err != nil {
			return nil, false, err
		}
		n := int(hdr[8])
		if n > 64 {
			return nil, false, protoErr("the viewer's ClientFence carries %d bytes, more than the 64 the protocol allows", n)
		}
		msg = make([]byte, 9+n)
		copy(msg, hdr)
		return msg, false, r.fromViewer(msg[9:])
	case msgXvp:
		// Shut down, reboot, reset: never from a page.
		_, err := fixed(4)
		return nil, true, err
	case msgSetDesktopSize:
		hdr, err := fixed(8)
		if err != nil {
			return nil, false, err
		}
		n := int(hdr[6])
		if n > maxScreens {
			return nil, false, protoErr("the viewer's SetDesktopSize lists %d screens, more than the %d the proxy reads", n, maxScreens)
		}
		msg = make([]byte, 8+16*n)
		copy(msg, hdr)
		// Resizing the agent's desktop is acting on it.
		return msg, true, r.fromViewer(msg[8:])
	case msgQEMU:
		var sub [1]byte
		if err := r.fromViewer(sub[:]); err != nil {
			return nil, false, err
		}
		if sub[0] != 0 {
			return nil, false, protoErr("the viewer sent QEMU message %d, which the proxy does not know; the connection is ended", sub[0])
		}
		msg = make([]byte, 12)
		msg[0], msg[1] = t, sub[0]
		return msg, true, r.fromViewer(msg[2:])
	}
	return nil, false, protoErr("the viewer sent RFB message type %d, which the proxy does not know; the connection is ended", t)
}

// handshake relays the version, the security type (None) and the
// initialisation messages, checking each.
func (r *relay) handshake() error {
	ver := make([]byte, 12)
	if err := r.fromServer(ver); err != nil {
		return err
	}
	sv, ok := parseVersion(ver)
	if !ok {
		return protoErr("the RFB server's version %q is not RFB's", ver)
	}
	if err := r.toViewer(ver); err != nil {
		return err
	}
	cver := make([]byte, 12)
	if err := r.fromViewer(cver); err != nil {
		return err
	}
	cv, ok := parseVersion(cver)
	if !ok {
		return protoErr("the viewer's version %q is not RFB's", cver)
	}
	switch v := min(sv, cv); {
	case v >= 8:
		r.version = 8
	case v == 7:
		r.version = 7
	case v >= 3:
		r.version = 3
	default:
		return protoErr("RFB 3.%d is older than 3.3", v)
	}
	copy(cver, fmt.Sprintf("RFB 003.%03d\n", r.version))
	if err := r.toServer(cver); err != nil {
		return err
	}
	if err := r.security(); err != nil {
		return err
	}
	// ClientInit: always shared, so that no viewer ends the others.
	var ci [1]byte
	if err := r.fromViewer(ci[:]); err != nil {
		return err
	}
	if err := r.toServer([]byte{1}); err != nil {
		return err
	}
	si := make([]byte, 24)
	if err := r.fromServer(si); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(si[20:])
	if n > maxName {
		return protoErr("the RFB server's desktop name is %d bytes long", n)
	}
	si = append(si, make([]byte, n)...)
	if err := r.fromServer(si[24:]); err != nil {
		return err
	}
	r.stats.Width, r.stats.Height = int(binary.BigEndian.Uint16(si)), int(binary.BigEndian.Uint16(si[2:]))
	return r.toViewer(si)
}

// security relays the security handshake, which must end on None.
func (r *relay) security() error {
	var b4 [4]byte
	if r.version == 3 {
		// 3.3: the server decides.
		if err := r.fromServer(b4[:]); err != nil {
			return err
		}
		switch t := binary.BigEndian.Uint32(b4[:]); t {
		case 0:
			return r.serverRefused(b4[:])
		case 1:
			return r.toViewer(b4[:])
		default:
			return protoErr("the RFB server asks for security type %d; the proxy speaks None only", t)
		}
	}
	var n [1]byte
	if err := r.fromServer(n[:]); err != nil {
		return err
	}
	if n[0] == 0 {
		return r.serverRefused(n[:])
	}
	types := make([]byte, 1+int(n[0]))
	types[0] = n[0]
	if err := r.fromServer(types[1:]); err != nil {
		return err
	}
	hasNone := false
	for _, t := range types[1:] {
		hasNone = hasNone || t == 1
	}
	if !hasNone {
		return protoErr("the RFB server offers security types %v, not None; the proxy speaks None only", types[1:])
	}
	// The viewer is offered None alone: the page is the gate.
	if err := r.toViewer([]byte{1, 1}); err != nil {
		return err
	}
	var choice [1]byte
	if err := r.fromViewer(choice[:]); err != nil {
		return err
	}
	if choice[0] != 1 {
		return protoErr("the viewer chose security type %d, not the None offered", choice[0])
	}
	if err := r.toServer(choice[:]); err != nil {
		return err
	}
	if r.version < 8 {
		return nil // 3.7 sends no result for None
	}
	if err := r.fromServer(b4[:]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(b4[:]) != 0 {
		return r.serverRefused(b4[:])
	}
	return r.toViewer(b4[:])
}

// serverRefused passes the server's reason for refusing on to the viewer
// and ends with it.
func (r *relay) serverRefused(prefix []byte) error {
	var b4 [4]byte
	if err := r.fromServer(b4[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(b4[:])
	if n > maxReason {
		n = 0
	}
	reason := make([]byte, n)
	if err := r.fromServer(reason); err != nil {
		return err
	}
	r.toViewer(append(append(append([]byte{}, prefix...), b4[:]...), reason...))
	return protoErr("the RFB server refused the connection: %s", reason)
}

// parseVersion reads "RFB 003.00x\n" and returns its minor version.
func parseVersion(b []byte) (int, bool) {
	var major, minor int
	if len(b) != 12 || b[11] != '\n' {
		return 0, false
	}
	if _, err := fmt.Sscanf(string(b[:11]), "RFB %03d.%03d", &major, &minor); err != nil || major != 3 {
		return 0, false
	}
	return minor, true
}
