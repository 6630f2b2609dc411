package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/eventlog"
	"github.com/agentd/agentd/pkg/termmodel"
)

// Ask delivers Text to a running session and collects the answer: what a
// person reads between the question and the program's next prompt, from the
// rendered terminal. It waits for the program's prompt before typing (for
// the first prompt after start-up, or the one the previous ask ended at),
// types the text (one bracketed paste when the program enabled bracketed
// paste, DECSET 2004), presses Enter once the echo is there (again if the
// program shows no reaction within a second), and ends when the learned
// prompt is back and output is quiet for a moment (ReasonPrompt), the
// program exits (ReasonExited), Until matches the answer (ReasonMatched),
// or, without a prompt to learn or with Idle set, the program was quiet
// that long after it reacted (ReasonIdle). ask.go says it in full.
//
// One ask runs at a time per session: another waits up to LockTimeout for
// it and then for the prompt, then ErrLockTimeout. Past Timeout the error
// is a *TimeoutError (ErrTimeout) with the partial answer and the screen. A
// session not running is ErrInvalidStatus; an empty question, text over
// MaxAskText or a bad Until is ErrInvalid. If the connection to the worker
// breaks during the ask, the error says the outcome is unknown: never a
// wrong answer. When ctx ends the worker is told at once: the ask is
// recorded as canceled and the session's ask lock released. While someone
// else holds the session's keyboard (TakeOver) it is ErrBusy naming them,
// and a take-over during the ask ends it so, cancelled.
func (m *Manager) Ask(ctx context.Context, req AskRequest) (*AskResult, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, err
	}
	if err := validateText("ask", req.Text); err != nil {
		return nil, err
	}
	if strings.TrimSpace(question(req.Text)) == "" {
		return nil, emptyQuestion(req.Name, req.Text)
	}
	if _, err := compileUntil(req.Until); err != nil {
		return nil, err
	}
	if req.Timeout < 0 || req.Idle < 0 || req.FallbackIdle < 0 {
		return nil, errorf(ErrInvalid, "ask timeout and idle must not be negative")
	}
	ctx, end, err := m.beginAsk(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	defer end()
	m.Timeouts().fillAsk(&req)
	id := strconv.FormatInt(m.askEpoch, 36) + "-" + strconv.FormatUint(m.askIDs.Add(1), 10)
	res, err := m.askWorker(ctx, req.Name, askParams{ID: id, AskRequest: req})
	if err != nil {
		if ctx.Err() != nil {
			m.cancelAsk(req.Name, id)
			if busy := leaseCause(ctx); busy != nil {
				return nil, busy
			}
		}
		return nil, err
	}
	return res, nil
}

// askCancelTimeout bounds telling a worker that an ask was cancelled.
const askCancelTimeout = 2 * time.Second

// cancelAsk tells the worker that the ask id is cancelled, so it releases
// the session at once instead of at its deadline.
func (m *Manager) cancelAsk(name, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), askCancelTimeout)
	defer cancel()
	h, _, err := m.lookup(ctx, name)
	if err != nil || h == nil {
		return
	}
	h.client.Call(ctx, mCancel, cancelParams{ID: id}, nil)
}

// RecordAsk puts an ask answered outside the terminal (through a channel)
// into the session's event log and asks counter. reason says how it ended
// (e.g. "reply", ReasonTimeout).
func (m *Manager) RecordAsk(ctx context.Context, name, question, answer, reason string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return m.recordWorker(ctx, name, recordParams{Question: question, Answer: answer, Reason: reason})
}

// Send delivers text, keys by name (see KeyBytes), or text then keys, to a
// running session in one write, without waiting for a reaction. Every key
// name is checked before anything is sent. While someone else holds the
// session's keyboard (TakeOver) it is ErrBusy naming them.
func (m *Manager) Send(ctx context.Context, req SendRequest) error {
	if err := ValidateName(req.Name); err != nil {
		return err
	}
	if req.Text == "" && len(req.Keys) == 0 {
		return errorf(ErrInvalid, "send needs text or keys, e.g. agentctl send %s --keys enter", req.Name)
	}
	var data []byte
	if req.Text != "" {
		if err := validateText("send", req.Text); err != nil {
			return err
		}
		data = []byte(req.Text)
	}
	for _, k := range req.Keys {
		b, err := KeyBytes(k)
		if err != nil {
			return err
		}
		data = append(data, b...)
	}
	if err := m.checkLease(ctx, req.Name, "send"); err != nil {
		return err
	}
	return m.sendWorker(ctx, req.Name, sendParams{Data: data})
}

// Approve answers an agent CLI's permission prompt as a person would:
// approve (deny false) or deny it, typing the keys of that option. It
// refuses, typing nothing, when the session asks nothing now or, with
// promptID, asks something other than the prompt the caller saw (its id
// from Status), and, ErrBusy, while someone else holds the session's
// keyboard (TakeOver). It is a person's act: agentd offers it to no model.
func (m *Manager) Approve(ctx context.Context, name string, deny bool, promptID string) (*ApproveResult, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	p := approveParams{Role: "approve", PromptID: promptID}
	if deny {
		p.Role = "deny"
	}
	if err := m.checkLease(ctx, name, p.Role); err != nil {
		return nil, err
	}
	return m.approveWorker(ctx, name, p)
}

// Snapshot returns the screen as a person sees it. For an ended session it
// is rebuilt from the event log: the screen as the program left it.
func (m *Manager) Snapshot(ctx context.Context, name string) (*Snapshot, error) {
	h, man, err := m.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	if h != nil {
		if s, err := m.snapshotWorker(ctx, name); err == nil {
			return s, nil
		} else if !errors.Is(err, ErrInvalidStatus) {
			return nil, err
		}
		if man, err = m.readState(name); err != nil {
			return nil, err
		}
	}
	if man.Status == StatusStarting {
		return nil, statusError(name, man.Status, "", "snapshot")
	}
	return replayScreen(m.dir(name), man)
}

// replayScreen rebuilds a session's last screen from its event log.
func replayScreen(dir string, man *Manifest) (*Snapshot, error) {
	cols, rows := man.Cols, man.Rows
	if cols == 0 || rows == 0 {
		cols, rows = DefaultCols, DefaultRows
	}
	scr := termmodel.New(cols, rows, nil)
	defer scr.Close()
	r := eventlog.NewReader(dir, 0, time.Time{})
	defer r.Close()
	var seq uint64
	// Start from the size of the first record kept, if it says.
	err := r.Poll(func(ev Event) error {
		seq = ev.Seq
		switch ev.Type {
		case EventOutput:
			scr.Write(ev.Data)
		case EventResize:
			scr.Resize(ev.Cols, ev.Rows)
		}
		return nil
	})
	if err != nil {
		return nil, logError(man.Name, err)
	}
	s := scr.Snapshot(man.Name, seq)
	return &s, nil
}

// Wait returns when the first of the request's conditions holds: Until
// matches the screen or the output since the wait began, the program has
// been quiet for Idle, or (Exit) the program has ended, at once for a
// session that already has. Past Timeout the error is a *TimeoutError
// (ErrTimeout) with the screen. Waiting for output on an ended session is
// ErrInvalidStatus.
func (m *Manager) Wait(ctx context.Context, req WaitRequest) (*WaitResult, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, err
	}
	if _, err := compileUntil(req.Until); err != nil {
		return nil, err
	}
	if req.Until == "" && req.Idle <= 0 && !req.Exit && !req.Ready && len(req.States) == 0 {
		return nil, errorf(ErrInvalid, "wait needs a condition; give until, idle, exit, ready or states")
	}
	if err := validateStates(req.States); err != nil {
		return nil, err
	}
	if req.Timeout < 0 {
		return nil, errorf(ErrInvalid, "wait timeout must not be negative")
	}
	if req.Timeout == 0 {
		req.Timeout = m.Timeouts().Wait
	}
	start := time.Now()
	h, man, err := m.lookup(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if h != nil {
		res, err := m.waitWorker(ctx, req)
		if err == nil || !req.Exit || !errors.Is(err, ErrInvalidStatus) {
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		// The worker went away with the program: that is the exit.
		if man, err = m.readState(req.Name); err != nil {
			return nil, err
		}
	}
	if req.Exit && man.Status.Terminal() {
		snap, err := replayScreen(m.dir(req.Name), man)
		if err != nil {
			return nil, err
		}
		return &WaitResult{Name: req.Name, Reason: ReasonExited, Screen: snap.Lines, Elapsed: time.Since(start), Seq: snap.Seq}, nil
	}
	return nil, statusError(req.Name, man.Status, man.Termination, "wait")
}

// Resize changes a running session's terminal size (the program gets
// SIGWINCH). A bad size is ErrInvalid.
func (m *Manager) Resize(ctx context.Context, name string, cols, rows int) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := validateSize(cols, rows); err != nil {
		return err
	}
	return m.resizeWorker(ctx, name, resizeParams{Cols: cols, Rows: rows})
}

// Logs delivers the session's events from FromSeq (or Since, or the last
// Tail) on, in order, to fn. With
// Follow it then keeps delivering new events until ctx ends (returning
// ctx.Err()) or the session ends (returning nil after its last event); a
// RestartAlways program's bad end, which a restart follows, is not the
// session's end, and the restarted program's events follow. An
// error from fn stops Logs and is returned. fn runs on the caller's
// goroutine.
func (m *Manager) Logs(ctx context.Context, req LogsRequest, fn func(Event) error) error {
	if err := ValidateName(req.Name); err != nil {
		return err
	}
	dir := m.dir(req.Name)
	if _, err := os.Stat(dir); err != nil {
		return notFound(req.Name)
	}
	from, err := logStart(dir, req)
	if err != nil {
		return err
	}
	if req.WholeRunes {
		r := eventlog.NewReader(dir, max(from, 2)-1, req.Since)
		defer r.Close()
		j := eventlog.NewRuneJoiner(fn, from)
		poll := func(deliver func(Event) error) error {
			if err := r.Poll(deliver); err != nil {
				return logError(req.Name, err)
			}
			return j.Flush() // caught up: nothing more to join with now
		}
		return followLog(ctx, req, dir, poll, j.Deliver)
	}
	r := eventlog.NewReader(dir, from, req.Since)
	defer r.Close()
	poll := func(deliver func(Event) error) error { return logError(req.Name, r.Poll(deliver)) }
	return followLog(ctx, req, dir, poll, fn)
}

// logStart is the first seq a read wants: FromSeq, or the start of the
// last Tail events. A FromSeq past the end of the log (beyond the seq the
// next event will take) is ErrInvalid: such a cursor came from elsewhere.
func logStart(dir string, req LogsRequest) (uint64, error) {
	if req.FromSeq <= 1 && req.Tail <= 0 {
		return req.FromSeq, nil
	}
	last, err := eventlog.LastSeq(dir)
	if err = logError(req.Name, err); err != nil {
		return 0, fmt.Errorf("read the log of %q: %w", req.Name, err)
	}
	if req.FromSeq > last+1 {
		return 0, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("from_seq %d is past the end of the log of %q, whose last event is %d; "+
			"read from %d (the next event) or from 0 (the oldest kept)", req.FromSeq, req.Name, last, last+1)}
	}
	from := req.FromSeq
	if req.Tail > 0 && last >= uint64(req.Tail) {
		from = max(from, last-uint64(req.Tail)+1)
	}
	return from, nil
}

// followLog reads what the log holds (poll) and, with req.Follow, goes on
// reading as it grows until ctx ends or the session ends.
func followLog(ctx context.Context, req LogsRequest, dir string, poll func(func(Event) error) error, fn func(Event) error) error {
	if req.CaughtUp != nil {
		inner := poll
		poll = func(deliver func(Event) error) error {
			if err := inner(deliver); err != nil {
				return err
			}
			return req.CaughtUp()
		}
	}
	if !req.Follow {
		return poll(fn)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("follow the log of %q: %w", req.Name, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("follow the log of %q: %w", req.Name, err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	checkEnd := true
	for {
		ended := false
		if checkEnd {
			man, err := readManifest(dir)
			ended = err != nil && !errors.Is(err, errNoManifest) || err == nil && man.Status.Terminal() && !man.restartPending()
			checkEnd = false
		}
		if err := poll(fn); err != nil {
			return err
		}
		if ended {
			return nil
		}
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) == manifestName {
				checkEnd = true
			}
			if ev.Has(fsnotify.Remove) && ev.Name == dir {
				return nil
			}
		case err := <-w.Errors:
			_ = err // an overflow: the ticker and the next poll catch up
			checkEnd = true
		case <-tick.C:
			checkEnd = true
			if _, err := os.Stat(dir); err != nil {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Reconcile re-attaches to every live worker and marks sessions whose
// worker is gone failed (host_death), reporting what it found and did. A
// session it cannot judge (its socket exists but does not answer, or its
// worker lives without a socket) is left as it is and reported. It is
// bounded in time: each worker gets attachTimeout from when its session's
// lock is held, and ctx bounds the whole.
func (m *Manager) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	start := time.Now()
	ents, err := os.ReadDir(m.sessions)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	rep := &ReconcileReport{Sessions: m.clearTrash(ents)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, e := range ents {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		name := e.Name()
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				mu.Lock()
				rep.Sessions = append(rep.Sessions, ReconcileEntry{Name: name, Action: ActionUnreachable, Detail: "reconcile ran out of time"})
				mu.Unlock()
				return
			}
			defer func() { <-sem }()
			ent := m.reconcileOne(ctx, name)
			if ent.Action == ActionMarkedDead || ent.Action == ActionEnded {
				if reason, ok := m.rebootRestart(name, ent.Action == ActionMarkedDead); ok {
					if _, err := m.restartSession(ctx, name, reason, -1); err != nil {
						ent.Detail += "; restart failed: " + err.Error()
					} else {
						ent.Action, ent.After = ActionRestarted, StatusRunning
						ent.Detail += "; restarted (" + reason + ")"
					}
				} else {
					m.afterEnd(name) // restart always: a back-off not seen out
				}
			}
			mu.Lock()
			rep.Sessions = append(rep.Sessions, ent)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sortEntries(rep.Sessions)
	rep.Took = time.Since(start)
	for _, e := range rep.Sessions {
		if e.Action != ActionEnded {
			m.log.Info().Str("session", e.Name).Str("action", e.Action).Str("detail", e.Detail).Msg("reconciled")
		}
	}
	return rep, nil
}

func sortEntries(es []ReconcileEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Name < es[j-1].Name; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func (m *Manager) reconcileOne(ctx context.Context, name string) ReconcileEntry {
	ent := ReconcileEntry{Name: name}
	man, err := m.readState(name)
	if err != nil {
		ent.Action, ent.Detail = ActionUnreachable, err.Error()
		return ent
	}
	switch man.Status {
	case StatusBroken:
		return m.reconcileBroken(ctx, name, man)
	case StatusStarting:
		if man.WorkerPID == 0 {
			ent.Before, ent.After, ent.Action, ent.Detail = StatusStarting, StatusStarting, ActionUnreachable, "being spawned"
			return ent
		}
	}
	ent.Before, ent.After = man.Status, man.Status
	if !man.Status.Allows().Live {
		ent.Action = ActionEnded
		return ent
	}
	m.mu.Lock()
	h := m.live[name]
	m.mu.Unlock()
	if h != nil && h.client.Err() == nil {
		ent.Action, ent.Detail = ActionAttached, "already attached"
		return ent
	}
	// attach bounds its dial and hello (attachTimeout) from when it holds
	// the session's lock: a worker does not lose its time to another's.
	_, aerr := m.attach(ctx, name)
	if aerr == nil {
		ent.Action = ActionAttached
		if man2, err := readManifest(m.dir(name)); err == nil {
			ent.After = man2.Status
		}
		return ent
	}
	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		ent.Action, ent.Detail = ActionUnreachable, "reconcile ran out of time"
		return ent
	}
	defer unlock()
	if man, err = readManifest(m.dir(name)); err != nil {
		ent.Action, ent.Detail = ActionUnreachable, err.Error()
		return ent
	}
	if !man.Status.Allows().Live {
		ent.Action, ent.After = ActionEnded, man.Status
		return ent
	}
	if man.Status == StatusStarting && man.WorkerPID == 0 {
		ent.Action, ent.After, ent.Detail = ActionUnreachable, man.Status, "being spawned"
		return ent
	}
	if processAlive(man.WorkerPID, man.WorkerStart) {
		m.noteUnanswered(name)
		ent.Action, ent.Detail = ActionUnreachable, fmt.Sprintf("worker %d is alive but does not answer: %v", man.WorkerPID, aerr)
		return ent
	}
	m.markDead(name, man, fmt.Sprintf("worker %d is gone", man.WorkerPID))
	ent.Action, ent.After, ent.Detail = ActionMarkedDead, StatusFailed, fmt.Sprintf("worker %d is gone", man.WorkerPID)
	return ent
}

// Attach connects an interactive terminal to a running session over rw:
// it first writes a repaint of the current screen, then streams the
// program's output to rw and rw's input to the program (recorded as input
// events), until ctx ends (returning ctx.Err()), the session ends or rw's
// input reaches EOF (returning nil), or a write to rw fails. Several
// attachers may watch one session at once. An attacher that cannot keep up
// is sent a fresh repaint instead of what it missed. Detach keys and raw
// mode are the caller's. A Read of rw in progress when Attach returns is
// left to finish when the caller closes rw; its input is then discarded.
func (m *Manager) Attach(ctx context.Context, name string, rw io.ReadWriter) error {
	h, man, err := m.lookup(ctx, name)
	if err != nil {
		return err
	}
	if h == nil {
		return statusError(name, man.Status, man.Termination, "attach")
	}
	// The worker outlives its program for a moment: ask it, so an ended
	// session is refused before anything is read from rw.
	st, err := m.statusOf(ctx, h)
	if isUnresponsive(err) {
		return err
	}
	if err == nil && !st.Status.Allows().Attach {
		return statusError(name, st.Status, st.Exit.Termination, "attach")
	}
	conn, _, err := rpc.DialUpgrade(ctx, h.socket, mAttachStream, nil)
	if re := (*rpc.Error)(nil); errors.As(err, &re) && re.Code == codeUnknownMethod {
		// A worker started by an older agentd: attach the old way.
		return m.attachByNotes(ctx, name, h, rw)
	}
	if err != nil {
		if errors.As(err, new(*rpc.Error)) {
			return decodeError(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if man, merr := readManifest(m.dir(name)); merr == nil && man.Status.Terminal() {
			return statusError(name, man.Status, man.Termination, "attach")
		}
		return fmt.Errorf("attach to %q: %w", name, err)
	}
	defer conn.Close()
	return pipeTerminal(ctx, name, conn, rw)
}

// pipeTerminal copies the worker's raw terminal stream to rw and rw to it
// until either side ends or ctx does; see Attach for what it returns. The
// copies own no resources: closing conn (the caller) ends the one reading
// it, and the one reading rw ends when the caller closes rw.
func pipeTerminal(ctx context.Context, name string, conn net.Conn, rw io.ReadWriter) error {
	var werr error
	var wmu sync.Mutex
	done := make(chan struct{}, 2)
	go func() {
		// Output: ends when the worker closes the stream (the session
		// ended) or rw cannot take more.
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				if _, err := rw.Write(buf[:n]); err != nil {
					wmu.Lock()
					werr = err
					wmu.Unlock()
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		// Input: ends at rw's EOF (the attacher detached).
		defer func() { done <- struct{}{} }()
		io.Copy(conn, rw)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	wmu.Lock()
	defer wmu.Unlock()
	if werr != nil {
		return fmt.Errorf("attach to %q: write to the terminal: %w", name, werr)
	}
	return ctx.Err()
}

// attachByNotes is Attach to a worker that predates mAttachStream: output
// arrives as notifications, input goes as one mSend call per chunk.
func (m *Manager) attachByNotes(ctx context.Context, name string, h *handle, rw io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var werr error
	var wmu sync.Mutex
	c, err := rpc.Dial(ctx, h.socket, rpc.ClientOptions{OnNotification: func(n rpc.Notification) {
		if n.Method != nOutput {
			return
		}
		var note outputNote
		if err := decodeJSON(n.Params, &note); err != nil {
			return
		}
		if _, err := rw.Write(note.Data); err != nil {
			wmu.Lock()
			werr = err
			wmu.Unlock()
			cancel()
		}
	}})
	if err != nil {
		if man, merr := readManifest(m.dir(name)); merr == nil && man.Status.Terminal() {
			return statusError(name, man.Status, man.Termination, "attach")
		}
		return fmt.Errorf("attach to %q: %w", name, err)
	}
	defer c.Close()
	done := make(chan error, 2)
	go func() { done <- c.Call(ctx, mAttach, nil, nil) }()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := rw.Read(buf)
			if n > 0 {
				if cerr := c.Call(ctx, mSend, sendParams{Data: buf[:n]}, nil); cerr != nil {
					done <- nil
					return
				}
			}
			if err != nil {
				done <- nil
				return
			}
		}
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	wmu.Lock()
	defer wmu.Unlock()
	if werr != nil {
		return fmt.Errorf("attach to %q: write to the terminal: %w", name, werr)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if errors.As(err, new(*rpc.Error)) {
			return decodeError(err)
		}
		// The worker closed the connection: the session ended.
		return nil
	}
	return nil
}
