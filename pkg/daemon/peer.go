package daemon

import (
	"net"

	"github.com/agentd/agentd/internal/rpc"
)

// Peer is who is on the other end of a connection, from SO_PEERCRED: the
// kernel's word, not the client's. It is the engine's rpc.Peer, which the
// session workers check too.
type Peer = rpc.Peer

// peerOf reads the credentials of a Unix connection's peer, with its
// executable for the logs.
func peerOf(c *net.UnixConn) (Peer, error) { return rpc.PeerExe(c) }
