package test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testhome"
	"github.com/agentd/agentd/pkg/wire"
)

// plantedUID is the other user of these tests: nobody's account.
const plantedUID = 12321

// forgedServer listens on path and counts every byte anyone sends it; it
// would answer anything (a forged agentd), but the test wants it told
// nothing.
func forgedServer(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 4096)
				for {
					n, err := c.Read(b)
					got.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return &got
}

// TestAgentctlRefusesASocketDirectoryNotTheUsers: with XDG_RUNTIME_DIR
// unset, agentctl's socket is the fallback under the temporary directory;
// a directory there that another user made, that is a link, or that is
// open to others is refused before anything is sent (the forged server
// hears nothing of the password), with exit 69 and a message naming what
// was found and the fix.
func TestAgentctlRefusesASocketDirectoryNotTheUsers(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	uid := os.Getuid()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  []string
	}{
		{"another user's", func(t *testing.T, dir string) {
			if uid != 0 {
				t.Skip("planting another user's directory needs root")
			}
			os.Mkdir(dir, 0o700)
			os.Chown(dir, plantedUID, plantedUID)
		}, []string{"belongs to uid 12321", "XDG_RUNTIME_DIR"}},
		{"a link", func(t *testing.T, dir string) {
			real := dir + ".real"
			os.Mkdir(real, 0o700)
			os.Symlink(real, dir)
		}, []string{"is a symbolic link", "XDG_RUNTIME_DIR"}},
		{"open to others", func(t *testing.T, dir string) {
			os.Mkdir(dir, 0o700)
			os.Chmod(dir, 0o777)
		}, []string{"open to others (mode 0777", "chmod 700"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, err := os.MkdirTemp("", "pl")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			dir := filepath.Join(tmp, "agentd-"+strconv.Itoa(uid))
			tc.plant(t, dir)
			heard := forgedServer(t, filepath.Join(dir, "agentd.sock"))
			_, errOut, code := h.agentctlAt(tmp, []string{"XDG_RUNTIME_DIR=", "TMPDIR=" + tmp}, "ask", "myshell", "my password is hunter2")
			if code != wire.ExitUnreachable {
				t.Errorf("exit %d, want %d; stderr %q", code, wire.ExitUnreachable, errOut)
			}
			for _, w := range append(tc.want, "refusing to talk to "+filepath.Join(dir, "agentd.sock")) {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if n := heard.Load(); n != 0 {
				t.Errorf("the planted socket received %d bytes", n)
			}
		})
	}
}

// TestAgentctlRefusesAServerOfAnotherUser: a socket in a directory that
// passes every check but served by another uid (SO_PEERCRED on the
// connected socket) is refused before the request is written, naming the
// server's uid; exit 69.
func TestAgentctlRefusesAServerOfAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("a server of another user needs root")
	}
	py := "/usr/bin/python3"
	if fi, err := os.Stat(py); err != nil || fi.Mode()&0o001 == 0 {
		t.Skip("no python3 that another user may run in /usr/bin")
	}
	h := newHome(t)
	// In the real temp directory: the private home is closed to other users.
	dir := testhome.ShortDir(t)
	os.Chmod(dir, 0o777) // for the other user to listen in, then closed again
	sock := filepath.Join(dir, "agentd.sock")
	const serve = `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4)
print("ready", flush=True)
heard = 0
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        while True:
            b = c.recv(4096)
            if not b: break
            heard += len(b)
    except Exception:
        pass
    c.close()
    print("heard", heard, flush=True)
`
	cmd := exec.Command(py, "-c", serve, sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: plantedUID, Gid: plantedUID}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the other user's server did not start: %q", lines.Text())
	}
	os.Chmod(dir, 0o700)
	_, errOut, code := h.agentctlAt(dir, []string{"AGENTD_SOCKET=" + sock}, "ask", "myshell", "my password is hunter2")
	if code != wire.ExitUnreachable || !strings.Contains(errOut, "served by uid 12321") || !strings.Contains(errOut, "refusing to talk to "+sock) {
		t.Errorf("exit %d, stderr %q; want %d naming the server's uid", code, errOut, wire.ExitUnreachable)
	}
	if !lines.Scan() || lines.Text() != "heard 0" {
		t.Errorf("the other user's server: %q, want it to have heard nothing", lines.Text())
	}
}
