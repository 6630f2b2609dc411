package session

import (
	"strings"
	"testing"
	"time"
)

// TestHealthSilenceAndResume: a worker marked silent is reported with how
// long it has been silent and its stall signal fires; its next answer
// makes it responsive again and runs what waited for that, once.
func TestHealthSilenceAndResume(t *testing.T) {
	h := &handle{name: "w"}
	h.hl.stalled = make(chan struct{})
	h.record(&liveStatus{Status: StatusRunning})
	if _, _, silent := h.snapshot(); silent != 0 {
		t.Fatalf("an answering worker is silent for %s, want 0", silent)
	}
	stalled := h.stallSignal()
	h.markSilent()
	h.markSilent() // twice is once
	select {
	case <-stalled:
	default:
		t.Fatal("the stall signal did not fire when the worker was marked silent")
	}
	if _, _, silent := h.snapshot(); silent <= 0 {
		t.Errorf("a silent worker is silent for %s, want > 0", silent)
	}
	resumed := make(chan struct{}, 2)
	h.afterResume(func() { resumed <- struct{}{} })
	select {
	case <-resumed:
		t.Fatal("afterResume ran while the worker was still silent")
	default:
	}
	h.record(&liveStatus{Status: StatusRunning})
	select {
	case <-resumed:
	case <-time.After(10 * time.Second):
		t.Fatal("afterResume did not run once the worker answered")
	}
	if _, _, silent := h.snapshot(); silent != 0 {
		t.Errorf("a worker that answered again is silent for %s, want 0", silent)
	}
	select {
	case <-h.stallSignal():
		t.Error("the stall signal of a worker that answered again is still fired")
	default:
	}
}

// TestHealthStatusOnlyMovesForward: an answer overtaken by a newer one
// (a heartbeat decoded after a stop's result was kept) does not move the
// session back to running.
func TestHealthStatusOnlyMovesForward(t *testing.T) {
	h := &handle{name: "w"}
	h.hl.stalled = make(chan struct{})
	h.record(&liveStatus{Status: StatusRunning, Bytes: 1})
	h.recordExit(&ExitInfo{Status: StatusExited, Termination: TermSignalExit})
	h.record(&liveStatus{Status: StatusRunning, Bytes: 2})
	st, _, _ := h.snapshot()
	if st.Status != StatusExited || st.Exit.Termination != TermSignalExit || st.Bytes != 2 {
		t.Errorf("after exit then a late running answer: %s (%s), bytes %d; want exited (signal_exit), bytes 2", st.Status, st.Exit.Termination, st.Bytes)
	}
	h.record(&liveStatus{Status: StatusExiting})
	if st, _, _ := h.snapshot(); st.Status != StatusExited {
		t.Errorf("exited then exiting: %s, want exited", st.Status)
	}
}

// TestAbandonFor: a long call gives up on a stopped worker at once, on a
// merely silent one only after abandonSilence, and not at all once it
// answers again.
func TestAbandonFor(t *testing.T) {
	for _, c := range []struct {
		silent  time.Duration
		stopped bool
		want    silenceVerdict
	}{
		{0, false, resumed},
		{0, true, resumed},
		{4 * time.Second, true, abandonNow},
		{4 * time.Second, false, keepWaiting},
		{abandonSilence - time.Millisecond, false, keepWaiting},
		{abandonSilence, false, abandonNow},
	} {
		if got := abandonFor(c.silent, c.stopped); got != c.want {
			t.Errorf("silent %s, stopped %v: %v, want %v", c.silent, c.stopped, got, c.want)
		}
	}
}

// TestSilentWorkerKeepsLongCalls: a worker that misses pings but is not
// stopped (a machine under heavy load) is reported unresponsive, yet the
// ask in flight on it is not abandoned: it ends when its answer comes.
func TestSilentWorkerKeepsLongCalls(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	spawn(t, m, "slow", "sh")
	ctx := testCtx(t, 60*time.Second)
	asked := make(chan error, 1)
	go func() {
		_, err := m.Ask(ctx, AskRequest{Name: "slow", Text: "read line; echo got-$line", Until: "got-go", Timeout: 30 * time.Second})
		asked <- err
	}()
	// Typed, so the ask is in flight on the worker.
	await(t, 10*time.Second, "the question typed", func() bool {
		snap, err := m.Snapshot(ctx, "slow")
		return err == nil && strings.Contains(strings.Join(snap.Lines, "\n"), "read line; echo got-$line")
	})
	m.mu.Lock()
	h := m.live["slow"]
	m.mu.Unlock()
	// Silent as a starved worker would be, for three heartbeats; each
	// answer of the heartbeat clears it, so it is marked again.
	for deadline := time.Now().Add(3 * heartbeatEvery); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		h.markSilent()
		select {
		case err := <-asked:
			t.Fatalf("the ask ended while its worker was only silent: %v", err)
		default:
		}
	}
	await(t, 10*time.Second, "the heartbeat to clear the silence", func() bool {
		_, _, silent := h.snapshot()
		return silent == 0
	})
	if err := m.Send(ctx, SendRequest{Name: "slow", Text: "go\r"}); err != nil {
		t.Fatalf("send once the worker answers again: %v", err)
	}
	select {
	case err := <-asked:
		if err != nil {
			t.Errorf("the ask on a worker that was silent for a while: %v, want its answer", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the ask never ended")
	}
}
