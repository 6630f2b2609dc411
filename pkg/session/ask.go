package session

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/ttyready"
	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/termmodel"
	"github.com/charmbracelet/x/ansi"
)

// How an ask decides it is done (the README's "How an ask decides it is
// done" says the same for users). Where the kernel tells whether the
// program waits for input, the ask goes by that (readiness.go: deliverRead,
// decideRead, atReadyPoint); the rules below are the fallback where it
// cannot (AskResult.ReadySignal says which), and until, idle and exit apply
// to both:
//
//  1. It waits for the session's ask lock, then for the program to be ready:
//     its prompt on the cursor's row and quiet for a moment. Before the
//     first ask that is the first prompt after start-up; later, the prompt
//     the previous ask ended at. A program that is still busy (its prompt
//     has not come back) is never typed into; after the lock timeout the
//     ask fails with lock_timeout and says what the cursor's row shows.
//  2. The text of the cursor's row up to the cursor is the prompt. Its
//     shape is learned: digit runs may change (In [3]: then In [4]:), and a
//     prompt ending in the same characters counts (a shell's prompt shows
//     its directory).
//  3. It types the question (one bracketed paste when the program asked for
//     that), waits for the echo, notes the row the echo ends on, and presses
//     Enter.
//  4. The answer is the rows after the echo, read from the rendered terminal
//     (the screen keeps the rows that scroll off while an ask runs), so
//     cursor moves, erases and redraws come out as a person sees them.
//  5. It ends at the first of: the learned prompt back on the cursor's row
//     below the echo, with output quiet for promptSettle (prompt); another
//     prompt-like row at the cursor quiet for the fallback idle (prompt: the
//     program changed, e.g. a shell started python); the program's exit
//     (exited); the deadline (a timeout error with the partial answer).
//     Pauses in the output do not end it while a prompt is known. Without a
//     learned prompt, silence after a reaction ends it (idle). An explicit
//     idle adds the silence rule; an explicit until replaces prompt and
//     silence: it is matched against the answer so far only, never the
//     echo.
//  6. On the alternate screen (a full-screen program) the answer is the
//     block of rows that changed, and there is no prompt: until, idle or
//     exit end it.

// promptSettle is how long output must be quiet with the prompt back before
// the ask ends: programs print a prompt last, but some redraw it at once.
const promptSettle = 100 * time.Millisecond

// echoQuiet and echoMax bound the wait for the question's echo before Enter:
// the echo is complete once it reaches the rows the question needs and
// output is quiet for echoQuiet; a program that echoes nothing (a password
// prompt) costs echoMax.
const (
	echoQuiet = 30 * time.Millisecond
	echoMax   = 500 * time.Millisecond
)

// firstAskQuiet is how long a program that shows no prompt must be quiet
// before the first ask types when the kernel cannot tell that it waits for
// input: a start-up on a busy machine can be silent for a long moment.
const firstAskQuiet = 3 * time.Second

// errAskCanceled is the cause of an ask cancelled through mCancel.
var errAskCanceled = errors.New("the ask was cancelled by its caller")

// lockAsk takes the session's ask lock, waiting up to lockTimeout
// (negative does not wait).
func (w *worker) lockAsk(ctx context.Context, lockTimeout time.Duration) error {
	select {
	case w.askSem <- struct{}{}:
		return nil
	default:
	}
	if lockTimeout < 0 {
		return errorf(ErrLockTimeout, "session %q is answering another ask; try again when it is done", w.spec.Name)
	}
	t := time.NewTimer(lockTimeout)
	defer t.Stop()
	select {
	case w.askSem <- struct{}{}:
		return nil
	case <-t.C:
		return errorf(ErrLockTimeout, "session %q was answering another ask for all of %s; try again later or raise the lock timeout", w.spec.Name, lockTimeout)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// evalGap is how long to leave between evaluations of a long answer, so a
// flood of output is not re-read on every chunk.
func evalGap(n uint64) time.Duration {
	return time.Duration(n/(64<<10)) * time.Millisecond
}

// question returns the text to type, CRLF as LF: a final line break is
// the Enter that follows the text anyway, so it is dropped (one only: an
// empty line after a Python block is how a person ends the block).
func question(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.TrimSuffix(text, "\n")
}

// cursorX is the cursor's column.
func cursorX(scr *termmodel.Screen) int {
	x, _ := scr.Cursor()
	return x
}

// ask delivers the question and collects the answer; see the top of this
// file and Manager.Ask.
func (w *worker) ask(ctx context.Context, p askParams) (*AskResult, error) {
	start := time.Now()
	text, re, err := w.checkAsk(p)
	if err != nil {
		return nil, err
	}
	timeout, fallback, lockTimeout := askLimits(p)
	parent, cancelParent := context.WithCancelCause(ctx)
	defer cancelParent(nil)
	if p.ID != "" {
		if !w.registerAsk(p.ID, cancelParent) {
			return nil, errAskCanceled
		}
		defer w.unregisterAsk(p.ID)
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	if err := w.requireRunning("ask"); err != nil {
		return nil, err
	}
	if err := w.lockAsk(ctx, lockTimeout); err != nil {
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, w.timeoutError("ask", timeout, "", 0)
		}
		return nil, err
	}
	defer func() { <-w.askSem }()

	a := &asking{w: w, p: p, text: text, re: re, fallback: fallback, start: start, poll: readyPollMin}
	a.byRead = w.signalKnown()
	if err := a.awaitReady(ctx, lockTimeout, fallback); err != nil {
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, w.timeoutError("ask", timeout, "", 0)
		}
		if ctx.Err() != nil {
			return nil, context.Cause(parent)
		}
		return nil, err
	}
	res, partial, err := a.run(ctx)
	if err == nil {
		return res, nil
	}
	return nil, a.endTyped(parent, ctx, err, partial, timeout)
}

// checkAsk validates an ask's text and pattern: the text to type, and the
// compiled until.
func (w *worker) checkAsk(p askParams) (string, *regexp.Regexp, error) {
	if err := validateText("ask", p.Text); err != nil {
		return "", nil, err
	}
	text := question(p.Text)
	if strings.TrimSpace(text) == "" {
		return "", nil, emptyQuestion(w.spec.Name, p.Text)
	}
	re, err := compileUntil(p.Until)
	if err == nil && re == nil && w.agent != "" {
		return "", nil, agentAskRefusal(w.spec.Name, w.agent)
	}
	return text, re, err
}

// agentAskRefusal is the answer to an ask without until of an agent CLI's
// session. An agent CLI reads its terminal all the time (a look at the
// kernel says it waits even while it works), its input box comes back
// below the reply at once, and its reply is drawn among the CLI's own
// frames: an ask's end rules answered with the echoed prompt at once
// (Codex CLI), or ran to the ask's timeout (Gemini CLI), and the next
// ask was typed into a running turn. Until asks can follow the agent's
// state, the ask is refused before anything is typed, naming what works.
func agentAskRefusal(name string, agent agentstate.Agent) error {
	channel := ""
	if agent == agentstate.Claude {
		channel = ", or ask Claude Code through a channel (README: Channels)"
	}
	return errorf(ErrInvalid, "session %q runs the agent CLI %s: ask cannot tell where its reply ends on the screen, "+
		"so nothing was typed; give --until (a regular expression the reply will show), or type the prompt "+
		"(agentctl send %s, with the text), press Enter once it shows (agentctl send %s --keys enter) and wait "+
		"for the end of the turn (agentctl wait %s --state waiting,needs_approval,needs_attention)%s",
		name, agent, name, name, name, channel)
}

// askLimits are an ask's timeout, fallback idle and lock timeout, which
// Manager.Ask fills in (Timeouts). A Manager from before Timeouts (an
// agentd still running after the binary was upgraded starts workers from
// the new one) leaves zeros: those get DefaultTimeouts, its defaults then.
func askLimits(p askParams) (timeout, fallback, lockTimeout time.Duration) {
	req := p.AskRequest
	DefaultTimeouts().fillAsk(&req)
	return req.Timeout, req.FallbackIdle, req.LockTimeout
}

// endTyped records how an ask that failed after typing ended (cancelled,
// timed out, interrupted, failed) and returns its error: a timeout carries
// the partial answer.
func (a *asking) endTyped(parent, ctx context.Context, err error, partial string, timeout time.Duration) error {
	reason := ReasonInterrupted
	switch {
	case errors.Is(context.Cause(parent), errAskCanceled):
		reason, err = ReasonCanceled, errAskCanceled
	case parent.Err() == nil && ctx.Err() != nil:
		reason, err = ReasonTimeout, nil
	case parent.Err() == nil:
		reason = ReasonFailed
	}
	if a.fromSeq != 0 {
		a.record(reason, partial)
	}
	if err == nil {
		te := a.w.timeoutError("ask", timeout, partial, a.fromSeq)
		te.Hint = untilHint(a.re, partial)
		return te
	}
	return err
}

// emptyQuestion is the error for a question with nothing to type.
func emptyQuestion(name, text string) error {
	if text == "" {
		return errorf(ErrInvalid, "ask of %q has no text; give the question to deliver", name)
	}
	return errorf(ErrInvalid, "ask of %q is only line breaks or spaces; to press Enter use `agentctl send %s --keys enter`", name, name)
}

// untilHint explains an until pattern that would have matched the partial
// answer but for its anchors.
func untilHint(re *regexp.Regexp, partial string) string {
	if re == nil || re.MatchString(partial) || strings.HasPrefix(re.String(), "(?m)") || !strings.ContainsAny(re.String(), "^$") {
		return ""
	}
	if m, err := regexp.Compile("(?m)" + re.String()); err == nil && m.MatchString(partial) {
		return fmt.Sprintf("until %q would match with (?m) in front: without it ^ and $ match only at the start and end of the whole answer, not of each line", re.String())
	}
	return ""
}

// registerAsk makes the ask cancellable by id; false when it was cancelled
// before it arrived.
func (w *worker) registerAsk(id string, cancel context.CancelCauseFunc) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.canceledAsks[id]; ok {
		delete(w.canceledAsks, id)
		return false
	}
	w.runningAsks[id] = cancel
	return true
}

func (w *worker) unregisterAsk(id string) {
	w.mu.Lock()
	delete(w.runningAsks, id)
	w.mu.Unlock()
}

// cancelAsk ends the ask id as canceled. A cancel that overtakes its ask
// is remembered (a few of them) so the ask never starts.
func (w *worker) cancelAsk(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.runningAsks[id]; ok {
		c(errAskCanceled)
		return
	}
	if len(w.canceledAsks) >= 64 {
		clear(w.canceledAsks)
	}
	w.canceledAsks[id] = struct{}{}
}

// awaitReady waits until the program is ready for a question, by the
// kernel's word (awaitReadyRead) or else by the look of its prompt, and
// decides whether the question continues an input the last ask left
// incomplete.
func (a *asking) awaitReady(ctx context.Context, lockTimeout, fallback time.Duration) error {
	w := a.w
	if !a.byRead {
		return w.awaitReadyPrompt(ctx, lockTimeout, fallback)
	}
	if err := w.awaitReadyRead(ctx, lockTimeout); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	a.continued, err = w.continueCheckLocked(w.lookLocked())
	return err
}

// awaitReadyPrompt waits until the program is ready for a question by the
// look of its prompt (see the top of this file), learning it, or fails
// after lockTimeout.
func (w *worker) awaitReadyPrompt(ctx context.Context, lockTimeout, fallback time.Duration) error {
	r := &readying{w: w, begin: time.Now(), lockTimeout: lockTimeout, fallback: fallback}
	if err := w.watch(ctx, r.decide); err != nil {
		return err
	}
	return r.err
}

// readying is an ask waiting for its program to be ready, between looks.
type readying struct {
	w                     *worker
	begin                 time.Time
	lockTimeout, fallback time.Duration
	err                   error // why the ask cannot type, once decided
}

// decide is awaitReady's decision function for the watcher (w.mu held).
func (r *readying) decide() look {
	w := r.w
	if err := w.requireRunningLocked("ask"); err != nil {
		r.err = err
		return look{done: true}
	}
	scr := w.screenLocked()
	quiet := time.Since(maxTime(w.lastOutput, w.man.StartedAt))
	before, restBlank := scr.BeforeCursor()
	like := restBlank && termmodel.PromptLike(before)
	ready, wait := r.readiness(quiet, before, restBlank, like)
	// A program that never stops printing (a clock, a spinner) is never
	// quiet: after settleMax it is as ready as it will be.
	if !ready && quiet < settleQuiet && time.Since(r.begin) >= settleMax {
		ready = true
	}
	if ready {
		if like {
			w.prompt = termmodel.LearnPrompt(before)
		} else if !scr.Alt() && !(restBlank && w.prompt.Matches(before)) {
			w.prompt = nil
		}
		w.typed = true
		return look{done: true}
	}
	left := r.lockTimeout - time.Since(r.begin)
	if left <= 0 {
		r.err = errorf(ErrLockTimeout, "session %q is still busy: its prompt %q has not come back in %s (the cursor's row shows %q); wait for it (agentctl wait %s --until ...) or interrupt it (agentctl send %s --keys ctrl+c)",
			w.spec.Name, w.prompt.Text(), r.lockTimeout, strings.TrimRight(before, " "), w.spec.Name, w.spec.Name)
		return look{done: true}
	}
	if wait < 0 || wait > left {
		wait = left
	}
	if d := settleMax - time.Since(r.begin); d > 0 && d < wait {
		wait = d
	}
	return look{wake: max(wait, time.Millisecond)}
}

// readiness says whether the program is ready for a question by the look
// of the cursor's row, and otherwise how long until that may change with
// no output (negative: only output can change it).
func (r *readying) readiness(quiet time.Duration, before string, restBlank, like bool) (ready bool, wait time.Duration) {
	w := r.w
	switch {
	case w.screenLocked().Alt():
		return quiet >= settleQuiet, settleQuiet - quiet
	case restBlank && w.prompt.Matches(before):
		return quiet >= promptSettle, promptSettle - quiet
	case like && (w.prompt == nil || !w.typed):
		return quiet >= settleQuiet, settleQuiet - quiet
	case like:
		// A prompt other than the one learned: the program changed (a
		// shell started another program). Give it longer.
		return quiet >= r.fallback, r.fallback - quiet
	case !w.typed:
		// Nothing prompt-like yet: a program still starting, or one that
		// prints no prompt (cat). The kernel tells whether it is reading
		// its terminal. (Asleep and using no CPU says nothing: a starting
		// program sleeps on its file reads.)
		ready = quiet >= settleQuiet && w.foregroundReading() || quiet >= firstAskQuiet
		return ready, min(max(settleQuiet-quiet, 10*time.Millisecond), firstAskQuiet-quiet)
	case w.prompt == nil:
		// No prompt known: ready when nothing came since the last ask
		// ended, or after a short quiet.
		return w.bytes == w.bytesAtAskEnd || quiet >= settleQuiet, settleQuiet - quiet
	}
	return false, -1 // busy: the learned prompt has not come back
}

// foregroundReading reports whether the kernel says the terminal's
// foreground program is blocked reading it (readiness.go).
func (w *worker) foregroundReading() bool {
	st := w.lookLocked()
	return st.Known && st.Reading
}

// asking is one ask after the program was found ready.
type asking struct {
	w        *worker
	p        askParams
	text     string
	re       *regexp.Regexp
	fallback time.Duration
	start    time.Time

	// Set under w.mu when the question is typed.
	capturing bool
	startRow  int      // the prompt's row
	echoEnd   int      // the row the echo ended on
	alt       bool     // a full-screen program
	altBefore []string // its screen before the question
	prompt    *termmodel.Prompt
	fromSeq   uint64

	// Where the question is typed, noted by begin and deliver.
	cols, promptX   int
	paste           bool
	out0            uint64 // output before the last line was typed
	echoRows, echoX int    // the rows its echo needs, the column it ends at
	echoExact       bool   // whether echoX is known
	enterMark       uint64 // output before Enter
	enterAt         time.Time

	// With the kernel's word on readiness (readiness.go).
	byRead      bool
	typedWaiter ttyready.Waiter // the program's wait before the last typing
	enterPgrp   int             // the foreground group when Enter was pressed
	ready       readiness
	poll        time.Duration
	closedBlock bool // the empty line closing a block was typed
	continued   bool // the question is the rest of an incomplete input

	// Between looks (decide).
	resent   bool
	lastEval time.Time
	res      *AskResult // the answer, once decided
	failed   error      // a second Enter that could not be written
}

// run types the question and collects the answer. On an error after the
// question was typed, partial is the answer so far.
func (a *asking) run(ctx context.Context) (res *AskResult, partial string, err error) {
	w := a.w
	if err := a.begin(); err != nil {
		return nil, "", err
	}
	defer func() {
		w.mu.Lock()
		w.scr.StopCapture()
		w.mu.Unlock()
	}()
	deliver, decide := a.deliver, a.decide
	if a.byRead {
		deliver, decide = a.deliverRead, a.decideRead
	}
	if err := deliver(ctx); err != nil {
		return nil, "", err
	}
	if !a.byRead {
		a.enterAt = time.Now()
	}
	if err := w.watch(ctx, decide); err != nil {
		if a.failed != nil {
			return nil, "", a.failed
		}
		w.mu.Lock()
		partial, _ = a.answerSoFarLocked()
		w.mu.Unlock()
		return nil, partial, err
	}
	return a.res, "", nil
}

// begin notes where the question starts: the prompt's row and column, the
// screen of a full-screen program, the ask's event; and starts keeping the
// rows that scroll off.
func (a *asking) begin() error {
	w := a.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.requireRunningLocked("ask"); err != nil {
		return err
	}
	scr := w.screenLocked()
	scr.StartCapture()
	a.capturing = true
	a.startRow = scr.CursorRow()
	a.echoEnd = a.startRow
	a.alt = scr.Alt()
	if a.alt {
		a.altBefore = scr.Lines()
	}
	a.prompt = w.prompt
	a.cols, _ = scr.Size()
	a.promptX, _ = scr.Cursor()
	a.paste = scr.BracketedPaste()
	ev := Event{Type: EventAsk, Text: a.p.Text}
	w.appendLocked(&ev)
	a.fromSeq = ev.Seq
	a.out0 = w.bytes
	return nil
}

// deliver types the question (line by line unless pasted), waits for the
// echo of its last line, notes the row the echo ends on, and presses Enter.
func (a *asking) deliver(ctx context.Context) error {
	w := a.w
	last := a.text
	if a.paste {
		last = ansi.BracketedPasteStart + last + ansi.BracketedPasteEnd
	} else if i := strings.LastIndexByte(a.text, '\n'); i >= 0 {
		// Typed line by line, as a person would, so that the output of
		// the first lines is not taken for the echo of the last.
		for _, l := range strings.Split(a.text[:i], "\n") {
			if err := a.typeLine(ctx, l); err != nil {
				return err
			}
		}
		last = a.text[i+1:]
		w.mu.Lock()
		scr := w.screenLocked()
		a.startRow = scr.CursorRow()
		a.promptX, _ = scr.Cursor()
		a.out0 = w.bytes
		w.mu.Unlock()
	}
	if err := w.writeInput(ctx, []byte(last), true); err != nil {
		return err
	}
	// Wait for the echo before Enter: the answer starts below it, and
	// some programs take an Enter inside a paste burst as part of it.
	typed := strings.TrimSuffix(strings.TrimPrefix(last, ansi.BracketedPasteStart), ansi.BracketedPasteEnd)
	a.echoRows = termmodel.EchoRows(typed, a.promptX, a.cols)
	a.echoX, a.echoExact = termmodel.EchoEndX(typed, a.promptX, a.cols)
	w.waitUntil(ctx, echoMax, echoQuiet, a.echoedLocked)
	w.mu.Lock()
	if !a.alt {
		a.echoEnd = max(w.screenLocked().CursorRow(), a.startRow)
	}
	a.enterMark = w.bytes
	w.mu.Unlock()
	return w.writeInput(ctx, []byte("\r"), true)
}

// echoedLocked reports whether the echo of the last line typed is complete:
// the cursor just after its last character, or quiet output on the rows it
// needs.
func (a *asking) echoedLocked() bool {
	w := a.w
	if w.status == StatusExited {
		return true
	}
	if w.bytes == a.out0 || a.alt && time.Since(w.lastOutput) < echoQuiet {
		return false
	}
	scr := w.screenLocked()
	row := scr.CursorRow()
	if a.echoExact && row == a.startRow+a.echoRows-1 && cursorX(scr) == a.echoX {
		return true
	}
	return time.Since(w.lastOutput) >= echoQuiet && (a.alt || row >= a.startRow+a.echoRows-1)
}

// decide is the ask's decision function for the watcher (w.mu held): it
// ends the ask when a rule of the list at the top of this file holds, sends
// Enter once more when the program did not react to it at all, and says
// when to look again.
func (a *asking) decide() look {
	w := a.w
	ended := w.status == StatusExited
	quiet := time.Since(w.lastOutput)
	reacted := w.bytes > a.enterMark
	if a.re == nil && !ended && reacted && quiet < promptSettle {
		// Every rule but until and exit needs a quiet moment: while
		// output flows, leave the screen alone (it renders big chunks
		// fast) and look again when it could be quiet.
		return look{wake: promptSettle - quiet, deaf: true}
	}
	scr := w.screenLocked()
	before, restBlank := scr.BeforeCursor()
	s := askSight{ended: ended, quiet: quiet, reacted: reacted, before: before,
		atRow: !a.alt && scr.CursorRow() > a.echoEnd && restBlank}
	reason, l := a.reason(s)
	if reason != "" {
		a.finishLocked(reason, s)
		return look{done: true}
	}
	if g := evalGap(w.bytes - a.enterMark); a.re != nil && g > 0 && time.Since(a.lastEval) < g {
		l.deaf = true // changes within the gap are looked at when it ends
	}
	if !a.resent && !reacted {
		// No reaction at all to Enter: send it once more.
		if d := confirmWindow - time.Since(a.enterAt); d <= 0 {
			a.resent = true
			return look{then: a.resendEnter}
		} else {
			l.soon(d)
		}
	}
	return l
}

// askSight is what one look at the session shows an ask.
type askSight struct {
	ended, reacted bool
	quiet          time.Duration
	before         string // the cursor's row up to the cursor
	atRow          bool   // the cursor is below the echo with nothing after it
}

// reason applies the ask's end rules to one look: the reason it ends, or
// "" and when to look again.
func (a *asking) reason(s askSight) (string, look) {
	l := look{wake: -1}
	switch {
	case a.re != nil:
		if gap := evalGap(a.w.bytes - a.enterMark); s.ended || time.Since(a.lastEval) >= gap {
			a.lastEval = time.Now()
			if t, _ := a.answerSoFarLocked(); a.re.MatchString(t) {
				return ReasonMatched, l
			}
		} else {
			l.soon(gap - time.Since(a.lastEval))
		}
		if s.ended {
			return ReasonExited, l
		}
		return "", l
	case s.atRow && a.prompt.Matches(s.before) && s.reacted:
		if s.quiet >= promptSettle {
			return ReasonPrompt, l
		}
		l.soon(promptSettle - s.quiet)
	case s.ended:
		return ReasonExited, l
	}
	idle := a.p.Idle
	if idle <= 0 && (a.prompt == nil || a.alt) {
		idle = a.fallback
	}
	switch {
	case idle > 0 && s.reacted:
		if s.quiet >= idle {
			return ReasonIdle, l
		}
		l.soon(idle - s.quiet)
	case idle > 0:
		// The program reacted to nothing, not even Enter: after a longer
		// silence the answer is empty.
		if d := emptyAnswerIdle(idle) - time.Since(a.enterAt); d <= 0 {
			return ReasonIdle, l
		} else {
			l.soon(d)
		}
	}
	if a.prompt != nil && s.atRow && termmodel.PromptLike(s.before) && s.reacted {
		// Another prompt: the program changed.
		if s.quiet >= a.fallback {
			return ReasonPrompt, l
		}
		l.soon(a.fallback - s.quiet)
	}
	return "", l
}

// finishLocked builds the ask's result and records its answer.
func (a *asking) finishLocked(reason string, s askSight) {
	w := a.w
	scr := w.screenLocked()
	// A prompt-like row at the cursor is the prompt the ask ended at, not
	// part of the answer (for a match, only the learned prompt is).
	atPrompt := s.atRow && (a.prompt.Matches(s.before) || reason != ReasonMatched && termmodel.PromptLike(s.before))
	answer, cut := a.answerLocked(atPrompt)
	prompt := ""
	if atPrompt {
		prompt = strings.TrimRight(s.before, " ")
		w.prompt = termmodel.LearnPrompt(s.before)
	}
	toSeq := a.recordLocked(reason, answer)
	a.res = &AskResult{Name: w.spec.Name, Answer: answer, Prompt: prompt, Truncated: cut, Screen: scr.Lines(), Reason: reason,
		Elapsed: time.Since(a.start), FromSeq: a.fromSeq, ToSeq: toSeq, Pasted: a.paste, Resent: a.resent,
		ReadySignal: SignalPrompt}
	if a.byRead {
		a.res.ReadySignal, a.res.Continued = SignalRead, a.continued
	}
}

// resendEnter presses Enter a second time; its error ends the ask.
func (a *asking) resendEnter(ctx context.Context) error {
	if err := a.w.writeInput(ctx, []byte("\r"), true); err != nil {
		a.failed = err
		return err
	}
	return nil
}

// typeLine types one line of a question that goes line by line, with
// Enter, and waits until the program is ready for the next: a prompt-like
// row at the cursor (a continuation prompt counts) and a quiet moment, or,
// for a program that shows none, a longer quiet.
func (a *asking) typeLine(ctx context.Context, line string) error {
	w := a.w
	w.mu.Lock()
	out0 := w.bytes
	w.mu.Unlock()
	if err := w.writeInput(ctx, []byte(line+"\r"), true); err != nil {
		return err
	}
	w.waitUntil(ctx, a.fallback, echoQuiet, func() bool {
		if w.status == StatusExited {
			return true
		}
		if w.bytes == out0 {
			return false
		}
		quiet := time.Since(w.lastOutput)
		before, restBlank := w.screenLocked().BeforeCursor()
		return quiet >= echoQuiet && restBlank && termmodel.PromptLike(before) || quiet >= a.fallback/2
	})
	return nil
}

// emptyAnswerIdle is how long a program that did not react to a question
// at all must stay quiet before the ask ends with an empty answer: longer
// than idle, since a program may think before it answers.
func emptyAnswerIdle(idle time.Duration) time.Duration { return 3 * idle }

// record writes the ask's answer record and counts the ask.
func (a *asking) record(reason, answer string) uint64 {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	return a.recordLocked(reason, answer)
}

func (a *asking) recordLocked(reason, answer string) uint64 {
	w := a.w
	w.asks++
	ev := Event{Type: EventAnswer, Text: answer, Reason: reason}
	w.appendLocked(&ev)
	w.bytesAtAskEnd = w.bytes
	return ev.Seq
}

// answerSoFarLocked is the rows after the echo to the last row with text,
// the cursor's row up to the cursor with its spaces kept (and what follows
// the cursor, if anything).
func (a *asking) answerSoFarLocked() (string, bool) {
	scr := a.w.screenLocked()
	if a.alt {
		return strings.Join(termmodel.ChangedBlock(a.altBefore, scr.Lines()), "\n"), false
	}
	cur := scr.CursorRow()
	_, h := scr.Size()
	rows, cut := scr.Rows(a.echoEnd+1, scr.Top()+h)
	if i := cur - (a.echoEnd + 1); i >= 0 && i < len(rows) {
		if before, restBlank := scr.BeforeCursor(); restBlank {
			rows[i] = before
		}
	}
	last := len(rows)
	for last > 0 && rows[last-1] == "" && last-1 > cur-(a.echoEnd+1) {
		last--
	}
	return strings.Join(rows[:last], "\n"), cut
}

// answerLocked is the answer at the end: the rows after the echo, without
// the prompt the ask ended at (atPrompt) and trailing blank rows.
func (a *asking) answerLocked(atPrompt bool) (string, bool) {
	scr := a.w.screenLocked()
	if a.alt {
		return strings.Join(termmodel.ChangedBlock(a.altBefore, scr.Lines()), "\n"), false
	}
	_, h := scr.Size()
	end := scr.Top() + h
	if atPrompt {
		end = scr.CursorRow() // the prompt's row and anything below it are not the answer
	}
	rows, cut := scr.Rows(a.echoEnd+1, end)
	for len(rows) > 0 && strings.TrimSpace(rows[len(rows)-1]) == "" {
		rows = rows[:len(rows)-1]
	}
	return strings.Join(rows, "\n"), cut
}

// timeoutError builds the evidence for an ask or wait past its deadline.
func (w *worker) timeoutError(op string, timeout time.Duration, partial string, fromSeq uint64) *TimeoutError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &TimeoutError{Name: w.spec.Name, Op: op, Timeout: timeout, Partial: partial,
		Screen: w.screenLocked().Lines(), FromSeq: fromSeq, ToSeq: w.elog.Seq()}
}
