package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// otherUID is the uid the peer tests connect as: nobody's account.
const otherUID = 12321

// dialAsScript connects to argv[1] and sends one frame, argv[2], then
// prints the answer; python3 because a Go test binary cannot drop to
// another uid for one connection, and its own file sits in a directory
// only root may enter.
const dialAsScript = `import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
b = sys.argv[2].encode()
s.sendall(struct.pack("<I", len(b)) + b)
h = s.recv(4)
n = struct.unpack("<I", h)[0] if len(h) == 4 else 0
out = b""
while len(out) < n:
    c = s.recv(n - len(out))
    if not c: break
    out += c
print(out.decode())
`

// dialAs runs one exchange on socket as uid, for tests that need another
// user; skipped unless the tests run as root with python3.
func dialAs(t *testing.T, uid int, socket, frame string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("connecting as another user needs root")
	}
	// The other user must be able to run it: /usr/bin's, not a shim in
	// root's home.
	py := "/usr/bin/python3"
	if fi, err := os.Stat(py); err != nil || fi.Mode()&0o001 == 0 {
		t.Skip("no python3 that another user may run in /usr/bin")
	}
	cmd := exec.Command(py, "-c", dialAsScript, socket, frame)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dial as uid %d: %v\n%s", uid, err, out)
	}
	return string(out)
}

// TestWorkerRefusesAnotherUser: with the runtime directory and the socket
// opened to everyone, a process of another uid that calls worker.send is
// refused permission_denied by the worker itself (SO_PEERCRED), types
// nothing into the session, and the refusal is in the worker's log with the
// peer's uid; the daemon's own uid is still served.
func TestWorkerRefusesAnotherUser(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	ctx := testCtx(t, 60*time.Second)
	spawn(t, m, "u", "cat")
	sock := m.socket("u")
	for _, p := range []string{e.opts.RuntimeDir, filepath.Dir(sock)} {
		os.Chmod(p, 0o777)
	}
	os.Chmod(sock, 0o666)
	got := dialAs(t, otherUID, sock, `{"id":1,"method":"worker.send","params":{"data":"cHduZWQgYnkgMTIzMjEK"}}`)
	if !strings.Contains(got, `"permission_denied"`) || !strings.Contains(got, "uid 12321") {
		t.Errorf("worker.send from uid %d answered %q, want permission_denied naming the uid", otherUID, got)
	}
	if err := m.Send(ctx, SendRequest{Name: "u", Text: "still mine\n"}); err != nil {
		t.Fatalf("send from the daemon's uid: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(m.dir("u"), eventlog.FileName))
		if strings.Contains(string(b), "pwned") {
			t.Fatalf("the other user's input reached the session:\n%s", b)
		}
		wl, _ := os.ReadFile(filepath.Join(m.dir("u"), "worker.log"))
		if strings.Contains(string(b), "still mine") && strings.Contains(string(wl), "connection from another user refused") {
			if !strings.Contains(string(wl), `"peer_uid":12321`) {
				t.Errorf("the refusal log does not name the peer's uid:\n%s", wl)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want the daemon's input in the log and the refusal in worker.log; log:\n%s\nworker.log:\n%s", b, wl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
