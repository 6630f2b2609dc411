package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/eventlog"
)

// TestVouch: a session vouches for its program (a descendant of its
// worker) and for whoever presents its secret, which is in the program's
// environment and nowhere on disk; not for another process, a wrong
// secret, or a session that does not run.
func TestVouch(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 60*time.Second)
	info := spawn(t, m, "v", "cat")
	env, err := os.ReadFile("/proc/" + strconv.Itoa(info.ProgramPID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, TokenEnv+"="); ok {
			token = v
		}
	}
	if len(token) != 64 {
		t.Fatalf("the program's %s is %q, want 64 hex digits", TokenEnv, token)
	}
	for _, f := range []string{manifestName, eventlog.FileName, "worker.log"} {
		if b, _ := os.ReadFile(filepath.Join(m.dir("v"), f)); strings.Contains(string(b), token) {
			t.Errorf("the session's secret is written in %s", f)
		}
	}
	for _, tc := range []struct {
		name  string
		pid   int
		token string
		want  bool
	}{
		{"its program", info.ProgramPID, "", true},
		{"an outsider", os.Getpid(), "", false},
		{"an outsider with the secret", os.Getpid(), token, true},
		{"an outsider with a wrong secret", os.Getpid(), strings.Repeat("0", 64), false},
		{"its worker itself", info.WorkerPID, "", false},
	} {
		ok, why, err := m.Vouch(ctx, "v", tc.pid, tc.token)
		if err != nil || ok != tc.want || (!ok && why == "") {
			t.Errorf("%s: got %v %q %v, want %v with a reason when false", tc.name, ok, why, err, tc.want)
		}
	}
	if ok, _, _ := m.Vouch(ctx, "nobody", info.ProgramPID, token); ok {
		t.Error("a session that does not exist vouched")
	}
	if _, err := m.Stop(ctx, StopRequest{Name: "v"}); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := m.Vouch(ctx, "v", os.Getpid(), token); ok {
		t.Error("an ended session vouched")
	}
}

// programToken reads the session secret from the program's environment.
func programToken(t *testing.T, pid int) string {
	t.Helper()
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, TokenEnv+"="); ok {
			return v
		}
	}
	t.Fatalf("the program has no %s", TokenEnv)
	return ""
}

// TestWorkerHelloNeverHandsOutTheSessionSecret: whoever calls a worker's
// hello or status (the daemon, or anyone else who reaches its socket)
// learns nothing that proves membership of the session: the answer holds
// neither the secret nor anything from which a token Vouch accepts could
// be made, while Vouch still accepts the secret itself.
func TestWorkerHelloNeverHandsOutTheSessionSecret(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 60*time.Second)
	info := spawn(t, m, "h", "cat")
	token := programToken(t, info.ProgramPID)
	c, err := rpc.Dial(ctx, m.socket("h"), rpc.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, method := range []string{mHello, mStatus} {
		var raw json.RawMessage
		if err := c.Call(ctx, method, nil, &raw); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), token) {
			t.Errorf("%s hands out the session's secret: %s", method, raw)
		}
		var fields map[string]any
		json.Unmarshal(raw, &fields)
		for _, v := range fields {
			presented, _ := v.(string)
			if len(presented) < 32 {
				continue
			}
			if ok, _, _ := m.Vouch(ctx, "h", os.Getpid(), presented); ok {
				t.Errorf("%s's answer %q is accepted as the session's token", method, presented)
			}
		}
	}
	if ok, why, err := m.Vouch(ctx, "h", os.Getpid(), token); !ok || err != nil {
		t.Fatalf("the secret itself: got %v %q %v, want vouched", ok, why, err)
	}
}
