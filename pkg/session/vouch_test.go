package session

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	for _, f := range []string{manifestName, logName, "worker.log"} {
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
