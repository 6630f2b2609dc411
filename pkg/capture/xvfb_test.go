package capture

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// startX starts a private Xvfb (1280x800x24) for one test, skipping the test
// when Xvfb is not installed.
func startX(t testing.TB) *xvfbtest.Server {
	t.Helper()
	return xvfbtest.Start(t, xvfbtest.Options{})
}

// newScreen returns a Screen on srv with acting allowed and an audit log in
// a temporary directory, closed at the end of the test.
func newScreen(t testing.TB, srv *xvfbtest.Server, allow bool) *Screen {
	t.Helper()
	display := ""
	if srv != nil {
		display = srv.Display
	}
	s, err := New(Options{Display: display, AllowAct: allow, AuditPath: t.TempDir() + "/audit.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// await polls cond every 10ms until it holds or timeout passes.
func await(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
