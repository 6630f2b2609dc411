package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Peer is who is on the other end of a connection, from SO_PEERCRED: the
// kernel's word, not the client's.
type Peer struct {
	PID int
	UID int
	GID int
	Exe string // the peer's executable when readable, else ""
}

// peerOf reads the credentials of a Unix connection's peer.
func peerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
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
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
	p.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe")
	return p, nil
}
