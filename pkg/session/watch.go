package session

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// The worker's one watcher loop (watch), which ask (ask.go) and wait
// (below) drive with their decision functions, and wait itself.

// look is a decision function's answer to the watcher.
type look struct {
	// done ends the watch: the decision is made (the decision function
	// keeps what it decided).
	done bool
	// wake asks for another look after this long even if nothing changes;
	// negative waits for a change.
	wake time.Duration
	// deaf ignores changes until wake, while output flows faster than it is
	// worth looking at (a match's pacing gap, an ask's settle time). The
	// session's end still wakes it.
	deaf bool
	// then, when set, runs without w.mu and the next look follows at once;
	// its error ends the watch.
	then func(ctx context.Context) error
}

// soon asks for a look after d at the latest.
func (l *look) soon(d time.Duration) {
	if d < 0 {
		d = 0
	}
	if l.wake < 0 || d < l.wake {
		l.wake = d
	}
}

// watch is the one loop behind ask and wait. It calls decide with w.mu held
// at once, on every change to the session (output, status), when a wake
// decide asked for passes, and after a then; the two callers differ only in
// their decision functions. It returns nil when decide is done, then's
// error, or the cause of ctx's end.
func (w *worker) watch(ctx context.Context, decide func() look) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.mu.Lock()
		l := decide()
		ch := w.changed
		w.mu.Unlock()
		if l.done {
			return nil
		}
		if l.then != nil {
			if err := l.then(ctx); err != nil {
				return err
			}
			continue
		}
		var done <-chan struct{}
		if l.deaf {
			ch, done = nil, w.done
		}
		var tc <-chan time.Time
		if l.wake >= 0 {
			timer.Reset(l.wake)
			tc = timer.C
		}
		select {
		case <-ch:
		case <-done:
		case <-tc:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// waitUntil waits up to d for cond (called with w.mu held) to hold,
// looking again every poll (cond may depend on time) and on every change.
func (w *worker) waitUntil(ctx context.Context, d, poll time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	p := time.NewTicker(poll)
	defer p.Stop()
	for {
		w.mu.Lock()
		ok, ch := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-p.C:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// wait returns when the first of p's conditions holds; see Manager.Wait.
func (w *worker) wait(ctx context.Context, p waitParams) (*WaitResult, error) {
	re, err := compileUntil(p.Until)
	if err != nil {
		return nil, err
	}
	if re == nil && p.Idle <= 0 && !p.Exit && !p.Ready && len(p.States) == 0 {
		return nil, errorf(ErrInvalid, "wait needs a condition; give until, idle, exit, ready or states")
	}
	if p.Ready && !w.signalKnown() {
		return nil, errorf(ErrInvalid, "wait --ready on session %q: the kernel cannot tell whether its program reads its terminal (%s); wait with --until or --idle instead", w.spec.Name, w.unknownWhy())
	}
	timeout := p.Timeout // Manager.Wait fills it in (Timeouts)
	if timeout <= 0 {
		timeout = DefaultWaitTimeout // a Manager from before Timeouts: see askLimits
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wt := &waiting{w: w, p: p, re: re, start: time.Now()}
	w.mu.Lock()
	if w.status == StatusExited && !p.Exit {
		w.mu.Unlock()
		return nil, statusError(w.spec.Name, w.status, w.exit.Termination, "wait")
	}
	fromSeq := w.elog.Seq()
	wt.bytes0 = w.bytes
	if re != nil {
		scr := w.screenLocked()
		scr.StartCapture()
		wt.fromRow = scr.Top() // the screen's first row
		defer func() {
			w.mu.Lock()
			w.scr.StopCapture()
			w.mu.Unlock()
		}()
	}
	w.mu.Unlock()
	if err := w.watch(ctx, wt.decide); err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		w.mu.Lock()
		partial := ""
		if re != nil {
			partial = w.rowsFromLocked(wt.fromRow)
		}
		w.mu.Unlock()
		te := w.timeoutError("wait", timeout, partial, fromSeq)
		te.Hint = untilHint(re, partial)
		return nil, te
	}
	if wt.res == nil {
		return nil, statusError(w.spec.Name, StatusExited, w.exitInfo().Termination, "wait for output")
	}
	return wt.res, nil
}

// waiting is one wait between looks.
type waiting struct {
	w        *worker
	p        waitParams
	re       *regexp.Regexp
	start    time.Time
	bytes0   uint64 // output before the wait
	fromRow  int    // the screen's first row when the wait began
	lastEval time.Time
	res      *WaitResult // set when a condition held; nil when the session ended first
	// With Ready: the wait between looks, and the output it was set at.
	poll      time.Duration
	pollBytes uint64
}

// decide is the wait's decision function for the watcher (w.mu held): the
// first of until (over the rows since the wait began), exit and idle.
func (wt *waiting) decide() look {
	w := wt.w
	quiet := time.Since(maxTime(w.lastOutput, wt.start))
	ended := w.status == StatusExited
	reason := ""
	var gap time.Duration
	if wt.re != nil {
		// Matching re-reads the new rows: under a flood, do it at a pace
		// that keeps the cost linear.
		gap = evalGap(w.bytes - wt.bytes0)
		if time.Since(wt.lastEval) >= gap || ended {
			wt.lastEval = time.Now()
			if wt.re.MatchString(w.rowsFromLocked(wt.fromRow)) {
				reason = ReasonMatched
			}
		}
	}
	switch {
	case reason != "":
	case wt.p.Exit && ended:
		reason = ReasonExited
	case wt.p.Idle > 0 && quiet >= wt.p.Idle:
		reason = ReasonIdle
	case wt.p.Ready && !ended:
		st := w.lookLocked()
		if st.Ready && w.waitsForPersonLocked(st) {
			reason = ReasonReady
		}
	}
	if reason == "" && len(wt.p.States) > 0 && !ended && w.inStatesLocked(wt.p.States) {
		reason = ReasonState
	}
	if reason != "" {
		wt.res = &WaitResult{Name: w.spec.Name, Reason: reason, Screen: w.screenLocked().Lines(), Elapsed: time.Since(wt.start), Seq: w.elog.Seq()}
		return look{done: true}
	}
	if ended {
		return look{done: true} // without a result: the session ended first
	}
	l := look{wake: -1}
	if wt.p.Idle > 0 {
		l.soon(wt.p.Idle - quiet)
	}
	if wt.p.Ready || len(wt.p.States) > 0 {
		// Readiness changes with no output (the program blocks reading):
		// look again soon, less often while nothing happens.
		if wt.poll == 0 || w.bytes != wt.pollBytes {
			wt.poll, wt.pollBytes = readyPollMin, w.bytes
		}
		l.soon(wt.poll)
		wt.poll = min(2*wt.poll, readyPollMax)
	}
	if g := gap - time.Since(wt.lastEval); wt.re != nil && g > 0 {
		// Changes within the gap are looked at when it ends.
		l.soon(g)
		l.deaf = true
	}
	return l
}

// rowsFromLocked is the rendered text from absolute row from to the last
// row with text, the cursor's row up to the cursor with its spaces kept.
func (w *worker) rowsFromLocked(from int) string {
	scr := w.screenLocked()
	_, h := scr.Size()
	rows, _ := scr.Rows(from, scr.Top()+h)
	cur := scr.CursorRow() - from
	if cur >= 0 && cur < len(rows) {
		if before, restBlank := scr.BeforeCursor(); restBlank {
			rows[cur] = before
		}
	}
	last := len(rows)
	for last > 0 && rows[last-1] == "" && last-1 > cur {
		last--
	}
	return strings.Join(rows[:last], "\n")
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
