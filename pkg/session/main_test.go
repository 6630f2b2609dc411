package session

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testhome"
)

// workerEnvVar makes the test binary run as a session worker, so tests run
// the real worker code in a real separate process.
const workerEnvVar = "AGENTD_SESSION_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnvVar) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := RunWorker(ctx, os.Args[1:], os.Stderr)
		stop()
		os.Exit(code)
	}
	// The tests run in a private home (HOME, XDG directories, TMPDIR):
	// the programs sessions run (bash, python, ipython, node) keep their
	// history there.
	os.Exit(testhome.Main(m))
}

// testEnv is one test's state and runtime directories.
type testEnv struct {
	opts ManagerOptions
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Short: session sockets go under it, and sun_path is ~108 bytes.
	run := testhome.ShortDir(t)
	return &testEnv{opts: ManagerOptions{
		StateDir:      t.TempDir(),
		RuntimeDir:    run,
		DaemonSocket:  run + "/agentd.sock",
		WorkerCommand: []string{exe},
		WorkerEnv:     []string{workerEnvVar + "=1"},
	}}
}

// manager returns a Manager on e's directories; at cleanup it kills every
// session still live (so no test leaves processes behind) and closes.
func (e *testEnv) manager(t testing.TB) *Manager {
	t.Helper()
	m, err := NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if ls, err := m.List(ctx, ListRequest{}); err == nil {
			for _, l := range ls {
				if l.Status.Allows().Live {
					m.Stop(ctx, StopRequest{Name: l.Name, Signal: "KILL", Grace: time.Millisecond})
				}
			}
		}
		m.Close()
	})
	return m
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func spawn(t testing.TB, m *Manager, name string, argv ...string) *Info {
	t.Helper()
	info, err := m.Spawn(testCtx(t, 20*time.Second), SpawnRequest{Name: name, Argv: argv, Cwd: os.TempDir(), Cols: 80, Rows: 24})
	if err != nil {
		t.Fatalf("spawn %s %q: %v", name, argv, err)
	}
	return info
}

// await polls cond until it holds or d passes.
func await(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronisation
	}
}

func wantErr(t testing.TB, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
	if err != nil && strings.ToLower(err.Error()[:1]) != err.Error()[:1] {
		t.Errorf("%s: message %q does not start lower case", what, err)
	}
}

func netListenUnix(path string) (interface{ Close() error }, error) {
	return net.Listen("unix", path)
}
