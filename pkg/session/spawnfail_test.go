package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailedSpawnNamesTheCauseAndLeavesNothing runs each way a program can
// fail to start through a real worker and checks the exact reason (cause
// and path), that the worker did not crash on the way out (its reason is
// the worker's own, not "ended before reporting"), and that nothing is left:
// no session directory, no socket, no worker process.
func TestFailedSpawnNamesTheCauseAndLeavesNothing(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	ctx := testCtx(t, 60*time.Second)
	tmp := t.TempDir()
	plain := filepath.Join(tmp, "plain.txt")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The check below that no worker is left must be able to see one.
	info := spawn(t, m, "alive", "cat")
	if ws := workersOf(m.dir("alive")); len(ws) != 1 || ws[0].pid != info.WorkerPID {
		t.Fatalf("workersOf a live session: got %v, want its worker %d", ws, info.WorkerPID)
	}
	for _, tc := range []struct {
		name, session string
		argv          []string
		cwd           string
		want          string
	}{
		{"missing binary", "f1", []string{"/nonexistent/bin"}, "/", "exec /nonexistent/bin: no such file or directory"},
		{"missing in PATH", "f2", []string{"agentd-no-such-program"}, "/", `exec "agentd-no-such-program": executable file not found in PATH`},
		{"missing cwd", "f3", []string{"true"}, "/nonexistent/dir", "working directory /nonexistent/dir: no such file or directory"},
		{"cwd is a file", "f4", []string{"true"}, plain, "working directory " + plain + ": not a directory"},
		{"not executable", "f5", []string{plain}, "/", "exec " + plain + ": permission denied (not executable)"},
		{"a directory", "f6", []string{tmp}, "/", "exec " + tmp + ": is a directory"},
		{"relative missing", "f7", []string{"./nope"}, tmp, "exec " + filepath.Join(tmp, "nope") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Spawn(ctx, SpawnRequest{Name: tc.session, Argv: tc.argv, Cwd: tc.cwd})
			wantErr(t, err, ErrSpawnFailed, "spawn")
			var se *SpawnError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SpawnError", err)
			}
			if !strings.HasPrefix(se.Reason, tc.want) {
				t.Errorf("reason: got %q, want it to begin %q", se.Reason, tc.want)
			}
			if strings.Contains(se.Reason, "panic") || strings.Contains(se.Reason, "ended before reporting") {
				t.Errorf("reason %q: the worker crashed instead of reporting", se.Reason)
			}
			dir := m.dir(tc.session)
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("session directory %s: got %v, want it gone", dir, err)
			}
			if _, err := os.Lstat(m.socket(tc.session)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("session socket: got %v, want it gone", err)
			}
			await(t, 20*time.Second, "no worker process left", func() bool { return len(workersOf(dir)) == 0 })
			if _, err := m.Status(ctx, tc.session); !errors.Is(err, ErrNotFound) {
				t.Errorf("status after failed spawn: got %v, want ErrNotFound", err)
			}
		})
	}
}
