package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/pkg/agentstate"
)

// An agent CLI's state (issue 27): the worker reads its rendered screen
// after output settles (classifyAfter), classifies it with the CLI's
// classifier (pkg/agentstate) and keeps the result in a Tracker, which the
// CLI's hooks will also feed. Each change is an event-log record ("state",
// its detail as JSON) and is published with the status, so list and status
// answer from the heartbeat and wait --state and approve act on it.

// classifyAfter is how long output must settle before the screen is
// classified again: a classification costs 0.1-0.25 ms, and a CLI redraws
// its screen many times a second while it works.
const classifyAfter = 40 * time.Millisecond

// spawnAgent is the agent CLI a spawn runs, for its state: as it says,
// else detected from its command (agentstate.Detect, which sees through
// wrappers such as env and unshare).
func spawnAgent(req SpawnRequest) string {
	a := agentstate.Agent(req.Agent)
	if req.Agent == "" {
		a = agentstate.Detect(req.Argv)
	}
	if a == agentstate.None {
		return ""
	}
	return string(a)
}

// ValidateAgent checks a spawn's agent name.
func ValidateAgent(s string) error {
	if s == "" {
		return nil
	}
	if _, err := agentstate.ParseAgent(s); err != nil {
		return errorf(ErrInvalid, "%v", err)
	}
	return nil
}

// startAgentState sets up the tracker of an agent CLI's session (w.mu not
// needed: called before the pumps start).
func (w *worker) startAgentState() {
	if w.spec.Keep.Agent == "" {
		return
	}
	w.agent = agentstate.Agent(w.spec.Keep.Agent)
	w.tracker = agentstate.NewTracker(time.Now())
}

// outputForStateLocked notes new output (w.mu held): the screen is
// classified once it has settled for classifyAfter, and at least every
// classifyMax while output never settles (a spinner redraws all the time
// the agent works).
func (w *worker) outputForStateLocked() {
	if w.tracker == nil {
		return
	}
	now := time.Now()
	if w.classifyTimer == nil {
		w.classifyFirst = now
		w.classifyTimer = time.AfterFunc(classifyAfter, w.classifyNow)
		return
	}
	if w.classifyFirst.IsZero() {
		w.classifyFirst = now // the first output since the last classification
	}
	if now.Sub(w.classifyFirst) < classifyMax {
		w.classifyTimer.Reset(classifyAfter)
	}
}

// classifyMax bounds how long a screen that never settles goes
// unclassified.
const classifyMax = 250 * time.Millisecond

// classifyNow reads the screen and feeds the tracker.
func (w *worker) classifyNow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.classifyFirst = time.Time{}
	w.classifyLocked(time.Now())
}

// classifyLocked classifies the screen as it is and records a change of
// state (w.mu held); it returns the state and detail now.
func (w *worker) classifyLocked(at time.Time) (agentstate.State, agentstate.Detail) {
	if w.tracker == nil || w.status != StatusRunning {
		return "", agentstate.Detail{}
	}
	scr := w.screenLocked()
	x, y := scr.Cursor()
	st, d := agentstate.Classify(w.agent, agentstate.Screen{Lines: scr.Lines(), CursorX: x, CursorY: y, AltScreen: scr.Alt()})
	if d.PromptID != "" && d.PromptID != w.promptShown {
		w.promptShown, w.promptShownAt = d.PromptID, at
	}
	if tr, ok := w.tracker.Screen(at, st, d); ok {
		w.recordStateLocked(tr)
	}
	s, det, _ := w.tracker.State()
	return s, det
}

// recordStateLocked writes a state change to the event log and publishes
// it (w.mu held).
func (w *worker) recordStateLocked(tr agentstate.Transition) {
	ev := Event{Type: EventState, Text: string(tr.To), Reason: string(tr.Source)}
	if tr.To.Asks() {
		if b, err := json.Marshal(tr.Detail); err == nil {
			ev.Detail = b
		}
	}
	w.appendLocked(&ev)
	w.broadcastLocked()
}

// stateLocked fills a status with the agent's state (w.mu held).
func (w *worker) stateLocked(st *liveStatus) {
	if w.tracker == nil {
		return
	}
	s, d, since := w.tracker.State()
	st.Agent, st.State, st.Since = string(w.agent), string(s), since
	h := w.hooks
	st.Hooks = &h
	if s.Asks() {
		st.Detail = &d
	}
}

// validateStates checks a wait's states.
func validateStates(states []string) error {
	for _, s := range states {
		switch agentstate.State(s) {
		case agentstate.Working, agentstate.Waiting, agentstate.NeedsApproval, agentstate.NeedsAttention, agentstate.Busy, agentstate.Ready:
		default:
			return errorf(ErrInvalid, "unknown state %q; use working, waiting, needs_approval, needs_attention (agent CLIs), ready or busy", s)
		}
	}
	return nil
}

// inStatesLocked reports whether the session's state is one of states
// (w.mu held): an agent CLI's from its tracker, any program's ready or
// busy from the kernel.
func (w *worker) inStatesLocked(states []string) bool {
	var now []string
	if w.tracker != nil {
		s, _, _ := w.tracker.State()
		now = append(now, string(s))
	}
	st := w.lookLocked()
	if st.Known {
		if st.Ready && w.waitsForPersonLocked(st) {
			now = append(now, string(agentstate.Ready))
		} else if !st.Ready {
			now = append(now, string(agentstate.Busy))
		}
	}
	for _, s := range states {
		for _, n := range now {
			if s == n {
				return true
			}
		}
	}
	return false
}

// approveParams answer an agent's prompt as a person would: the option of
// the role given (approve or deny), only while the prompt on screen is the
// one the caller saw (PromptID; empty: whatever asks now).
type approveParams struct {
	Role     string `json:"role"`
	PromptID string `json:"prompt_id,omitempty"`
}

// ApproveResult is what an approve or deny answered.
type ApproveResult struct {
	Name     string `json:"name"`
	PromptID string `json:"prompt_id"`
	// Choice is the option picked, as the menu labels it.
	Choice string `json:"choice"`
	// What the prompt asked: its kind, tool and subject.
	Kind    string `json:"kind"`
	Tool    string `json:"tool,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// approve answers the agent's prompt: it reads the screen again (the
// prompt must be on it now, the same one when PromptID is given) and types
// the chosen option's keys, as a person would.
func (w *worker) approve(ctx context.Context, p approveParams) (*ApproveResult, error) {
	role := agentstate.Role(p.Role)
	if role != agentstate.RoleApprove && role != agentstate.RoleDeny {
		return nil, errorf(ErrInvalid, "approve takes approve or deny, not %q", p.Role)
	}
again:
	w.mu.Lock()
	if err := w.requireRunningLocked(string(role)); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	if w.tracker == nil {
		w.mu.Unlock()
		return nil, errorf(ErrInvalidStatus, "session %q runs no agent CLI whose prompts agentd knows (spawn --agent claude|codex|gemini says which one it is)", w.spec.Name)
	}
	s, d := w.classifyLocked(time.Now())
	shows := describeScreenState(s, d)
	c, ok := d.Choice(role)
	switch {
	case !s.Asks() || len(d.Choices) == 0:
		w.mu.Unlock()
		return nil, errorf(ErrInvalidStatus, "session %q asks nothing now: it is %s; nothing was typed", w.spec.Name, shows)
	case p.PromptID != "" && p.PromptID != d.PromptID:
		w.mu.Unlock()
		return nil, errorf(ErrInvalidStatus, "session %q asks something else now (prompt %s, not %s): %s; nothing was typed: look again (agentctl status %s) and answer that", w.spec.Name, d.PromptID, p.PromptID, shows, w.spec.Name)
	case !ok:
		w.mu.Unlock()
		return nil, errorf(ErrInvalidStatus, "session %q's prompt has no option to %s (%s); nothing was typed: answer it by hand (agentctl attach %s)", w.spec.Name, role, shows, w.spec.Name)
	}
	if left := approveSettle - time.Since(w.promptShownAt); w.promptShown == d.PromptID && left > 0 {
		// A prompt just drawn: the CLI may not read keys for it yet
		// (Claude Code drew a prompt and dropped a key typed within
		// milliseconds of it). A heuristic, as a person's reading time
		// is: wait for the prompt to be approveSettle old, then read the
		// screen again.
		w.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		goto again
	}
	w.mu.Unlock()
	keys := []byte(c.Text)
	for _, k := range c.Keys {
		b, err := KeyBytes(k)
		if err != nil {
			return nil, fmt.Errorf("the option %q of session %q: %w", c.Label, w.spec.Name, err)
		}
		keys = append(keys, b...)
	}
	if err := w.writeInput(ctx, keys, true); err != nil {
		return nil, err
	}
	return &ApproveResult{Name: w.spec.Name, PromptID: d.PromptID, Choice: c.Label, Kind: string(d.Kind), Tool: d.Tool, Subject: d.Subject}, nil
}

// approveSettle is how old a prompt must be on screen before approve
// types into it.
const approveSettle = 250 * time.Millisecond

// describeScreenState says in words what a state and its detail show.
func describeScreenState(s agentstate.State, d agentstate.Detail) string {
	if s == "" {
		return "unknown"
	}
	out := string(s)
	var what []string
	for _, x := range []string{string(d.Kind), d.Tool, d.Subject} {
		if x != "" {
			what = append(what, x)
		}
	}
	if len(what) > 0 {
		out += " (" + strings.Join(what, ": ") + ")"
	}
	return out
}
