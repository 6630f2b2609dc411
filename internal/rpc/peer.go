package rpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a Unix connection, from SO_PEERCRED:
// the kernel's word, not the other end's. Every agentd socket checks it,
// at both ends: the daemon and the workers refuse a peer of another uid,
// and agentctl's client refuses a server of another uid (a socket planted
// where agentd's should be).
type Peer struct {
	PID int
	UID int
	GID int
	Exe string // filled by PeerExe, else ""
}

// errNotUnix is PeerCred's answer for a connection that is not a Unix
// socket's: no credentials to read, so nothing to trust.
var errNotUnix = errors.New("not a unix socket connection")

// PeerCred reads the credentials of c's peer with one getsockopt. For the
// listening end they are the connecting process's at connect(2); for the
// connecting end, the listener's at listen(2).
func PeerCred(c net.Conn) (Peer, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Peer{}, errNotUnix
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}

// PeerExe is PeerCred with the peer's executable, when /proc lets us read
// it, for logs that say who was refused.
func PeerExe(c net.Conn) (Peer, error) {
	p, err := PeerCred(c)
	if err == nil {
		p.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe")
	}
	return p, err
}

// Refuse answers a connection it will not serve with one error response
// (id 0), then reads and drops what the peer sends for up to timeout
// (at most 1 MiB), so that a peer still writing its request gets the
// answer rather than a broken pipe, and closes it.
func Refuse(c net.Conn, e *Error, timeout time.Duration) {
	c.SetDeadline(time.Now().Add(timeout))
	if body, err := AppendResponse(nil, 0, nil, e); err == nil {
		WriteFrame(c, body)
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	c.Close()
}
