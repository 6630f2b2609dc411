package session

import (
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
