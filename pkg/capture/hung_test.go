package capture

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHungServer stops the X server (SIGSTOP: it accepts connections and
// answers nothing) before a batch and in the middle of one: each ends
// `timeout` within its budget and a second, and once the server continues
// the next batch works on a new connection.
func TestHungServer(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	runScreen(t, s)
	move := []RawAction{{Kind: "move", X: ptr(10.0), Y: ptr(10.0)}}
	if _, err := s.Act(ctxT(t), ActRequest{Actions: move, Observe: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })

	// Hung before the batch: the first round trip is bounded.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := s.Act(ctxT(t), ActRequest{Actions: move, Observe: ptr(false)})
	if !errors.Is(err, ErrTimeout) || res.Outcome != "timeout" {
		t.Fatalf("batch on a hung server: %v (outcome %q), want timeout", err, res.Outcome)
	}
	if took, limit := time.Since(start), pingEvery+hungAfter+time.Second; took > limit {
		t.Errorf("a batch on a hung server took %v, want at most %v", took, limit)
	}
	if !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("error %q does not say the server did not answer", err)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "a batch after the server continued", func() bool {
		_, err := s.Act(ctxT(t), ActRequest{Actions: move, Observe: ptr(false)})
		return err == nil
	})

	// Hung during the batch: it ends within its budget and a second,
	// saying how many actions ran.
	text := strings.Repeat("typing into a hung server ", 30)
	type outcome struct {
		res *ActResult
		err error
	}
	got := make(chan outcome, 1)
	start = time.Now()
	go func() {
		res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
			{Kind: "move", X: ptr(20.0), Y: ptr(20.0)},
			{Kind: "wait", MS: ptr(300.0)},
			{Kind: "type", Text: &text},
		}, Observe: ptr(false)})
		got <- outcome{res, err}
	}()
	time.Sleep(100 * time.Millisecond) // during the wait; any moment before the batch ends would do
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	o := <-got
	took := time.Since(start)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(o.err, ErrTimeout) || o.res.Outcome != "timeout" {
		t.Fatalf("batch hung mid-way: %v (outcome %q), want timeout", o.err, o.res.Outcome)
	}
	if limit := min(o.res.Budget, 300*time.Millisecond+pingEvery+hungAfter) + time.Second; took > limit {
		t.Errorf("the batch took %v with a budget of %v; want at most %v", took, o.res.Budget, limit)
	}
	// The wait watches the kill switch, a round trip, so it may hang too.
	if o.res.ActionsRun < 1 || o.res.ActionsRun > 2 {
		t.Errorf("ran %d actions, want the move counted and not the type", o.res.ActionsRun)
	}
	if want := fmt.Sprintf("during action %d", o.res.ActionsRun+1); !strings.Contains(o.err.Error(), want) {
		t.Errorf("error %q does not say %q", o.err, want)
	}
	await(t, 20*time.Second, "a batch after the server continued again", func() bool {
		_, err := s.Act(ctxT(t), ActRequest{Actions: move, Observe: ptr(false)})
		return err == nil
	})
}
