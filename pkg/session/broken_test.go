package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// sessionGone waits until nothing of a session started as info runs: its
// worker, its program, anything in the program's session, any process
// whose environment names the session directory.
func sessionGone(t *testing.T, m *Manager, info *Info) {
	t.Helper()
	await(t, 30*time.Second, "every process of "+info.Name+" gone", func() bool {
		return !processAlive(info.WorkerPID, 0) && !processAlive(info.ProgramPID, 0) &&
			len(sessionMembers(info.ProgramPID, 0, 0)) == 0 && len(workersOf(m.dir(info.Name))) == 0
	})
}

func listEntry(t *testing.T, m *Manager, name string) *ListEntry {
	t.Helper()
	ls, err := m.List(testCtx(t, 20*time.Second), ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ls {
		if ls[i].Name == name {
			return &ls[i]
		}
	}
	return nil
}

// TestBrokenManifestsAreListedAndRemovable damages the manifest of running
// sessions (truncated, empty, mistyped, another name, gone with its socket)
// and checks, on a new Manager as after a daemon restart, that the session
// is listed as broken with the reason, that status describes it, that rm
// without force refuses while its worker runs, and that stop or rm --force
// end every process of it (found by its socket or by its process) and
// remove it.
func TestBrokenManifestsAreListedAndRemovable(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, dir string, b []byte)
		noSocket bool // the socket is gone too: the worker is found by its process
		stop     bool // end it with stop, then rm without force
		reason   string
	}{
		{"truncated", func(t *testing.T, dir string, b []byte) { write(t, dir, b[:len(b)/2]) }, false, false, "damaged"},
		{"empty", func(t *testing.T, dir string, b []byte) { write(t, dir, nil) }, false, true, "damaged"},
		{"mistyped", func(t *testing.T, dir string, b []byte) { write(t, dir, []byte(`{"name":"x","status":5}`)) }, true, false, "damaged"},
		{"another name", func(t *testing.T, dir string, b []byte) {
			write(t, dir, []byte(strings.Replace(string(b), `"name": "`, `"name": "z`, 1)))
		}, false, false, "names the session"},
		{"missing", func(t *testing.T, dir string, b []byte) { os.Remove(filepath.Join(dir, manifestName)) }, true, true, "no manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := strings.ReplaceAll(tc.name, " ", "-")
			info := spawn(t, m, name, "sh", "-c", "sleep 1000 & exec cat")
			dir := m.dir(name)
			b, err := os.ReadFile(filepath.Join(dir, manifestName))
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir, b)
			if tc.noSocket {
				os.Remove(m.socket(name))
			}
			m2 := env.manager(t)
			ctx := testCtx(t, 60*time.Second)

			le := listEntry(t, m2, name)
			if le == nil || le.Status != StatusBroken || !strings.Contains(le.Reason, tc.reason) {
				t.Fatalf("list: got %+v, want %s with status broken and a reason saying %q", le, name, tc.reason)
			}
			st, err := m2.Status(ctx, name)
			if err != nil || st.Status != StatusBroken || st.Reason != le.Reason {
				t.Fatalf("status: got %+v, %v; want broken with the reason %q", st, err, le.Reason)
			}
			_, err = m2.Ask(ctx, AskRequest{Name: name, Text: "hi"})
			wantErr(t, err, ErrInvalidStatus, "ask on a broken session")
			err = m2.Remove(ctx, name, false)
			wantErr(t, err, ErrInvalidStatus, "rm without force while its worker runs")
			if !strings.Contains(err.Error(), "--force") {
				t.Errorf("rm without force: %q does not give the fix", err)
			}
			if tc.stop {
				if _, err := m2.Stop(ctx, StopRequest{Name: name, Grace: time.Second}); err != nil {
					t.Fatalf("stop: %v", err)
				}
				sessionGone(t, m2, info)
				if err := m2.Remove(ctx, name, false); err != nil {
					t.Fatalf("rm after stop: %v", err)
				}
			} else if err := m2.Remove(ctx, name, true); err != nil {
				t.Fatalf("rm --force: %v", err)
			}
			sessionGone(t, m2, info)
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("session directory after rm: %v, want none", err)
			}
			if _, err := m2.Status(ctx, name); !errors.Is(err, ErrNotFound) {
				t.Errorf("status after rm: got %v, want ErrNotFound", err)
			}
		})
	}
}

func write(t *testing.T, dir string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, manifestName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileClassifiesEveryDirectory lays out one of each kind of
// session directory and checks what Reconcile says and does with each: a
// live session attached, a damaged manifest without a worker kept as
// broken, a worker without a manifest reported as an orphan, an empty
// leftover and an interrupted removal removed.
func TestReconcileClassifiesEveryDirectory(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	ctx := testCtx(t, 60*time.Second)
	spawn(t, m, "ok", "cat")
	orphan := spawn(t, m, "orphan", "cat")
	os.Remove(filepath.Join(m.dir("orphan"), manifestName))

	for _, d := range []string{"leftover", "logged", "damaged", ".rm-gone-123"} {
		if err := os.Mkdir(m.dir(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m.dir("logged"), eventlog.FileName), []byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"marker","text":"x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, m.dir("damaged"), []byte(`{"name": "damaged", "sta`))

	m2 := env.manager(t)
	rep, err := m2.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ReconcileEntry{}
	for _, e := range rep.Sessions {
		got[e.Name] = e
	}
	for name, want := range map[string]string{
		"ok": ActionAttached, "orphan": ActionOrphanWorker, "leftover": ActionRemovedLeftover,
		"logged": ActionBroken, "damaged": ActionBroken, ".rm-gone-123": ActionRemovedLeftover,
	} {
		if e, ok := got[name]; !ok || e.Action != want || (want != ActionAttached && e.Detail == "") {
			t.Errorf("reconcile %s: got %+v, want action %s with a detail", name, e, want)
		}
	}
	if len(rep.Sessions) != 6 {
		t.Errorf("reconcile reported %d directories, want 6: %+v", len(rep.Sessions), rep.Sessions)
	}
	for _, gone := range []string{"leftover", ".rm-gone-123"} {
		if _, err := os.Lstat(m.dir(gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after reconcile: %v, want it removed", gone, err)
		}
	}
	if !strings.Contains(got["orphan"].Detail, "pid") {
		t.Errorf("orphan detail %q does not name the worker", got["orphan"].Detail)
	}
	// Broken ones without a worker go without force; the orphan's worker
	// is found and ended by stop.
	for _, n := range []string{"logged", "damaged"} {
		if err := m2.Remove(ctx, n, false); err != nil {
			t.Errorf("rm %s: %v", n, err)
		}
	}
	if _, err := m2.Stop(ctx, StopRequest{Name: "orphan"}); err != nil {
		t.Fatalf("stop orphan: %v", err)
	}
	sessionGone(t, m2, orphan)
	if err := m2.Remove(ctx, "orphan", false); err != nil {
		t.Errorf("rm orphan after stop: %v", err)
	}
}

// TestPlantedLinksAreNeverFollowed: a manifest or event log replaced by a
// symbolic link is neither read nor written through: the session shows as
// broken, its log cannot be read, and the link's target is untouched.
func TestPlantedLinksAreNeverFollowed(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 60*time.Second)
	spawn(t, m, "l", "sh", "-c", "echo hi")
	await(t, 20*time.Second, "l ended", func() bool {
		st, err := m.Status(ctx, "l")
		return err == nil && st.Status.Terminal() && len(workersOf(m.dir("l"))) == 0
	})
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte(`{"name":"l","status":"running"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{manifestName, eventlog.FileName} {
		p := filepath.Join(m.dir("l"), f)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	st, err := m.Status(ctx, "l")
	if err != nil || st.Status != StatusBroken || !strings.Contains(st.Reason, "symbolic links") {
		t.Errorf("status with a linked manifest: %+v %v, want broken saying it is a link", st, err)
	}
	if err := m.Logs(ctx, LogsRequest{Name: "l"}, func(Event) error { return nil }); err == nil {
		t.Error("logs read through a linked event log")
	}
	if err := m.Remove(ctx, "l", false); err != nil {
		t.Fatalf("rm: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != `{"name":"l","status":"running"}` {
		t.Errorf("the link's target changed: %q", b)
	}
}
