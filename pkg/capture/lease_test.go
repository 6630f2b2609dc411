package capture

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func f64(v float64) *float64 { return &v }

// TestTakeOverStopsAndRefusesBatches: a lease stops the batch running and
// the one waiting, refuses new ones naming the holder, refuses a second
// lease, and after hand back batches run again.
func TestTakeOverStopsAndRefusesBatches(t *testing.T) {
	t.Parallel()
	s := newScreen(t, startX(t), true)
	ctx := ctxT(t)
	long := ActRequest{Actions: []RawAction{{Kind: KindWait, MS: f64(4000)}}, Observe: new(bool)}
	type result struct {
		err error
		at  time.Duration
	}
	start := time.Now()
	running, waiting := make(chan result, 1), make(chan result, 1)
	go func() { _, err := s.Act(ctx, long); running <- result{err, time.Since(start)} }()
	await(t, 5*time.Second, "the first batch to hold the screen", s.Busy)
	go func() { _, err := s.Act(ctx, long); waiting <- result{err, time.Since(start)} }()
	await(t, 5*time.Second, "the second batch to wait", func() bool { _, n := s.desk.holder(); return n == 1 })
	release, err := s.TakeOver("a person in agentd's view page")
	if err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan result{"running": running, "waiting": waiting} {
		r := <-ch
		if !errors.Is(r.err, ErrBusy) || !strings.Contains(r.err.Error(), "view page") || r.at > 3*time.Second {
			t.Errorf("the %s batch ended after %s with %v; want busy naming the lease, at once", name, r.at, r.err)
		}
	}
	if _, err := s.Act(ctx, ActRequest{Actions: []RawAction{{Kind: KindMove, X: f64(5), Y: f64(5)}}, Observe: new(bool)}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "view page") {
		t.Errorf("a batch during the lease: %v, want busy naming the lease", err)
	}
	if _, err := s.TakeOver("another page"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "view page") {
		t.Errorf("a second take-over: %v, want busy naming the first", err)
	}
	if got := s.LeaseHolder(); got != "a person in agentd's view page" {
		t.Errorf("LeaseHolder %q", got)
	}
	release()
	release()
	if _, err := s.Act(ctx, ActRequest{Actions: []RawAction{{Kind: KindMove, X: f64(5), Y: f64(5)}}, Observe: new(bool)}); err != nil {
		t.Errorf("a batch after hand back: %v", err)
	}
}
