package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// otherUserClient connects to the socket as uid 65534, sends a hello and
// prints the daemon's answer, or "closed" when the connection ends.
const otherUserClient = `
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = b'{"id":1,"method":"agent.hello"}'
try:
    s.sendall(struct.pack('<I', len(body)) + body)
    hdr = s.recv(4)
    if len(hdr) < 4:
        print("closed"); sys.exit(0)
    n = struct.unpack('<I', hdr)[0]
    data = b''
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk: break
        data += chunk
    print(data.decode())
    print("closed" if s.recv(1) == b'' else "open")
except (BrokenPipeError, ConnectionResetError):
    print("closed")
`

func TestAnotherUserIsRefused(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	// The system python, since a per-user install may be unreadable to uid 65534.
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("/usr/bin/python3 not installed (Debian package python3)")
	}
	td := startDaemon(t, Config{})
	// Open the way to the socket for the other user, as a careless chmod
	// would: the peer check must still refuse it.
	os.Chmod(filepath.Dir(filepath.Dir(td.socket)), 0o711)
	os.Chmod(filepath.Dir(td.socket), 0o711)
	os.Chmod(td.socket, 0o666)
	cmd := exec.Command(py, "-c", otherUserClient, td.socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as uid 65534: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, string(wire.CodePermissionDenied)) || !strings.Contains(got, "uid 65534") || !strings.HasSuffix(strings.TrimSpace(got), "closed") {
		t.Errorf("another uid got %q, want permission_denied naming uid 65534, then the connection closed", got)
	}
	// The careless chmod makes the user's own clients refuse the socket
	// (they cannot tell it from a planted one) until it is undone.
	var ut *wire.UntrustedSocketError
	if _, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{}); !errors.As(err, &ut) {
		t.Errorf("own client with the socket's directory at 0711: got %v, want *wire.UntrustedSocketError", err)
	}
	os.Chmod(filepath.Dir(td.socket), 0o700)
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("own user not served after a refused peer: %v", err)
	}
}
