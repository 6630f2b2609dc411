package rfbproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// The tests speak both ends over net.Pipe: the server's side is a script
// of RFC 6143's bytes, the viewer's a client's. The proxy's parsing is
// pure logic; test/desktop_view_test.go runs it against Xvnc and noVNC.

// serverInit is a 3.8 server's handshake up to ServerInit, offering None.
func serverHandshake(t *testing.T, s net.Conn, types []byte) {
	t.Helper()
	s.Write([]byte("RFB 003.008\n"))
	ver := make([]byte, 12)
	io.ReadFull(s, ver)
	s.Write(append([]byte{byte(len(types))}, types...))
	var choice [1]byte
	io.ReadFull(s, choice[:])
	s.Write([]byte{0, 0, 0, 0})
	var shared [1]byte
	io.ReadFull(s, shared[:])
	if shared[0] != 1 {
		t.Errorf("ClientInit shared %d reached the server, want 1 whatever the viewer sent", shared[0])
	}
	si := make([]byte, 24)
	binary.BigEndian.PutUint16(si, 800)
	binary.BigEndian.PutUint16(si[2:], 600)
	binary.BigEndian.PutUint32(si[20:], 1)
	s.Write(append(si, 'd'))
}

// viewerHandshake is a 3.8 viewer's handshake; ClientInit asks for
// exclusive access (0), which the proxy must not pass on.
func viewerHandshake(t *testing.T, v net.Conn) {
	t.Helper()
	ver := make([]byte, 12)
	if _, err := io.ReadFull(v, ver); err != nil || string(ver) != "RFB 003.008\n" {
		t.Fatalf("version %q %v", ver, err)
	}
	v.Write(ver)
	types := make([]byte, 2)
	io.ReadFull(v, types)
	if !bytes.Equal(types, []byte{1, 1}) {
		t.Fatalf("security types offered to the viewer %v, want None alone", types)
	}
	v.Write([]byte{1})
	res := make([]byte, 4)
	io.ReadFull(v, res)
	v.Write([]byte{0})
	si := make([]byte, 25)
	if _, err := io.ReadFull(v, si); err != nil || binary.BigEndian.Uint16(si) != 800 {
		t.Fatalf("ServerInit %v %v", si, err)
	}
}

type pair struct {
	viewer, server net.Conn // the test's ends
	done           chan error
	stats          Stats
}

func start(t *testing.T, opts Options, types []byte) *pair {
	t.Helper()
	v1, v2 := net.Pipe()
	s1, s2 := net.Pipe()
	p := &pair{viewer: v1, server: s1, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { p.done <- Relay(ctx, v2, s2, opts, &p.stats) }()
	t.Cleanup(func() { cancel(); v1.Close(); s1.Close(); <-p.done })
	go serverHandshake(t, s1, types)
	viewerHandshake(t, v1)
	return p
}

func (p *pair) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not end")
		return nil
	}
}

var (
	keyEvent     = []byte{4, 1, 0, 0, 0, 0, 0, 'a'}
	pointerEvent = []byte{5, 1, 0, 100, 0, 100}
	cutText      = []byte{6, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'}
	qemuKey      = []byte{255, 0, 0, 1, 0, 0, 0, 'a', 0, 0, 0, 30}
	update       = []byte{3, 1, 0, 0, 0, 0, 3, 32, 2, 88}
	resize       = append([]byte{251, 0, 3, 32, 2, 88, 1, 0}, make([]byte, 16)...)
	xvp          = []byte{250, 0, 1, 2}
	fence        = []byte{248, 0, 0, 0, 0, 0, 0, 1, 2, 'a', 'b'}
)

// readAll reads what reaches the server until want bytes came.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes at the server: %v (got %v)", n, err, b)
	}
	return b
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func TestViewOnlyViewerInputNeverReachesTheServer(t *testing.T) {
	t.Parallel()
	p := start(t, Options{}, []byte{1})
	go p.viewer.Write(cat(keyEvent, pointerEvent, cutText, qemuKey, resize, xvp, update))
	// The update request arrives first and alone: everything before it
	// was dropped.
	if got := readN(t, p.server, len(update)); !bytes.Equal(got, update) {
		t.Fatalf("the server got %v, want only the update request %v", got, update)
	}
}

func TestLeaseHolderInputPasses(t *testing.T) {
	t.Parallel()
	var allowed atomic.Bool
	p := start(t, Options{Input: allowed.Load}, []byte{1})
	go p.viewer.Write(cat(keyEvent, update))
	if got := readN(t, p.server, len(update)); !bytes.Equal(got, update) {
		t.Fatalf("before the lease the server got %v", got)
	}
	allowed.Store(true)
	msgs := cat(keyEvent, pointerEvent, cutText, qemuKey, resize, fence)
	go p.viewer.Write(msgs)
	if got := readN(t, p.server, len(msgs)); !bytes.Equal(got, msgs) {
		t.Fatalf("with the lease the server got %v, want %v", got, msgs)
	}
	allowed.Store(false)
	go p.viewer.Write(cat(pointerEvent, update))
	if got := readN(t, p.server, len(update)); !bytes.Equal(got, update) {
		t.Fatalf("after hand back the server got %v", got)
	}
}

func TestSetEncodingsLosesExtendedMouseButtons(t *testing.T) {
	t.Parallel()
	p := start(t, Options{}, []byte{1})
	enc := func(es ...int32) []byte {
		b := []byte{2, 0, 0, byte(len(es))}
		for _, e := range es {
			b = binary.BigEndian.AppendUint32(b, uint32(e))
		}
		return b
	}
	go p.viewer.Write(enc(7, -316, 0, -223))
	want := enc(7, 0, -223)
	if got := readN(t, p.server, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("SetEncodings reached the server as %v, want %v", got, want)
	}
}

func TestUnframeableMessagesEndTheConnection(t *testing.T) {
	t.Parallel()
	for name, msg := range map[string][]byte{
		"unknown type":        {77, 0, 0, 0},
		"qemu sub-message":    {255, 1, 0, 0},
		"too many encodings":  {2, 0, 0xff, 0xff},
		"huge cut text":       {6, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff},
		"huge extended cut":   {6, 0, 0, 0, 0x80, 0, 0, 1},
		"fence over 64 bytes": {248, 0, 0, 0, 0, 0, 0, 0, 65},
		"too many screens":    {251, 0, 0, 1, 0, 1, 200, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := start(t, Options{}, []byte{1})
			go p.viewer.Write(msg)
			var pe *ProtocolError
			if err := p.end(t); !errors.As(err, &pe) {
				t.Fatalf("relay ended with %v, want a ProtocolError", err)
			}
		})
	}
}

func TestServerGoneEndsTheRelay(t *testing.T) {
	t.Parallel()
	p := start(t, Options{}, []byte{1})
	p.server.Close()
	if err := p.end(t); !errors.Is(err, ErrServerGone) {
		t.Fatalf("relay ended with %v, want ErrServerGone", err)
	}
}

func TestViewerThatNeverReadsIsDropped(t *testing.T) {
	t.Parallel()
	p := start(t, Options{WriteTimeout: 200 * time.Millisecond}, []byte{1})
	go func() {
		b := make([]byte, 1<<16)
		for {
			if _, err := p.server.Write(b); err != nil {
				return
			}
		}
	}()
	if err := p.end(t); !errors.Is(err, ErrSlowViewer) {
		t.Fatalf("relay ended with %v, want ErrSlowViewer", err)
	}
}

func TestServerWithoutNoneIsRefused(t *testing.T) {
	t.Parallel()
	v1, v2 := net.Pipe()
	s1, s2 := net.Pipe()
	defer v1.Close()
	defer s1.Close()
	done := make(chan error, 1)
	go func() { done <- Relay(context.Background(), v2, s2, Options{}, nil) }()
	go func() {
		s1.Write([]byte("RFB 003.008\n"))
		io.ReadFull(s1, make([]byte, 12))
		s1.Write([]byte{1, 2}) // VNC authentication only
	}()
	go func() {
		io.ReadFull(v1, make([]byte, 12))
		v1.Write([]byte("RFB 003.008\n"))
		io.Copy(io.Discard, v1)
	}()
	var pe *ProtocolError
	if err := <-done; !errors.As(err, &pe) {
		t.Fatalf("relay ended with %v, want a ProtocolError", err)
	}
}
