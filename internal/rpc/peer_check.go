package rpc

import (
	"fmt"
	"net"
	"os"
)

// ForeignServerError is a dialled socket whose listener runs as another
// uid (SO_PEERCRED on the connected socket): not the caller's agentd or
// worker, whatever the path says, so nothing was sent to it.
type ForeignServerError struct {
	UID, PID int
}

func (e *ForeignServerError) Error() string {
	return fmt.Sprintf("it is served by uid %d (pid %d), not by you (uid %d)", e.UID, e.PID, os.Getuid())
}

// checkServer refuses a connected socket whose server is not of the
// caller's uid, before anything is written to it: one getsockopt.
func checkServer(conn net.Conn) error {
	p, err := PeerCred(conn)
	if err != nil {
		return fmt.Errorf("cannot read the server's credentials: %w", err)
	}
	if p.UID != os.Getuid() {
		return &ForeignServerError{UID: p.UID, PID: p.PID}
	}
	return nil
}
