package session

import (
	"context"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/ttyready"
	"github.com/agentd/agentd/pkg/termmodel"
)

// Whether the program waits for a person is a fact the worker can read
// from the kernel (internal/ttyready): the terminal's foreground program is
// blocked reading it, with nothing typed left unread and nothing it wrote
// left unread by the worker. An ask built on that fact types only into a
// program that waits, presses Enter only once the program has taken the
// text and waits again, and ends the moment the program waits after the
// question, whatever its prompt looks like and however long it pauses.
// Where the kernel cannot tell (another user's program, a pid namespace
// outside ours), the ask falls back to the look of the prompt and silence,
// and its result says which signal it used.

// The signals an ask can be built on (AskResult.ReadySignal).
const (
	// SignalRead: the kernel said the program was blocked reading its
	// terminal.
	SignalRead = "read"
	// SignalPrompt: the look of the prompt and silence (the fallback).
	SignalPrompt = "prompt"
)

// AskSignalEnv, set to SignalPrompt in a worker's environment (agentd's,
// which workers inherit), makes its asks go by the look of the prompt even
// where the kernel could tell: a way out should the kernel's word ever
// mislead on some program, and the old behaviour to measure against.
const AskSignalEnv = "AGENTD_ASK_SIGNAL"

// Input states of a session (Info.Input, StatusInfo.Input).
const (
	// InputReady: the program is blocked reading its terminal, with
	// nothing typed left unread.
	InputReady = "ready"
	// InputBusy: it is doing something else (running, sleeping, reading
	// another file, stopped).
	InputBusy = "busy"
)

// readyPollMin and readyPollMax bound the wait between looks while an ask
// waits for the program to read again: a look costs ~15 µs, and the ask
// should end within milliseconds of the program's last byte. The wait
// grows while nothing happens and starts again at the least on output.
const (
	readyPollMin = time.Millisecond
	readyPollMax = 10 * time.Millisecond
)

// peekMax is the longest timed wait on the terminal taken for a peek
// rather than a wait (see waitsForPersonLocked).
const peekMax = 20 * time.Millisecond

// takenMax bounds the wait for a program to take the text typed before
// Enter is pressed: a program that reads nothing at all (busy, or gone to
// another file) gets Enter after it, as before.
const takenMax = 2 * time.Second

// readMaster reads the program's output. Through the probe, which counts
// what it reads under the lock its looks take (State.MasterRead), so a look
// knows whether everything the program wrote before it blocked has been
// read.
func (w *worker) readMaster(b []byte) (int, error) {
	if w.probe != nil {
		return w.probe.Read(b)
	}
	return w.master.Read(b)
}

// lookLocked is one look at the program (w.mu held): the kernel's state,
// not Ready while output the pump has read is not yet recorded (so the
// screen has everything the program wrote before it blocked) or while the
// program waits for the reply to a terminal query. Without a probe it is
// not Known.
func (w *worker) lookLocked() ttyready.State {
	if w.probe == nil {
		return ttyready.State{Reason: "no probe of the terminal"}
	}
	// The reply count is read before the look: a reply written during the
	// look (the reply pump does not take w.mu) can wake the program after
	// its input queue was counted and before it has run, which the look
	// cannot tell from a wait; read before, such a reply still holds.
	replied := w.repliedUpTo.Load()
	st := w.probe.Look()
	switch {
	case !st.Ready:
	case st.MasterRead != w.bytes:
		// Bytes the pump read before the look are not recorded yet.
		st.Ready, st.Reason = false, "output not yet recorded"
	case w.queries.Load() > replied && time.Since(w.queryAt) < queryReplyMax:
		st.Ready, st.Reason = false, "waiting for the terminal's reply to its query"
	case st.Reader == w.inputWaiter && w.bytes == w.inputBytes && time.Since(w.inputAt) < inputTakenMax:
		// The same wait as when input was last typed, the program not
		// having run since and nothing echoed: a key the kernel turns
		// into a signal (ctrl+c) may not have reached it yet. (An echo
		// means the line discipline has taken the input.)
		st.Ready, st.Reason = false, "input just typed, not taken yet"
	}
	return st
}

// inputTakenMax is how long a program still in the wait it was in when
// input was typed counts as not having taken it: a line being edited in
// the kernel leaves the program in that wait for good.
const inputTakenMax = 5 * time.Millisecond

// queryReplyMax bounds how long a program that sent the terminal a query
// counts as waiting for the reply rather than for a person: the worker
// answers within a millisecond, and some queries get no answer at all.
const queryReplyMax = 50 * time.Millisecond

// readiness confirms that the program waits. One Ready look from lookLocked
// is exact (the pump reads through the probe, and everything it read is
// recorded), so it confirms at once; the kind of wait may still ask the
// screen to agree (see atReadyPoint).
type readiness struct {
	bytes uint64 // output at the last look: new output starts the polling again at its quickest
}

// observe takes one look; it returns whether the program is confirmed to
// wait, and otherwise how soon to look again (poll grows while nothing
// changes).
func (r *readiness) observe(st ttyready.State, bytes uint64, poll *time.Duration) (bool, time.Duration) {
	if bytes != r.bytes {
		r.bytes, *poll = bytes, readyPollMin
	}
	if !st.Ready {
		d := *poll
		*poll = min(2**poll, readyPollMax)
		return false, d
	}
	*poll = readyPollMin
	return true, 0
}

// waitsForPersonLocked reports whether a Ready look can be taken at its word
// (w.mu held): a program blocked reading its terminal with no timeout
// waits for input and nothing else; one whose wait has a timeout may be
// waiting for its timer (node awaiting a setTimeout), and counts only when
// its screen shows a prompt at the cursor; and a wait of a few
// milliseconds is a peek between reads (Ruby's line editor polls for 1 ms
// with the terminal still in cooked mode), never a wait for a person.
func (w *worker) waitsForPersonLocked(st ttyready.State) bool {
	if !st.Timed {
		return true
	}
	if st.Timeout < peekMax {
		return false
	}
	before, _ := w.screenLocked().BeforeCursor()
	return termmodel.PromptLike(before) || w.prompt.Matches(before)
}

// readyPointLocked is the screen at a ready point: its last rows down to
// the cursor's row, that one cut at the cursor with its spaces kept.
func (w *worker) readyPointLocked() []string {
	scr := w.screenLocked()
	cur := scr.CursorRow()
	rows, _ := scr.Rows(max(cur-termmodel.MaxPromptRows-1, scr.Top()-termmodel.MaxPromptRows), cur)
	before, _ := scr.BeforeCursor()
	return append(rows, before)
}

// signalKnown reports whether the kernel can tell this session's
// readiness now (one look).
func (w *worker) signalKnown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lookLocked().Known
}

// awaitReadyRead waits until the program is confirmed to wait for input,
// or fails after lockTimeout saying what it does instead. At a ready point
// of a program not seen before (another reader: the first, or one a shell
// started), its prompt is learned from scratch.
func (w *worker) awaitReadyRead(ctx context.Context, lockTimeout time.Duration) error {
	begin := time.Now()
	var r readiness
	poll := readyPollMin
	var fail error
	err := w.watch(ctx, func() look {
		if err := w.requireRunningLocked("ask"); err != nil {
			fail = err
			return look{done: true}
		}
		st := w.lookLocked()
		ok, wait := r.observe(st, w.bytes, &poll)
		if ok && !w.waitsForPersonLocked(st) {
			ok, wait = false, readyPollMax
		}
		if ok {
			if st.Reader.PID != w.pmReader || w.pm == nil {
				w.pm = termmodel.NewPromptModel(w.readyPointLocked(), !w.inputSeen)
				w.pmReader = st.Reader.PID
			}
			w.prompt = w.pm.Last()
			w.typed = true
			return look{done: true}
		}
		left := lockTimeout - time.Since(begin)
		if left <= 0 {
			what := st.Reason
			if what == "" {
				what = "not reading its terminal"
			}
			fail = errorf(ErrLockTimeout, "session %q is busy: its program is %s, not waiting for input, and was so for all of %s; wait for it (agentctl wait %s --ready) or interrupt it (agentctl send %s --keys ctrl+c)",
				w.spec.Name, what, lockTimeout, w.spec.Name, w.spec.Name)
			return look{done: true}
		}
		return look{wake: min(wait, left)}
	})
	if err != nil {
		return err
	}
	return fail
}

// takenLocked reports whether the program has taken what was typed
// since mark (w.mu held): it waits again (confirmed), and it ran since the
// look before the typing (another wait) or its terminal edits lines in the
// kernel, which took the text as it arrived.
func (a *asking) takenLocked(st ttyready.State, ok bool) bool {
	return ok && (st.Reader != a.typedWaiter || st.Canonical)
}

// waitTaken waits until the program has taken the text just typed (echo,
// or "" for Enter) and waits for more, or takenMax passes. A wait with a
// timeout counts only once the screen shows the echo at the cursor (or, after
// Enter, a prompt): a line editor polls for a moment between reads.
func (a *asking) waitTaken(ctx context.Context, echo string) {
	w := a.w
	var r readiness
	poll := readyPollMin
	deadline := time.Now().Add(takenMax)
	w.watch(ctx, func() look {
		if w.status != StatusRunning {
			return look{done: true}
		}
		st := w.lookLocked()
		ok, wait := r.observe(st, w.bytes, &poll)
		ok = ok && (w.waitsForPersonLocked(st) || st.Timeout >= peekMax && echoShownLocked(w, echo))
		if a.takenLocked(st, ok) {
			return look{done: true}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return look{done: true}
		}
		return look{wake: min(wait, left)}
	})
}

// echoShownLocked reports whether the cursor's row ends with the last line
// of echo, as the program's echo of it would.
func echoShownLocked(w *worker, echo string) bool {
	if i := strings.LastIndexByte(echo, '\n'); i >= 0 {
		echo = echo[i+1:]
	}
	echo = strings.TrimRight(echo, " ")
	if echo == "" {
		return false
	}
	before, _ := w.screenLocked().BeforeCursor()
	return strings.HasSuffix(strings.TrimRight(before, " "), echo)
}

// typeRead writes text to the program as typed input, noting the wait the
// program was in just before, so waitTaken can tell it took the text.
func (a *asking) typeRead(ctx context.Context, text string) error {
	w := a.w
	w.mu.Lock()
	a.typedWaiter = w.lookLocked().Reader
	w.mu.Unlock()
	return w.writeInput(ctx, []byte(text), true)
}

// deliverRead types the question (line by line unless pasted) into a
// program known to wait: each line is typed, Enter is pressed once the
// program has taken it and waits again, and the next line goes only when
// the program waits once more. It notes the row the last echo ends on.
func (a *asking) deliverRead(ctx context.Context) error {
	w := a.w
	last := a.text
	if a.paste {
		last = "\x1b[200~" + last + "\x1b[201~"
	} else if i := strings.LastIndexByte(a.text, '\n'); i >= 0 {
		for _, l := range strings.Split(a.text[:i], "\n") {
			if err := a.typeRead(ctx, l); err != nil {
				return err
			}
			a.waitTaken(ctx, l)
			if err := a.typeRead(ctx, "\r"); err != nil {
				return err
			}
			a.waitTaken(ctx, "")
		}
		last = a.text[i+1:]
		w.mu.Lock()
		scr := w.screenLocked()
		a.startRow = scr.CursorRow()
		a.promptX = cursorX(scr)
		a.out0 = w.bytes
		w.mu.Unlock()
	}
	if err := a.typeRead(ctx, last); err != nil {
		return err
	}
	a.waitTaken(ctx, strings.TrimSuffix(strings.TrimPrefix(last, "\x1b[200~"), "\x1b[201~"))
	return a.pressEnter(ctx)
}

// pressEnter notes the row the echo ended on and the program's state, and
// presses Enter.
func (a *asking) pressEnter(ctx context.Context) error {
	w := a.w
	w.mu.Lock()
	if !a.alt {
		a.echoEnd = max(w.screenLocked().CursorRow(), a.startRow)
	}
	a.enterMark = w.bytes
	st := w.lookLocked()
	a.typedWaiter, a.enterPgrp = st.Reader, st.Pgrp
	a.enterAt = time.Now()
	w.mu.Unlock()
	return w.writeInput(ctx, []byte("\r"), true)
}

// decideRead is the ask's decision function when the kernel tells
// readiness (w.mu held): the ask ends when the program, having reacted to
// the question, waits for input again; an until pattern, an explicit idle
// and the program's exit keep their meaning.
func (a *asking) decideRead() look {
	w := a.w
	if a.re != nil || w.status == StatusExited {
		return a.decide()
	}
	st := w.lookLocked()
	ok, wait := a.ready.observe(st, w.bytes, &a.poll)
	reacted := w.bytes > a.enterMark || st.Reader != a.typedWaiter || st.Pgrp != a.enterPgrp
	if ok && reacted {
		if w.waitsForPersonLocked(st) {
			return a.atReadyPoint(st)
		}
		// A timed wait the screen does not confirm: the program may be
		// waiting for its timer. Pauses never end an ask.
		wait = readyPollMax
	}
	l := look{wake: wait}
	if a.p.Idle > 0 && w.bytes > a.enterMark {
		quiet := time.Since(w.lastOutput)
		if quiet >= a.p.Idle {
			a.finishLocked(ReasonIdle, a.sightLocked())
			return look{done: true}
		}
		l.soon(a.p.Idle - quiet)
	}
	return l
}

// atReadyPoint ends the ask at a ready point after the question (w.mu
// held): at the program's primary prompt, at the prompt of a program that
// took over the terminal, or, at a continuation prompt, with the empty
// line that closes a block when the question ended with a line break, or
// else as incomplete.
func (a *asking) atReadyPoint(st ttyready.State) look {
	w := a.w
	scr := w.screenLocked()
	cur := scr.CursorRow()
	var rows []string
	if cur > a.echoEnd {
		rows, _ = scr.Rows(a.echoEnd+1, cur)
		before, _ := scr.BeforeCursor()
		rows = append(rows, before)
	}
	if a.alt || len(rows) == 0 {
		a.finishRead(ReasonPrompt, a.changedOrRows(rows), "")
		return look{done: true}
	}
	if st.Reader.PID != w.pmReader {
		// Another program reads the terminal now (a shell started one, or
		// the program ended and its shell is back): its first ready point.
		w.pm, w.pmReader = termmodel.NewPromptModel(w.readyPointLocked(), !w.inputSeen), st.Reader.PID
		w.prompt = w.pm.Last()
		a.finishRead(ReasonPrompt, rows[:len(rows)-1], strings.TrimRight(rows[len(rows)-1], " "))
		return look{done: true}
	}
	w.pm.Learn(rows) // only from a primary prompt; the height the first time
	answer, prompt, primary := w.pm.Split(rows)
	if primary {
		w.prompt = w.pm.Last()
		a.finishRead(ReasonPrompt, answer, prompt)
		return look{done: true}
	}
	if strings.HasSuffix(a.p.Text, "\n") && !a.closedBlock {
		// The question ended with a line break and left the program at a
		// continuation prompt: the empty line a person types to close a
		// block (as pexpect's replwrap does).
		a.closedBlock = true
		return look{then: func(ctx context.Context) error {
			if err := a.typeRead(ctx, "\r"); err != nil {
				a.failed = err
				return err
			}
			w.mu.Lock()
			a.enterMark, a.ready = w.bytes, readiness{}
			w.mu.Unlock()
			return nil
		}}
	}
	w.incomplete = &incompleteInput{reader: st.Reader.PID, prompt: prompt}
	a.finishRead(ReasonIncomplete, answer, prompt)
	return look{done: true}
}

// changedOrRows is the answer of a full-screen program (the rows that
// changed) or the rows after the echo.
func (a *asking) changedOrRows(rows []string) []string {
	if a.alt {
		return termmodel.ChangedBlock(a.altBefore, a.w.screenLocked().Lines())
	}
	return rows
}

// finishRead builds the result of an ask ended at a ready point (w.mu held).
func (a *asking) finishRead(reason string, rows []string, prompt string) {
	w := a.w
	for len(rows) > 0 && strings.TrimSpace(rows[len(rows)-1]) == "" {
		rows = rows[:len(rows)-1]
	}
	answer := strings.Join(rows, "\n")
	cut := a.captureCutLocked()
	toSeq := a.recordLocked(reason, answer)
	a.res = &AskResult{Name: w.spec.Name, Answer: answer, Prompt: prompt, Truncated: cut, Screen: w.screenLocked().Lines(), Reason: reason,
		Elapsed: time.Since(a.start), FromSeq: a.fromSeq, ToSeq: toSeq, Pasted: a.paste, Resent: a.resent,
		ReadySignal: SignalRead, Continued: a.continued}
}

// captureCutLocked reports whether rows after the echo were dropped from
// the capture (the answer's start is missing).
func (a *asking) captureCutLocked() bool {
	_, cut := a.w.screenLocked().Rows(a.echoEnd+1, a.echoEnd+2)
	return cut
}

// sightLocked is the askSight of the screen now, for the rules shared with
// the fallback (an explicit idle).
func (a *asking) sightLocked() askSight {
	w := a.w
	scr := w.screenLocked()
	before, restBlank := scr.BeforeCursor()
	return askSight{ended: w.status == StatusExited, quiet: time.Since(w.lastOutput), reacted: w.bytes > a.enterMark, before: before,
		atRow: !a.alt && scr.CursorRow() > a.echoEnd && restBlank}
}

// incompleteInput is what an ask that ended incomplete left: the program
// that waits for the rest of its input, and the prompt it showed.
type incompleteInput struct {
	reader int
	prompt string
}

// continueCheckLocked decides what the incomplete input the last ask left
// means for this one (w.mu held, the program ready): still waiting in the
// same program, the question is the rest of it (continued); the program's
// primary prompt back (someone interrupted the input), an ordinary ask;
// another program reading the terminal, a refusal, so nothing is typed
// into whatever runs now.
func (w *worker) continueCheckLocked(st ttyready.State) (continued bool, err error) {
	inc := w.incomplete
	if inc == nil {
		return false, nil
	}
	w.incomplete = nil
	if st.Reader.PID != inc.reader {
		return false, errorf(ErrInvalidStatus, "the last ask of session %q left its program waiting for the rest of an input (at %q), and another program reads the terminal now (pid %d, was %d); nothing was typed: check the screen (agentctl snapshot %s) and ask again",
			w.spec.Name, inc.prompt, st.Reader.PID, inc.reader, w.spec.Name)
	}
	before, _ := w.screenLocked().BeforeCursor()
	if _, _, primary := w.pm.Split([]string{before}); primary {
		return false, nil
	}
	return true, nil
}

// unknownWhy says why the kernel cannot tell this session's readiness.
func (w *worker) unknownWhy() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lookLocked().Reason
}

// describeReadiness is the input state for status: ready or busy from one
// look, "" when the kernel cannot tell. The heartbeat asks every second for
// every session; a look is taken again only when the session's event log
// has grown (output or input) or the last look is older than
// inputRecheck, so a hundred idle sessions cost no looks at all.
func (w *worker) describeReadiness(events uint64) string {
	if w.probe == nil {
		return ""
	}
	w.inputMu.Lock()
	defer w.inputMu.Unlock()
	if w.inputKnown && w.inputEvents == events && time.Since(w.inputLooked) < inputRecheck {
		return w.inputState
	}
	st := w.probe.Look()
	state := ""
	switch {
	case !st.Known:
	case st.Ready:
		state = InputReady
	default:
		state = InputBusy
	}
	w.inputState, w.inputEvents, w.inputLooked, w.inputKnown = state, events, time.Now(), true
	return state
}

// inputRecheck is how long an input state stays good while the session
// records nothing: a program that starts reading without printing a thing
// is seen within it.
const inputRecheck = 5 * time.Second
