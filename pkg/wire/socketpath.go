package wire

import (
	"fmt"
	"os"
	"path/filepath"
)

// SocketEnv names the environment variable that overrides the socket path,
// for the daemon and its clients alike. Session programs get it too.
const SocketEnv = "AGENTD_SOCKET"

// DefaultSocketPath is where agentd listens and clients connect unless told
// otherwise: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock, else
// a private directory under the system's temporary directory named for the
// user, which the daemon creates 0700 and verifies before use.
func DefaultSocketPath() string {
	if p := os.Getenv(SocketEnv); p != "" {
		return p
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "agentd", "agentd.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", os.Getuid()), "agentd.sock")
}
