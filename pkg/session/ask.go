package session

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// lockAsk takes the session's ask lock, waiting up to lockTimeout (zero is
// DefaultLockTimeout, negative does not wait).
func (w *worker) lockAsk(ctx context.Context, lockTimeout time.Duration) error {
	select {
	case w.askSem <- struct{}{}:
		return nil
	default:
	}
	if lockTimeout == 0 {
		lockTimeout = DefaultLockTimeout
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
		return ctx.Err()
	}
}

// evalGap is how long to leave between evaluations of a long answer, so a
// flood of output is not re-parsed on every read.
func evalGap(n int) time.Duration {
	return time.Duration(n/(64<<10)) * time.Millisecond
}

// ask delivers the question and collects the answer; see Manager.Ask.
func (w *worker) ask(ctx context.Context, p askParams) (*AskResult, error) {
	start := time.Now()
	if err := validateText("ask", p.Text); err != nil {
		return nil, err
	}
	re, err := compileUntil(p.Until)
	if err != nil {
		return nil, err
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	idle := p.Idle
	if idle <= 0 && re == nil {
		idle = DefaultAskIdle
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := w.requireRunning("ask"); err != nil {
		return nil, err
	}
	if err := w.lockAsk(ctx, p.LockTimeout); err != nil {
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, w.timeoutError("ask", timeout, "", 0)
		}
		return nil, err
	}
	defer func() { <-w.askSem }()

	// A program still printing its start-up banner is not ready for
	// input: typing now would mix the question into that output. Before
	// the first ask, wait, within bounds, for a short quiet. Later asks
	// follow an answer the program has finished, so they go at once.
	w.settle(ctx)

	col := &collector{}
	w.mu.Lock()
	if err := w.requireRunningLocked("ask"); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	prompt := strings.TrimRight(w.screenLocked().cursorLine(), " ")
	hash0 := hashLines(w.screenLocked().lines())
	paste := w.screenLocked().paste.Load()
	ev := Event{Type: EventAsk, Text: p.Text}
	w.appendLocked(&ev)
	fromSeq := ev.Seq
	w.collectors[col] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.collectors, col)
		w.mu.Unlock()
	}()

	data := p.Text
	if paste {
		data = ansi.BracketedPasteStart + data + ansi.BracketedPasteEnd
	}
	if err := w.writeInput(ctx, []byte(data), true); err != nil {
		return nil, err
	}
	// Let the echo of the text arrive before Enter, so that Enter is not
	// taken as part of the paste.
	w.waitUntil(ctx, echoWindow, func() bool { return col.buf.Len() > 0 || w.status == StatusExited })
	w.mu.Lock()
	enterMark := col.buf.Len()
	w.mu.Unlock()
	if err := w.writeInput(ctx, []byte("\r"), true); err != nil {
		return nil, err
	}
	enterAt := time.Now()
	resent, confirmed := false, false
	started := false
	var lastEval time.Time
	var answer string
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.mu.Lock()
		ended := w.status == StatusExited
		n := col.buf.Len()
		raw := col.buf.Bytes()
		lastOut := w.lastOutput
		ch := w.changed
		var scr []string
		var changed bool
		reason := ""
		if gap := evalGap(n); time.Since(lastEval) >= gap || ended {
			lastEval = time.Now()
			answer = extractAnswer(raw, p.Text, prompt)
			scr = w.screenLocked().lines()
			changed = hashLines(scr) != hash0
			if answer != "" {
				started = true
			}
			switch {
			case re != nil && (re.MatchString(answer) || started && changed && re.MatchString(strings.Join(scr, "\n"))):
				reason = ReasonMatched
			case ended:
				reason = ReasonExited
			case started && idle > 0 && time.Since(lastOut) >= idle:
				reason = ReasonIdle
			case !started && idle > 0 && n > enterMark && time.Since(lastOut) >= emptyAnswerIdle(idle):
				// The program reacted but printed nothing that reads as an
				// answer (a continuation prompt, a silent command) and then
				// went quiet for longer: answer empty rather than wait for
				// the deadline.
				reason = ReasonIdle
			}
		}
		if reason != "" {
			w.asks++
			ev := Event{Type: EventAnswer, Text: answer, Reason: reason}
			w.appendLocked(&ev)
			w.mu.Unlock()
			return &AskResult{Name: w.spec.Name, Answer: answer, Screen: scr, Reason: reason,
				Elapsed: time.Since(start), FromSeq: fromSeq, ToSeq: ev.Seq, Pasted: paste, Resent: resent}, nil
		}
		w.mu.Unlock()

		// What to wake for besides new output.
		wake := time.Duration(-1)
		if !resent && !confirmed {
			if n > enterMark {
				confirmed = true // the program reacted
			} else if d := confirmWindow - time.Since(enterAt); d <= 0 {
				if err := w.writeInput(ctx, []byte("\r"), true); err != nil {
					return nil, err
				}
				resent = true
				continue
			} else {
				wake = d
			}
		}
		if idle > 0 && (started || n > enterMark) {
			quiet := idle
			if !started {
				quiet = emptyAnswerIdle(idle)
			}
			if d := quiet - time.Since(lastOut); wake < 0 || d < wake {
				wake = max(d, 0)
			}
		}
		if g := evalGap(n) - time.Since(lastEval); g > 0 && (wake < 0 || g < wake) {
			wake = g
		}
		var tc <-chan time.Time
		if wake >= 0 {
			timer.Reset(wake)
			tc = timer.C
		}
		select {
		case <-ch:
		case <-tc:
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			w.mu.Lock()
			partial := extractAnswer(col.buf.Bytes(), p.Text, prompt)
			w.mu.Unlock()
			return nil, w.timeoutError("ask", timeout, partial, fromSeq)
		}
	}
}

// emptyAnswerIdle is how long a program that reacted to a question without
// printing an answer must stay quiet before the ask ends with an empty
// answer: longer than idle, since a program may think before it answers.
func emptyAnswerIdle(idle time.Duration) time.Duration { return 3 * idle }

// settle waits, before the session's first ask types, until the program
// has been quiet for settleQuiet, at most settleMax.
func (w *worker) settle(ctx context.Context) {
	deadline := time.Now().Add(settleMax)
	for {
		w.mu.Lock()
		// A program that has printed nothing yet counts from its start.
		quiet := time.Since(maxTime(w.lastOutput, w.man.StartedAt))
		asked := w.asks > 0
		w.mu.Unlock()
		if asked {
			return
		}
		left := time.Until(deadline)
		if quiet >= settleQuiet || left <= 0 {
			return
		}
		t := time.NewTimer(min(settleQuiet-quiet, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// timeoutError builds the evidence for an ask or wait past its deadline.
func (w *worker) timeoutError(op string, timeout time.Duration, partial string, fromSeq uint64) *TimeoutError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &TimeoutError{Name: w.spec.Name, Op: op, Timeout: timeout, Partial: partial,
		Screen: w.screenLocked().lines(), FromSeq: fromSeq, ToSeq: w.elog.seq}
}

// waitUntil waits up to d for cond (called with w.mu held) to hold.
func (w *worker) waitUntil(ctx context.Context, d time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		w.mu.Lock()
		ok, ch := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// wait returns when the first of p's conditions holds; see Manager.Wait.
func (w *worker) wait(ctx context.Context, p waitParams) (*WaitResult, error) {
	start := time.Now()
	re, err := compileUntil(p.Until)
	if err != nil {
		return nil, err
	}
	if re == nil && p.Idle <= 0 && !p.Exit {
		return nil, errorf(ErrInvalid, "wait needs a condition; give until, idle or exit")
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var col *collector
	if re != nil {
		col = &collector{}
	}
	w.mu.Lock()
	if w.status == StatusExited && !p.Exit {
		w.mu.Unlock()
		return nil, statusError(w.spec.Name, w.status, w.exit.Termination, "wait")
	}
	fromSeq := w.elog.seq
	if col != nil {
		w.collectors[col] = struct{}{}
	}
	w.mu.Unlock()
	defer func() {
		if col != nil {
			w.mu.Lock()
			delete(w.collectors, col)
			w.mu.Unlock()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var lastEval time.Time
	for {
		w.mu.Lock()
		quiet := time.Since(maxTime(w.lastOutput, start))
		ended := w.status == StatusExited
		reason := ""
		var gap time.Duration
		if col != nil {
			// Matching re-reads the screen and the output so far: under a
			// flood, do it at a pace that keeps the cost linear.
			gap = evalGap(col.buf.Len())
			if time.Since(lastEval) >= gap || ended {
				lastEval = time.Now()
				if re.MatchString(strings.Join(w.screenLocked().lines(), "\n")) || re.MatchString(plainText(col.buf.Bytes())) {
					reason = ReasonMatched
				}
			}
		}
		switch {
		case reason != "":
		case p.Exit && ended:
			reason = ReasonExited
		case p.Idle > 0 && quiet >= p.Idle:
			reason = ReasonIdle
		}
		if reason != "" {
			res := &WaitResult{Name: w.spec.Name, Reason: reason, Screen: w.screenLocked().lines(), Elapsed: time.Since(start), Seq: w.elog.seq}
			w.mu.Unlock()
			return res, nil
		}
		ch := w.changed
		w.mu.Unlock()
		if ended {
			return nil, statusError(w.spec.Name, StatusExited, w.exitInfo().Termination, "wait for output")
		}
		wake := time.Duration(-1)
		if p.Idle > 0 {
			wake = p.Idle - quiet
		}
		if g := gap - time.Since(lastEval); col != nil && g > 0 {
			// Changes within the gap are looked at when it ends.
			if wake < 0 || g < wake {
				wake = g
			}
			ch = nil
		}
		var tc <-chan time.Time
		if wake >= 0 {
			timer.Reset(wake)
			tc = timer.C
		}
		select {
		case <-ch:
		case <-tc:
		case <-w.done:
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			return nil, w.timeoutError("wait", timeout, "", fromSeq)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// plainText turns terminal output into text: escapes removed, line ends
// normalised, carriage-return overwrites and backspaces applied.
func plainText(raw []byte) string {
	s := ansi.Strip(string(raw))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			// A bare CR returns to the start of the line; what follows
			// overwrites what was there.
			after, before := l[j+1:], l[:j]
			if len(after) >= len(before) {
				l = after
			} else {
				l = after + before[len(after):]
			}
		}
		if strings.ContainsRune(l, '\b') {
			var b []rune
			for _, r := range l {
				if r == '\b' {
					if len(b) > 0 {
						b = b[:len(b)-1]
					}
					continue
				}
				b = append(b, r)
			}
			l = string(b)
		}
		l = strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, l)
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// extractAnswer is the program's reply in raw: plain text without the echo
// of the question (its lines, in order, at the start) and without a last
// line that is the prompt the program showed before the question.
func extractAnswer(raw []byte, question, prompt string) string {
	lines := strings.Split(plainText(raw), "\n")
	qs := strings.Split(strings.ReplaceAll(question, "\r\n", "\n"), "\n")
	// A program that was not reading yet when the question was typed shows
	// it twice: the terminal's own echo, the rest of its start-up output,
	// then its prompt with the question again. Everything up to the last
	// echo of the question's last line is not the answer.
	if last := strings.TrimSpace(qs[len(qs)-1]); last != "" {
		for i := len(lines) - 1; i >= 0; i-- {
			l := strings.TrimSpace(lines[i])
			// Only an echo behind a prompt counts: a line equal to the
			// question may be the answer itself (cat).
			if rest, ok := strings.CutSuffix(l, last); ok && strings.TrimSpace(rest) != "" && isPromptOnly(strings.TrimSpace(rest), prompt) {
				if i > 0 {
					lines, qs = lines[i+1:], nil
				}
				break
			}
		}
	}
	// Drop the echo.
	j := 0
	for len(lines) > 0 && j < len(qs) {
		q := strings.TrimSpace(qs[j])
		l := strings.TrimSpace(lines[0])
		if q == "" {
			j++
			if l == "" || isPromptOnly(l, prompt) {
				lines = lines[1:]
			}
			continue
		}
		if l == "" || isPromptOnly(l, prompt) {
			lines = lines[1:]
			continue
		}
		// The echo is the question's line, after a prompt if any.
		if strings.HasSuffix(l, q) {
			lines = lines[1:]
			j++
			continue
		}
		break
	}
	// Drop the trailing prompt and blank lines.
	for len(lines) > 0 {
		l := strings.TrimSpace(lines[len(lines)-1])
		if l == "" || isPromptOnly(l, prompt) {
			lines = lines[:len(lines)-1]
			continue
		}
		break
	}
	// Blank lines and bare (continuation) prompts left between the echo and
	// the reply.
	for len(lines) > 0 && (strings.TrimSpace(lines[0]) == "" || isPromptOnly(strings.TrimSpace(lines[0]), prompt)) {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// isPromptOnly reports whether l is only a prompt: the one shown before
// the question, or a short run of punctuation such as ">>>", "..." or "$"
// (a continuation prompt).
func isPromptOnly(l, prompt string) bool {
	if p := strings.TrimSpace(prompt); p != "" && l == p {
		return true
	}
	if l == "" || len(l) > 4 {
		return false
	}
	for _, r := range l {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
