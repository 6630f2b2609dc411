package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/eventlog"
)

// Subscribe: the state changes of every session, or of named ones, as
// they are recorded (issue 27).
//
// The source is the sessions' event logs, followed with inotify
// (fsnotify) like logs --follow: each worker writes a "state" record when
// its agent CLI's state changes (from the screen or from a hook, whichever
// told it), and "exit", "restarted" and start markers when the program's
// life changes. Reading the logs, rather than the workers' connections,
// gives three things at once: a change is delivered within a millisecond
// or two of its record (inotify wakes the reader as the append returns);
// a subscriber that reconnects after the daemon restarted says where it
// left off (a Cursor: the last seq of each session's log it had), and
// nothing recorded meanwhile is lost, since the records are on disk; and a
// session spawned after subscribing is found by the watch on the sessions
// directory. Each subscription reads the logs itself, with a filter that
// skips output records by the type at their head, without decoding them.
//
// Programs that are not agent CLIs have no state records: their ready or
// busy flips on every keystroke and command (it is the kernel's "reading
// its terminal"), which would flood the stream and the log, and wait
// --state ready already serves whoever needs it. Their sessions' life
// (spawned, exited, restarted, removed) is in the stream all the same.

// ChangeKind says what a StateChange reports.
type ChangeKind string

// The kinds of changes.
const (
	// ChangeCurrent is a session's state when the subscription began
	// (SubscribeRequest.Current), not a change.
	ChangeCurrent ChangeKind = "current"
	// ChangeState: an agent CLI's state changed.
	ChangeState ChangeKind = "state"
	// ChangeSpawned, ChangeExited, ChangeRestarted and ChangeRemoved are
	// the session's life: its program started, ended, was started again by
	// a restart, and the session's files were removed.
	ChangeSpawned   ChangeKind = "spawned"
	ChangeExited    ChangeKind = "exited"
	ChangeRestarted ChangeKind = "restarted"
	ChangeRemoved   ChangeKind = "removed"
)

// StateChange is one change of a session's state or life.
type StateChange struct {
	Session string
	Kind    ChangeKind
	// Seq is the event-log record's seq (0 for current and removed): with
	// Session, what a Cursor keeps.
	Seq uint64
	// TS is when it happened (the record's time).
	TS time.Time
	// State is the agent CLI's state after the change (working, waiting,
	// needs_approval, needs_attention; "" when it has none, such as after
	// its program ended), entered at Since; Source says what told it
	// (screen or hook); Detail is what it asks, for the states that ask.
	State  string
	Since  time.Time
	Source string
	Detail *agentstate.Detail
	// Prev is the state before (empty when unknown: the first change read
	// of a session without Current), entered at PrevSince.
	Prev      string
	PrevSince time.Time
	// Turn is the length of the turn that a change to waiting ends: how
	// long the agent worked since the person last gave it something (a
	// prompt after a wait, or an answer to a needs_approval or
	// needs_attention), so the time a prompt waited for its answer does
	// not count. Zero when unknown.
	Turn time.Duration
	// Status is the session's status, for current (and running for
	// spawned); Termination, ExitCode and Signal the program's end, for
	// exited and restarted (and current, of an ended session); Reason what
	// the record says.
	Status      Status
	Termination Termination
	ExitCode    *int
	Signal      string
	Reason      string
}

// Cursor is where a subscription left off: Seqs holds, by session, the
// seq of the last change delivered; a session missing from it is read
// from Time on (its records stamped at or after Time). The zero Cursor
// means "from now".
type Cursor struct {
	Time time.Time
	Seqs map[string]uint64
}

// Add moves the cursor past c.
func (cur *Cursor) Add(c StateChange) {
	if c.Seq == 0 {
		return
	}
	if cur.Seqs == nil {
		cur.Seqs = map[string]uint64{}
	}
	cur.Seqs[c.Session] = max(cur.Seqs[c.Session], c.Seq)
	if c.TS.After(cur.Time) {
		cur.Time = c.TS
	}
}

// SubscribeRequest says what to subscribe to.
type SubscribeRequest struct {
	// Names are the sessions followed; empty is every session, those
	// spawned later included.
	Names []string
	// Cursor is where an earlier subscription left off; zero is now.
	Cursor Cursor
	// Current begins with each session's state as it is (ChangeCurrent).
	Current bool
	// Follow goes on delivering changes until ctx ends; without it
	// Subscribe returns once it has delivered what is recorded.
	Follow bool
}

// stateTypes are the records a subscription reads.
var stateTypes = []EventType{EventState, EventExit, EventMarker, EventRestarted}

// startedMarker begins the marker a worker writes when its program starts.
const startedMarker = "started pid "

// Subscribe delivers the state changes of req's sessions to fn, in the
// order of each session's log (sessions are not ordered among
// themselves). fn runs on the caller's goroutine; its error ends
// Subscribe and is returned. A named session that does not exist is
// ErrNotFound; a cursor's seq past the end of a session's log is
// ErrInvalid. With Follow it returns ctx's error when ctx ends.
func (m *Manager) Subscribe(ctx context.Context, req SubscribeRequest, fn func(StateChange) error) error {
	for _, n := range req.Names {
		if err := ValidateName(n); err != nil {
			return err
		}
		if _, err := os.Stat(m.dir(n)); err != nil {
			return notFound(n)
		}
	}
	s := &subscription{m: m, req: req, fn: fn, logs: map[string]*followedLog{}}
	defer s.close()
	var w *fsnotify.Watcher
	if req.Follow {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			return fmt.Errorf("subscribe to state changes: %w", err)
		}
		defer w.Close()
		if err := w.Add(m.sessions); err != nil {
			return fmt.Errorf("subscribe to state changes: %w", err)
		}
		s.w = w
	}
	names := req.Names
	if len(names) == 0 {
		all, err := m.sessionNames()
		if err != nil {
			return fmt.Errorf("subscribe to state changes: %w", err)
		}
		names = all
	}
	for _, n := range names {
		if err := s.add(ctx, n, false); err != nil {
			return err
		}
	}
	if err := s.pollAll(); err != nil {
		return err
	}
	if !req.Follow {
		return nil
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	dirty := map[string]bool{}
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		// At most one read of the logs per pollGap: meanwhile the kernel
		// merges the appends to a busy log into one event.
		select {
		case <-pause.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			s.note(ev, dirty)
		drain:
			for {
				select {
				case ev, ok := <-w.Events:
					if !ok {
						break drain
					}
					s.note(ev, dirty)
				default:
					break drain
				}
			}
			for name := range dirty {
				delete(dirty, name)
				if err := s.changed(ctx, name); err != nil {
					return err
				}
			}
			pause.Reset(pollGap)
			continue
		case <-w.Errors:
			// An overflow: events were lost; poll everything.
			if err := s.sweep(ctx, true); err != nil {
				return err
			}
		case <-tick.C:
			if err := s.sweep(ctx, false); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		pause.Reset(0)
	}
}

// pollGap is the least time between two reads of the logs by one
// subscription. A program writing fast appends to its log thousands of
// times a second, and reading after each append cost the daemon 0.4 s of
// CPU for each 64 MB a program wrote, for each subscription; reading at
// most every pollGap lets the kernel merge those appends' events. A state
// record follows its screen's last output by classifyAfter (40 ms), more
// than pollGap, so it is read at once.
const pollGap = 20 * time.Millisecond

// subscription is one Subscribe's state; its goroutine owns it.
type subscription struct {
	m    *Manager
	req  SubscribeRequest
	fn   func(StateChange) error
	w    *fsnotify.Watcher // nil without Follow
	logs map[string]*followedLog
}

// followedLog is one session's log as a subscription reads it, with
// what it knows of the session's state.
type followedLog struct {
	name  string
	dir   string
	r     *eventlog.Reader
	state string
	since time.Time
	// prev and prevSince are the state before state, for a wait told
	// again (a record of the same state).
	prev       string
	prevSince  time.Time
	prompt     string    // the prompt id state's last record carried
	turnStart  time.Time // when the current turn began; zero outside one or unknown
	restarting bool      // a restarted record was read: the next start marker is its
	watched    bool      // inotify watches its directory
}

func (s *subscription) close() {
	for _, l := range s.logs {
		l.r.Close()
	}
}

// wants reports whether name is one of the subscription's sessions.
func (s *subscription) wants(name string) bool {
	return len(s.req.Names) == 0 || slices.Contains(s.req.Names, name)
}

// add starts following name's log. A session met at the start is read
// from the cursor (or from now, after its current state when asked); one
// created later (fresh) from its first record.
func (s *subscription) add(ctx context.Context, name string, fresh bool) error {
	dir := s.m.dir(name)
	l := &followedLog{name: name, dir: dir}
	if s.w != nil {
		err := s.w.Add(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		// Without a watch (the user's inotify watches used up), the log
		// is polled every second instead.
		l.watched = err == nil
	}
	var from uint64
	var since time.Time
	seq, inCursor := s.req.Cursor.Seqs[name]
	switch {
	case fresh:
	case inCursor:
		from = seq + 1
		if last, err := eventlog.LastSeq(dir); err == nil && seq > last {
			return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("the cursor's seq %d for %q is past the end of its log, whose last record is %d; subscribe without a cursor to begin from now", seq, name, last)}
		}
	case !s.req.Cursor.Time.IsZero():
		since = s.req.Cursor.Time.Add(time.Nanosecond)
	default:
		// From now: the records after the last one there is. The current
		// state is read after it, so a change in between is delivered
		// (perhaps twice), never lost.
		last, err := eventlog.LastSeq(dir)
		if err != nil {
			last = 0
		}
		from = last + 1
	}
	if s.req.Current && !fresh {
		if err := s.current(ctx, l); err != nil {
			return err
		}
	}
	l.r = eventlog.NewReader(dir, from, since)
	l.r.OnlyTypes(stateTypes...)
	s.logs[name] = l
	return nil
}

// current delivers l's session's state as it is now.
func (s *subscription) current(ctx context.Context, l *followedLog) error {
	info, err := s.m.Status(ctx, l.name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		var ue *unresponsiveError
		if !errors.As(err, &ue) {
			return err
		}
		info = &Info{Name: l.name, Status: StatusUnresponsive, Reason: ue.Error()}
	}
	l.state, l.since = info.State, info.Since
	if info.Detail != nil {
		l.prompt = info.Detail.PromptID
	}
	if info.State == string(agentstate.Working) {
		l.turnStart = info.Since // at the latest
	}
	return s.fn(StateChange{Session: l.name, Kind: ChangeCurrent, TS: time.Now().UTC(), State: info.State, Since: info.Since,
		Detail: info.Detail, Status: info.Status, Termination: info.Termination, ExitCode: info.ExitCode, Signal: info.Signal, Reason: info.Reason})
}

// pollAll reads what every followed log holds now.
func (s *subscription) pollAll() error {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range s.logs {
			if !yield(n) {
				return
			}
		}
	}) {
		if err := s.poll(s.logs[name]); err != nil {
			return err
		}
	}
	return nil
}

// sweep finds sessions created or removed without an event seen (a watch
// that could not be added) and polls the logs that are not watched, or
// every log (all: events were lost). A watched log costs nothing between
// its changes: with 256 sessions, polling each every second cost lists a
// third more time on two cores.
func (s *subscription) sweep(ctx context.Context, all bool) error {
	if len(s.req.Names) == 0 {
		if names, err := s.m.sessionNames(); err == nil {
			for _, n := range names {
				if s.logs[n] == nil {
					if err := s.add(ctx, n, true); err != nil {
						return err
					}
				}
			}
			for n := range s.logs {
				if _, found := slices.BinarySearch(names, n); !found {
					if err := s.changed(ctx, n); err != nil {
						return err
					}
				}
			}
		}
	}
	for name, l := range s.logs {
		if all || !l.watched {
			if err := s.changed(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// note records which session an inotify event concerns.
func (s *subscription) note(ev fsnotify.Event, dirty map[string]bool) {
	rel, err := filepath.Rel(s.m.sessions, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	name, _, _ := strings.Cut(rel, string(filepath.Separator))
	if ValidateName(name) == nil && s.wants(name) {
		dirty[name] = true
	}
}

// changed handles a change in name's directory: a new session, a longer
// log, or the session's removal.
func (s *subscription) changed(ctx context.Context, name string) error {
	l := s.logs[name]
	if _, err := os.Stat(s.m.dir(name)); err != nil {
		if l == nil {
			return nil
		}
		// Its records up to the removal first, then the removal.
		_ = s.poll(l)
		l.r.Close()
		delete(s.logs, name)
		return s.fn(StateChange{Session: name, Kind: ChangeRemoved, TS: time.Now().UTC(), Prev: l.state, PrevSince: l.since})
	}
	if l == nil {
		if err := s.add(ctx, name, true); err != nil {
			return err
		}
		l = s.logs[name]
		if l == nil {
			return nil
		}
	}
	return s.poll(l)
}

// poll delivers l's new records as changes.
func (s *subscription) poll(l *followedLog) error {
	err := l.r.Poll(func(ev Event) error {
		c, ok := l.change(ev)
		if !ok {
			return nil
		}
		return s.fn(c)
	})
	return logError(l.name, err)
}

// change turns one record into a change, keeping what l knows of the
// state up to date.
func (l *followedLog) change(ev Event) (StateChange, bool) {
	c := StateChange{Session: l.name, Seq: ev.Seq, TS: ev.TS, Prev: l.state, PrevSince: l.since}
	switch ev.Type {
	case EventState:
		c.Kind, c.State, c.Since, c.Source = ChangeState, ev.Text, ev.TS, ev.Reason
		if len(ev.Detail) > 0 {
			var d agentstate.Detail
			if json.Unmarshal(ev.Detail, &d) == nil {
				c.Detail = &d
			}
		}
		prompt := ""
		if c.Detail != nil {
			prompt = c.Detail.PromptID
		}
		if ev.Text == l.state && !l.since.IsZero() && l.prompt == "" && prompt != "" {
			// The same wait told again with what it asks (a hook's
			// prompt, then the screen's choices and prompt id; the
			// Tracker's Again): since and the state before are kept.
			c.Since, c.Prev, c.PrevSince = l.since, l.prev, l.prevSince
		} else {
			l.prev, l.prevSince = l.state, l.since
		}
		l.prompt = prompt
		switch agentstate.State(ev.Text) {
		case agentstate.Waiting:
			if !l.turnStart.IsZero() {
				c.Turn = ev.TS.Sub(l.turnStart)
			}
			l.turnStart = time.Time{}
		case agentstate.Working:
			// A turn is the agent's work since the person last gave it
			// something: a prompt, or an answer to what it asked.
			if l.turnStart.IsZero() || agentstate.State(l.state).Asks() {
				l.turnStart = ev.TS
			}
		}
		l.state, l.since = c.State, c.Since
		return c, true
	case EventExit:
		c.Kind = ChangeExited
		c.Termination, c.ExitCode, c.Signal, c.Reason = ev.Termination, ev.ExitCode, ev.Signal, ev.Text
	case EventRestarted:
		c.Kind = ChangeRestarted
		c.Termination, c.ExitCode, c.Signal, c.Reason = ev.Termination, ev.ExitCode, ev.Signal, ev.Text
		l.restarting = true
	case EventMarker:
		if !strings.HasPrefix(ev.Text, startedMarker) {
			return StateChange{}, false
		}
		if l.restarting {
			l.restarting = false
			return StateChange{}, false
		}
		c.Kind, c.Status, c.Reason = ChangeSpawned, StatusRunning, ev.Text
	default:
		return StateChange{}, false
	}
	// The program's life changed: its agent's state starts afresh.
	l.state, l.since, l.turnStart = "", ev.TS, time.Time{}
	return c, true
}
