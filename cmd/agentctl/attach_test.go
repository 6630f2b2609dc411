package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

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
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
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
