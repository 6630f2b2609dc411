package desktop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// socketDir is where every local X server puts its socket; lockPath is its
// lock file. Both are fixed by the X server, not by agentd.
const socketDir = "/tmp/.X11-unix"

func socketPath(num int) string { return socketDir + "/X" + strconv.Itoa(num) }
func lockPath(num int) string   { return "/tmp/.X" + strconv.Itoa(num) + "-lock" }

// Probe outcomes other than nil.
var (
	// errNoServer: nothing listens on the display's socket.
	errNoServer = errors.New("no X server answers on the display's socket")
	// errNotOurs: a server answers but refuses the desktop's cookie: it is
	// another server that took the number.
	errNotOurs = errors.New("the X server on the display refuses the desktop's cookie")
	// errHung: the server accepted the connection but did not answer in
	// time (stopped, or wedged); it may be alive.
	errHung = errors.New("the X server on the display does not answer")
)

// probeTimeout bounds one probe; a live server answers a connection setup
// in well under a millisecond.
const probeTimeout = 2 * time.Second

// probe makes an X connection setup to display num with cookie and reads
// the answer's status byte: nil when the server accepts it. It is how the
// package knows a desktop is alive.
func probe(num int, cookie []byte, timeout time.Duration) error {
	_, _, err := probeScreen(num, cookie, timeout)
	return err
}

// probeScreen is probe that also returns the first screen's size from the
// connection setup's answer: the server's current size, after any RandR
// resize.
func probeScreen(num int, cookie []byte, timeout time.Duration) (w, h int, err error) {
	c, err := net.DialTimeout("unix", socketPath(num), timeout)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return 0, 0, errNoServer
		}
		return 0, 0, fmt.Errorf("%w: %v", errNoServer, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	pad := func(n int) int { return (n + 3) &^ 3 }
	req := make([]byte, 12+pad(len(cookieName))+pad(len(cookie)))
	req[0] = 'l'
	binary.LittleEndian.PutUint16(req[2:], 11)
	binary.LittleEndian.PutUint16(req[6:], uint16(len(cookieName)))
	binary.LittleEndian.PutUint16(req[8:], uint16(len(cookie)))
	copy(req[12:], cookieName)
	copy(req[12+pad(len(cookieName)):], cookie)
	if _, err := c.Write(req); err != nil {
		return 0, 0, errNoServer
	}
	var head [8]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, 0, errHung
		}
		return 0, 0, errNoServer
	}
	switch head[0] {
	case 1:
		return setupScreenSize(c, head)
	default: // 0 failed, 2 authenticate: not with our cookie
		return 0, 0, errNotOurs
	}
}

// setupScreenSize reads the rest of an accepted connection setup and
// returns the first screen's width and height in pixels.
func setupScreenSize(c net.Conn, head [8]byte) (int, int, error) {
	rest := make([]byte, 4*int(binary.LittleEndian.Uint16(head[6:])))
	if _, err := io.ReadFull(c, rest); err != nil || len(rest) < 32 {
		return 0, 0, nil // accepted: alive, size unknown
	}
	vendorLen := int(binary.LittleEndian.Uint16(rest[16:]))
	formats := int(rest[21])
	off := 32 + (vendorLen+3)&^3 + 8*formats
	if len(rest) < off+24 || rest[20] == 0 {
		return 0, 0, nil
	}
	return int(binary.LittleEndian.Uint16(rest[off+20:])), int(binary.LittleEndian.Uint16(rest[off+22:])), nil
}
