package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// How the Manager keeps each live session's status in memory and tells a
// worker that stopped answering (SIGSTOP, a debugger, a machine swapping
// to death) from one that works.
//
// Every attached worker is pinged (worker.status) every heartbeatEvery by
// the goroutine that watches its connection; each answer, and the answer
// to any other status call, is kept in the handle. List answers from those
// copies and never calls a worker, so it costs the same with one session
// or 256, and a hung worker cannot slow it. A ping, or any status-like
// call, that misses statusCallTimeout marks the worker unresponsive: List
// and Status report StatusUnresponsive with how long it has been silent,
// and new calls are refused with an error that says so and how to end it
// (agentctl stop --force). Calls in flight are abandoned the same way: at
// once when the worker cannot answer (stopped by a signal or a debugger,
// state T or t in /proc) or the call is status-like; a long call (an ask,
// a wait) on a worker that is merely silent, as on a machine swapping hard,
// only once the silence reaches abandonSilence, so a ten-minute ask does
// not fail for a few slow seconds. The first answer after that (the worker
// was resumed with SIGCONT) makes it running again.
const (
	// heartbeatEvery is how often an attached worker is pinged. It bounds
	// how stale List's last_activity is for a session, and with
	// statusCallTimeout how long a stopped worker takes to be reported
	// (at most heartbeatEvery + statusCallTimeout). A ping costs the
	// worker well under a millisecond, so 256 sessions cost the daemon a
	// few milliseconds of CPU a second.
	heartbeatEvery = time.Second
	// statusCallTimeout is the deadline of status-like calls to a worker
	// (status, hello, snapshot, resize, the heartbeat). A worker answers
	// them from memory in well under a millisecond; three seconds is a
	// thousand times that, room for a machine loaded enough to hold a
	// process off the CPU for a while, and still short enough that a
	// person waiting on agentctl status gets an answer rather than a hang.
	statusCallTimeout = 3 * time.Second
	// inputCallTimeout is the deadline of calls that deliver input (send,
	// record): the worker itself gives a program that does not read its
	// input inputTimeout, so the call gets that and a status call's room.
	inputCallTimeout = inputTimeout + statusCallTimeout
	// stopCallSlack is what a stop call may take beyond its grace: the
	// worker waits the grace, kills, and then needs a moment to reap and
	// record the end.
	stopCallSlack = 5 * time.Second
	// killWait bounds how long stop --force waits for a killed worker to
	// be gone; SIGKILL is not blockable, so this is only a machine's
	// scheduling delay.
	killWait = 5 * time.Second
	// abandonSilence is how long a worker that is not stopped may stay
	// silent before the long calls in flight on it are abandoned: ten
	// missed pings, beyond what load alone does to a live process.
	abandonSilence = 30 * time.Second
)

// health is what a handle knows of its worker's state, kept current by the
// heartbeat and every status call. Its own mutex, so a list does not
// contend with anything but a status update of the same session.
type health struct {
	mu    sync.Mutex
	st    liveStatus // the last status the worker answered
	have  bool       // st holds an answer
	heard time.Time  // when the worker last answered any status call
	// silent is set while the worker is unresponsive; stalled is closed
	// when it becomes so (and replaced when it answers again), so calls in
	// flight can give up at once.
	silent   bool
	stalled  chan struct{}
	onResume []func() // run once the worker answers again
}

// record keeps a status the worker answered; a worker that was
// unresponsive is responsive again. A session's status only moves forward
// in life order, so an answer overtaken by a newer one (a heartbeat's,
// decoded after a stop's result was kept) does not move it back.
func (h *handle) record(st *liveStatus) {
	h.hl.mu.Lock()
	prev, had := h.hl.st, h.hl.have
	h.hl.st, h.hl.have, h.hl.heard = *st, true, time.Now()
	if had && lifeRank(st.Status) < lifeRank(prev.Status) {
		h.hl.st.Status, h.hl.st.Exit = prev.Status, prev.Exit
	}
	var resume []func()
	if h.hl.silent {
		h.hl.silent = false
		h.hl.stalled = make(chan struct{})
		resume, h.hl.onResume = h.hl.onResume, nil
	}
	h.hl.mu.Unlock()
	for _, f := range resume {
		go f()
	}
}

// lifeRank orders the statuses a worker reports by the order a session
// goes through them.
func lifeRank(s Status) int {
	switch s {
	case StatusRunning:
		return 1
	case StatusExiting:
		return 2
	case StatusExited, StatusFailed:
		return 3
	}
	return 0
}

// recordExit keeps the end a stop call reported, so List shows it before
// the worker's connection has ended.
func (h *handle) recordExit(x *ExitInfo) {
	h.hl.mu.Lock()
	defer h.hl.mu.Unlock()
	h.hl.st.Status, h.hl.st.Exit = x.Status, *x
	h.hl.have = true
}

// markSilent records that the worker missed a status call's deadline.
func (h *handle) markSilent() {
	h.hl.mu.Lock()
	defer h.hl.mu.Unlock()
	if !h.hl.silent {
		h.hl.silent = true
		close(h.hl.stalled)
	}
}

// snapshot returns the last status answered, whether there is one, and how
// long the worker has been silent (zero while it answers).
func (h *handle) snapshot() (st liveStatus, have bool, silent time.Duration) {
	h.hl.mu.Lock()
	defer h.hl.mu.Unlock()
	if h.hl.silent {
		silent = max(time.Since(h.hl.heard), time.Millisecond)
	}
	return h.hl.st, h.hl.have, silent
}

// stallSignal returns a channel closed once the worker is unresponsive
// (already closed if it is now).
func (h *handle) stallSignal() <-chan struct{} {
	h.hl.mu.Lock()
	defer h.hl.mu.Unlock()
	return h.hl.stalled
}

// afterResume runs f once the worker answers again (at once, on its own
// goroutine, if it answers now).
func (h *handle) afterResume(f func()) {
	h.hl.mu.Lock()
	if h.hl.silent {
		h.hl.onResume = append(h.hl.onResume, f)
		h.hl.mu.Unlock()
		return
	}
	h.hl.mu.Unlock()
	go f()
}

// heartbeat pings h's worker every heartbeatEvery until its connection
// ends (true) or the Manager closes (false).
func (m *Manager) heartbeat(h *handle) bool {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-h.client.Done():
			return true
		case <-m.closing:
			return false
		case <-t.C:
			m.statusOf(m.life, h)
		}
	}
}

// statusOf asks h's worker for its status within statusCallTimeout and
// keeps the answer. A worker that misses the deadline is marked
// unresponsive and the error says so (ErrInvalidStatus); so does a worker
// already known to be unresponsive, at once, without a call.
func (m *Manager) statusOf(ctx context.Context, h *handle) (*liveStatus, error) {
	cctx, cancel := context.WithTimeout(ctx, statusCallTimeout)
	defer cancel()
	var st liveStatus
	err := h.client.Call(cctx, mStatus, nil, &st)
	if err == nil {
		h.record(&st)
		return &st, nil
	}
	if ctx.Err() == nil && cctx.Err() != nil {
		h.markSilent()
		return nil, m.unresponsiveError(h, "status")
	}
	return nil, err
}

// Causes of a worker call cut short: the worker became unresponsive while
// it ran, or the call ran past its own deadline.
var (
	errWorkerSilent = errors.New("worker unresponsive")
	errCallDeadline = errors.New("worker call deadline")
)

// callWorker runs one call on h's worker, bounded by timeout (0: only ctx)
// and by the worker's health: a worker already unresponsive fails the call
// at once, and one that becomes so while the call runs (the heartbeat
// says) ends it; both return the unresponsive error (ErrInvalidStatus). A
// status-like call (statusCallTimeout) that misses its deadline marks the
// worker unresponsive too; a longer one that does (input to a program that
// does not read it, a stop whose program will not die) returns a
// *callDeadlineError (ErrBusy), as the worker may only be slow.
func (m *Manager) callWorker(ctx context.Context, h *handle, op, method string, params, result any, timeout time.Duration) error {
	stalled := h.stallSignal()
	select {
	case <-stalled:
		return m.unresponsiveError(h, op)
	default:
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if timeout > 0 {
		var c2 context.CancelFunc
		cctx, c2 = context.WithTimeoutCause(cctx, timeout, errCallDeadline)
		defer c2()
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		longCall := timeout == 0 || timeout > statusCallTimeout
		for {
			select {
			case <-stalled:
			case <-stop:
				return
			}
			if !longCall || m.waitOutSilence(h, stop) {
				cancel(errWorkerSilent)
				return
			}
			stalled = h.stallSignal() // it answered again: a fresh signal
		}
	}()
	err := h.client.Call(cctx, method, params, result)
	if err == nil || ctx.Err() != nil {
		return err
	}
	switch context.Cause(cctx) {
	case errWorkerSilent:
		return m.unresponsiveError(h, op)
	case errCallDeadline:
		if timeout <= statusCallTimeout {
			h.markSilent()
			return m.unresponsiveError(h, op)
		}
		return &callDeadlineError{name: h.name, op: op, timeout: timeout}
	}
	return err
}

// waitOutSilence decides, once h's worker is unresponsive, whether a long
// call in flight on it is abandoned (true): at once if the worker cannot
// answer (stopped), else when its silence reaches abandonSilence; false
// when it answers again first, or stop closes (the call ended).
func (m *Manager) waitOutSilence(h *handle, stop <-chan struct{}) bool {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		_, _, silent := h.snapshot()
		switch abandonFor(silent, workerStopped(h.workerPID)) {
		case abandonNow:
			return true
		case resumed:
			return false
		}
		select {
		case <-t.C:
		case <-stop:
			return false
		}
	}
}

// silenceVerdict is what a long call does about a silent worker.
type silenceVerdict int

const (
	keepWaiting silenceVerdict = iota
	abandonNow
	resumed
)

// abandonFor judges a worker silent for silent (zero: it answers again),
// stopped or not.
func abandonFor(silent time.Duration, stopped bool) silenceVerdict {
	switch {
	case silent == 0:
		return resumed
	case stopped || silent >= abandonSilence:
		return abandonNow
	}
	return keepWaiting
}

// workerStopped says whether pid is stopped by a signal or a debugger
// (state T or t), so it cannot answer until someone resumes it.
func workerStopped(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && (st.state == 'T' || st.state == 't')
}

// callDeadlineError is a worker call that ran past its deadline while the
// worker still answered its heartbeat. It wraps ErrBusy: trying again may
// help.
type callDeadlineError struct {
	name, op string
	timeout  time.Duration
}

func (e *callDeadlineError) Error() string {
	return fmt.Sprintf("session %q: its worker did not finish %s within %s; try again, or agentctl stop --force %s if it stays stuck", e.name, e.op, e.timeout, e.name)
}

// Unwrap returns ErrBusy.
func (e *callDeadlineError) Unwrap() error { return ErrBusy }

// unresponsiveError is the error for op on a session whose worker does not
// answer: it names the session, says how long the worker has been silent
// and how to end it, and, when the worker is stopped by a signal, how to
// resume it.
func (m *Manager) unresponsiveError(h *handle, op string) error {
	_, _, silent := h.snapshot()
	return &unresponsiveError{msg: fmt.Sprintf("session %q is unresponsive: %s, so %s was abandoned; agentctl stop --force %s ends it%s",
		h.name, silentReason(h.workerPID, silent), op, h.name, resumeHint(h.workerPID))}
}

// unresponsiveError is a call refused or abandoned because the session's
// worker does not answer. It wraps ErrInvalidStatus: unresponsive is a
// status, and it allows nothing but stop --force.
type unresponsiveError struct {
	msg string
	// Set when the worker was never attached: what stop --force needs to
	// end it, and why it is judged unresponsive.
	why                   string
	workerPID, programPID int
	workerStart           uint64
}

func (e *unresponsiveError) Error() string { return e.msg }

// Unwrap returns ErrInvalidStatus.
func (e *unresponsiveError) Unwrap() error { return ErrInvalidStatus }

// isUnresponsive reports whether err is an unresponsiveError.
func isUnresponsive(err error) bool {
	var ue *unresponsiveError
	return errors.As(err, &ue)
}

// silentReason says, for people, that a worker has not answered and for
// how long.
func silentReason(pid int, silent time.Duration) string {
	return fmt.Sprintf("its worker (pid %d) has not answered for %s", pid, silent.Round(100*time.Millisecond))
}

// resumeHint tells how to resume a worker stopped by a signal (state T in
// /proc), which is the usual reason for one to stop answering.
func resumeHint(pid int) string {
	if workerStopped(pid) {
		return fmt.Sprintf(", or if it was stopped on purpose, kill -CONT %d resumes it", pid)
	}
	return ""
}

// forceKill ends a session whose worker does not answer: SIGKILL to the
// worker, its program's process group and session and everything below
// the worker, then records the session failed (host_death) with detail as
// the reason, as when a worker dies by itself.
func (m *Manager) forceKill(ctx context.Context, name string, workerPID int, workerStart uint64, programPID int, detail string) (*ExitInfo, error) {
	// The session's lock is held from the kill to the record, so the
	// worker's watcher, seeing it die, does not record it first as a
	// worker that died by itself. It is that session's lock only: the
	// wait for the kill delays nothing else.
	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The members are found before the worker dies: afterwards its
	// children belong to another parent.
	members := sessionMembers(programPID, workerPID, 0)
	if processAlive(workerPID, workerStart) {
		syscall.Kill(workerPID, syscall.SIGKILL)
	}
	signalAll(programPID, members, syscall.SIGKILL)
	if _, err := waitGone(ctx, workerPID, workerStart, killWait); err != nil {
		return nil, err
	}
	man, err := readManifest(m.dir(name))
	killed := err == nil && !man.Status.Terminal()
	if killed {
		m.markDead(name, man, detail)
	}
	if err != nil {
		return nil, err
	}
	info := exitFromManifest(man)
	// The worker may have recorded the end itself just before the kill.
	info.AlreadyEnded = !killed
	return info, nil
}
