package capture

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// xsock is the socket under the xgb connection. It exists because xgb does not
// survive its X server going away: on a read error it closes its request
// channel (so the next request panics with "send on closed channel"), may close
// it twice, and leaves every caller waiting for a reply blocked forever.
//
// xsock hides the death from xgb. It follows the byte stream to know which
// request sequence numbers are still unanswered, and when the socket fails it
// completes the packet in progress and answers every outstanding and every
// later request with a synthesized X error. xgb keeps running, each caller
// gets an error, and the owner learns of the death through dead.
//
// It also adds the MIT-MAGIC-COOKIE-1 credentials to the connection setup,
// which xgb cannot find itself for a net.Conn it did not dial.
type xsock struct {
	conn net.Conn

	// wmu orders the writes (xgb's writer and flush); it is never taken
	// under mu, and the reader never takes it.
	wmu sync.Mutex

	mu   sync.Mutex
	cond *sync.Cond

	// holdNext keeps the next request back (held, heldN requests) to go
	// out with the one after it in one write: a batch's pointer motion
	// then reaches the server with the kill switch's query that follows
	// it, one write and one wake of the server where there were two. The
	// server still takes the motion first. Held requests count as written
	// only once written.
	holdNext bool
	held     []byte
	heldN    uint16

	authName  string
	authData  []byte
	setupSent bool

	written  uint16 // sequence number of the last request written
	answered uint16 // sequence number of the last reply or error read
	replies  uint64 // replies and errors read: the round trips made (what the tests count an action in)

	// Parser state over the bytes read: the setup reply first, then 32-byte
	// packets, replies followed by their extra length.
	inSetup bool
	hdr     [32]byte
	hdrN    int
	hdrWant int
	skip    int

	isDead  bool
	deadErr error
	dead    chan struct{}
	pending []byte // synthesized bytes for xgb to read after the death
	closed  bool
	idle    bool // xgb's reader waits in Read for synthesized bytes
}

// errorCodeImplementation is the X error code (BadImplementation) the
// synthesized errors carry.
const errorCodeImplementation = 17

// maxCoreError is the highest core protocol error code.
const maxCoreError = 17

func newXSock(conn net.Conn, authName string, authData []byte) *xsock {
	s := &xsock{conn: conn, authName: authName, authData: authData, inSetup: true, hdrWant: 8, dead: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Dead is closed when the socket has failed.
func (s *xsock) Dead() <-chan struct{} { return s.dead }

// Err is the error that killed the socket, or nil.
func (s *xsock) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadErr
}

// drained waits until the socket is dead and xgb's reader has taken every
// synthesized byte and waits for more. xgb's Close is only safe then: its
// reader must see the close request only after the reply to the round trip
// Close makes, or the two deadlock.
func (s *xsock) drained() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.isDead || len(s.pending) > 0 || !s.idle {
		s.cond.Wait()
	}
}

// unanswered reports whether requests were written since the server's last
// reply or error (void requests included: a round trip settles them).
func (s *xsock) unanswered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.isDead && !s.inSetup && s.written != s.answered
}

// Kill makes the socket behave as if the server went away.
func (s *xsock) Kill(err error) {
	s.mu.Lock()
	s.die(err)
	s.mu.Unlock()
	_ = s.conn.Close()
}

func (s *xsock) Read(p []byte) (int, error) {
	s.mu.Lock()
	if !s.isDead {
		s.mu.Unlock()
		n, err := s.conn.Read(p)
		s.mu.Lock()
		if n > 0 && !s.isDead {
			s.parse(p[:n])
		}
		if err != nil {
			s.die(err)
			if s.inSetup {
				// The connection failed before the server's setup reply
				// was complete: xgb's NewConnNet must fail, not wait for
				// replies that die only synthesizes for requests.
				s.mu.Unlock()
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
		}
		if n > 0 || !s.isDead {
			s.mu.Unlock()
			return n, nil
		}
	}
	defer s.mu.Unlock()
	for len(s.pending) == 0 && !s.closed {
		s.idle = true
		s.cond.Broadcast()
		s.cond.Wait()
		s.idle = false
	}
	if len(s.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

func (s *xsock) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if !s.setupSent {
		s.setupSent = true
		p = s.withAuth(p)
		s.mu.Unlock()
		if _, err := s.conn.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if s.isDead {
		s.written++
		s.pending = append(s.pending, errorPacket(s.written)...)
		s.cond.Broadcast()
		s.mu.Unlock()
		return len(p), nil
	}
	if s.holdNext {
		s.holdNext = false
		s.held = append(s.held, p...)
		s.heldN++
		s.mu.Unlock()
		return len(p), nil
	}
	s.written += s.heldN + 1
	if len(s.held) > 0 {
		p = append(s.held, p...)
		s.held, s.heldN = nil, 0
	}
	s.mu.Unlock()
	if _, err := s.conn.Write(p); err != nil {
		s.mu.Lock()
		s.die(err)
		s.mu.Unlock()
	}
	return len(p), nil
}

// hold keeps the next request written back until the one after it, or
// until flush: see holdNext. Whoever holds must write again or flush.
func (s *xsock) hold() {
	s.mu.Lock()
	s.holdNext = true
	s.mu.Unlock()
}

// flush writes what hold kept back, and ends a hold not yet used.
func (s *xsock) flush() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	s.holdNext = false
	if len(s.held) == 0 || s.isDead {
		s.mu.Unlock()
		return
	}
	p := s.held
	s.written += s.heldN
	s.held, s.heldN = nil, 0
	s.mu.Unlock()
	if _, err := s.conn.Write(p); err != nil {
		s.mu.Lock()
		s.die(err)
		s.mu.Unlock()
	}
}

// Close is called by xgb once, when it is closed (third_party/README.md):
// its reader may still be reading, and gets what die queued, then EOF.
func (s *xsock) Close() error {
	s.mu.Lock()
	s.closed = true
	s.die(net.ErrClosed)
	s.cond.Broadcast()
	s.mu.Unlock()
	return s.conn.Close()
}

// die marks the socket dead once: it completes the packet xgb is in the
// middle of and queues an error for every unanswered request.
func (s *xsock) die(err error) {
	if s.isDead {
		return
	}
	s.isDead = true
	s.deadErr = err
	close(s.dead)
	if s.inSetup {
		return
	}
	// Requests held back were never sent: they are answered with errors
	// as the others are.
	s.written += s.heldN
	s.held, s.heldN, s.holdNext = nil, 0, false
	var fill []byte
	if s.hdrN > 0 {
		rest := make([]byte, 32-s.hdrN)
		copy(s.hdr[s.hdrN:], rest)
		if s.hdr[0] <= 1 && s.hdrN < 4 {
			// The sequence number was not delivered yet: claim the next
			// unanswered request, the only consistent choice.
			var seq [2]byte
			binary.LittleEndian.PutUint16(seq[:], s.answered+1)
			for i := max(s.hdrN, 2); i < 4; i++ {
				s.hdr[i] = seq[i-2]
			}
		}
		copy(rest, s.hdr[s.hdrN:])
		fill = append(fill, rest...)
		if s.hdr[0] <= 1 {
			s.answered = binary.LittleEndian.Uint16(s.hdr[2:])
			if s.hdr[0] == 1 {
				s.skip = int(binary.LittleEndian.Uint32(s.hdr[4:])) * 4
			}
		}
	}
	if s.skip > 0 {
		fill = append(fill, make([]byte, s.skip)...)
	}
	for seq := s.answered + 1; seq != s.written+1; seq++ {
		fill = append(fill, errorPacket(seq)...)
	}
	s.pending = append(s.pending, fill...)
	s.cond.Broadcast()
}

// parse follows the server's byte stream to track answered requests.
func (s *xsock) parse(b []byte) {
	for len(b) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(b))
			s.skip -= n
			b = b[n:]
			continue
		}
		n := copy(s.hdr[s.hdrN:s.hdrWant], b)
		if !s.inSetup && s.hdrN <= 1 && s.hdrN+n > 1 && s.hdr[0] == 0 && s.hdr[1] > maxCoreError {
			// An extension's error: xgb only knows the constructors of
			// extensions initialised through their Init, which writes
			// process-wide maps without locks (a data race with every
			// other connection's reader), so this package never calls
			// it. Present the error as a core one, which xgb delivers.
			b[1-s.hdrN] = errorCodeImplementation
			s.hdr[1] = errorCodeImplementation
		}
		s.hdrN += n
		b = b[n:]
		if s.hdrN < s.hdrWant {
			return
		}
		if s.inSetup {
			s.inSetup = false
			s.skip = int(binary.LittleEndian.Uint16(s.hdr[6:])) * 4
			s.hdrN, s.hdrWant = 0, 32
			continue
		}
		switch s.hdr[0] {
		case 0:
			s.replies++
			s.answered = binary.LittleEndian.Uint16(s.hdr[2:])
		case 1:
			s.replies++
			s.answered = binary.LittleEndian.Uint16(s.hdr[2:])
			s.skip = int(binary.LittleEndian.Uint32(s.hdr[4:])) * 4
		}
		s.hdrN = 0
	}
}

func errorPacket(seq uint16) []byte {
	p := make([]byte, 32)
	p[1] = errorCodeImplementation
	binary.LittleEndian.PutUint16(p[2:], seq)
	return p
}

// withAuth rewrites xgb's connection setup request, which carries no
// credentials, to carry the MIT-MAGIC-COOKIE-1 found for this display.
func (s *xsock) withAuth(p []byte) []byte {
	if s.authName == "" || len(p) < 12 || binary.LittleEndian.Uint16(p[6:]) != 0 || binary.LittleEndian.Uint16(p[8:]) != 0 {
		return p
	}
	pad := func(n int) int { return (n + 3) &^ 3 }
	out := make([]byte, 12+pad(len(s.authName))+pad(len(s.authData)))
	copy(out, p[:12])
	binary.LittleEndian.PutUint16(out[6:], uint16(len(s.authName)))
	binary.LittleEndian.PutUint16(out[8:], uint16(len(s.authData)))
	copy(out[12:], s.authName)
	copy(out[12+pad(len(s.authName)):], s.authData)
	return out
}

// xauthCookieFrom finds the MIT-MAGIC-COOKIE-1 for a local display number
// in path ("" is $XAUTHORITY, then ~/.Xauthority; a desktop's Screen reads
// the desktop's own cookie file). It returns empty values when there is
// none, which is right for servers started without access control (such as
// Xvfb).
func xauthCookieFrom(path string, display int) (string, []byte) {
	if path == "" {
		path = os.Getenv("XAUTHORITY")
	}
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil
		}
		path = home + "/.Xauthority"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil
	}
	host, _ := os.Hostname()
	want := strconv.Itoa(display)
	const familyLocal, familyWild = 256, 65535
	field := func() ([]byte, bool) {
		if len(data) < 2 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+n {
			return nil, false
		}
		v := data[2 : 2+n]
		data = data[2+n:]
		return v, true
	}
	for len(data) >= 2 {
		family := binary.BigEndian.Uint16(data)
		data = data[2:]
		addr, ok1 := field()
		disp, ok2 := field()
		name, ok3 := field()
		cookie, ok4 := field()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return "", nil
		}
		addrOK := family == familyWild || (family == familyLocal && string(addr) == host)
		dispOK := len(disp) == 0 || string(disp) == want
		if addrOK && dispOK && string(name) == "MIT-MAGIC-COOKIE-1" && len(cookie) == 16 {
			return string(name), append([]byte(nil), cookie...)
		}
	}
	return "", nil
}

func (s *xsock) LocalAddr() net.Addr                { return s.conn.LocalAddr() }
func (s *xsock) RemoteAddr() net.Addr               { return s.conn.RemoteAddr() }
func (s *xsock) SetDeadline(t time.Time) error      { return s.conn.SetDeadline(t) }
func (s *xsock) SetReadDeadline(t time.Time) error  { return s.conn.SetReadDeadline(t) }
func (s *xsock) SetWriteDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }
