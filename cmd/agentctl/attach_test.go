package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/wire"
)

// TestAttachToAnAgentdBeforeFramedInput: an agentd still running from
// before framed input answers agentctl attach's new parameters as unknown
// fields; agentctl attaches again as that agentd knows and sends bare keys.
func TestAttachToAnAgentdBeforeFramedInput(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys bytes.Buffer
	typed := make(chan struct{})
	upgrades := rpc.ServeOptions{MayUpgrade: func(m string) bool { return m == wire.MethodAttach }}
	sock := fakeDaemonWith(t, upgrades, func(ctx context.Context, _ *rpc.ServerConn, req *wire.Request) (any, error) {
		// The old AttachParams, decoded as strictly as agentd does.
		var p struct {
			Name     string `json:"name"`
			ReadOnly bool   `json:"read_only,omitempty"`
		}
		dec := json.NewDecoder(bytes.NewReader(req.Params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "%s: %v", req.Method, err)
		}
		return &rpc.Upgrade{Result: &wire.AttachResult{Name: p.Name, Cols: 80, Rows: 24}, Stream: func(ctx context.Context, rw io.ReadWriter) error {
			io.WriteString(rw, "old agentd's screen\r\n")
			buf := make([]byte, 64)
			for {
				n, err := rw.Read(buf)
				mu.Lock()
				keys.Write(buf[:n])
				got := keys.String()
				mu.Unlock()
				if got == "ls\r" && n > 0 {
					close(typed)
				}
				if err != nil {
					return nil
				}
			}
		}}, nil
	})
	cmd := exec.Command(agentctlBinary(t), "--socket", sock, "attach", "s1")
	// attach wants a terminal on stdin: the keys are typed on a pty.
	stdin, tty := openPTY(t)
	cmd.Stdin = tty
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	// The banner comes once the terminal is raw: keys typed before would
	// go through the line discipline (\r as \n).
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errOut.String(), "attached to s1"); {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no banner on stderr: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond) // polling stderr, with a deadline
	}
	// Keys; once they are there, Ctrl-] detaches.
	io.WriteString(stdin, "ls\r")
	select {
	case <-typed:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		mu.Lock()
		t.Fatalf("the old agentd got %q, not the bare keys %q\nstderr: %s", keys.String(), "ls\r", errOut.String())
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "old agentd's screen"); {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the session's screen never reached stdout: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond) // polling stdout, with a deadline
	}
	io.WriteString(stdin, "\x1d")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentctl attach to an older agentd: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "detached from s1") {
		t.Errorf("stderr %q: want the detach", errOut.String())
	}
}

// openPTY is a new pseudo-terminal: its master, where a test types, and
// its slave, a program's stdin.
func openPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	var n int
	sc, _ := master.SyscallConn()
	sc.Control(func(fd uintptr) {
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// TestAttachRefusesAStdinThatIsNotATerminal: its keys would go nowhere
// sensible, and an EOF would leave it hanging; the refusal names send and
// logs -f.
func TestAttachRefusesAStdinThatIsNotATerminal(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--socket", "/nonexistent", "attach", "s1"}, strings.NewReader("ls\n"), &stdout, &stderr)
	if code != wire.ExitUsage || !strings.Contains(stderr.String(), "needs a terminal on stdin") || !strings.Contains(stderr.String(), "logs -f") {
		t.Errorf("attach with a pipe on stdin: exit %d, stderr %q; want usage naming send and logs -f", code, stderr.String())
	}
}

func TestDetachKeys(t *testing.T) {
	for _, tc := range []struct {
		flag   string
		seq    []byte
		name   string
		typed  string
		pass   string
		detach bool
	}{
		{"ctrl-]", []byte{0x1d}, "Ctrl-]", "ls\r\x1d", "ls\r", true},
		{"ctrl-p,ctrl-q", []byte{0x10, 0x11}, "Ctrl-P Ctrl-Q", "a\x10b\x10\x11", "a\x10b", true},
		{"ctrl-p,ctrl-q", []byte{0x10, 0x11}, "Ctrl-P Ctrl-Q", "\x10\x10x", "\x10\x10x", false},
		{"q", []byte{'q'}, "q", "abc", "abc", false},
	} {
		seq, err := parseDetachKeys(tc.flag)
		if err != nil || !bytes.Equal(seq, tc.seq) || keyName(seq) != tc.name {
			t.Errorf("parseDetachKeys(%q) = %q %v (%s), want %q (%s)", tc.flag, seq, err, keyName(seq), tc.seq, tc.name)
			continue
		}
		d := &detacher{seq: seq}
		pass, detach := d.feed([]byte(tc.typed))
		if string(pass) != tc.pass || detach != tc.detach {
			t.Errorf("%s: typing %q passes %q, detach %v; want %q, %v", tc.flag, tc.typed, pass, detach, tc.pass, tc.detach)
		}
	}
	for _, bad := range []string{"ctrl-1", "alt-x", "", "ctrl-"} {
		if _, err := parseDetachKeys(bad); err == nil || !strings.Contains(err.Error(), "ctrl-p,ctrl-q") {
			t.Errorf("parseDetachKeys(%q): %v; want a usage error with an example", bad, err)
		}
	}
}

// lockedBuffer is a buffer a process's output goroutine writes while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
