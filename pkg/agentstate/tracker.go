package agentstate

import "time"

// Source says where a reading came from.
type Source string

// The sources a Tracker fuses.
const (
	SourceScreen Source = "screen" // the classifier over the rendered screen (or, for a program that is no agent, the kernel's busy/ready)
	SourceHook   Source = "hook"   // the CLI's own hook
)

// Transition is one change of a session's state.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	At     time.Time `json:"at"`
	Source Source    `json:"source"`
	Detail Detail    `json:"detail,omitempty"`
	// Hook is the hook event that caused it ("" from the screen).
	Hook string `json:"hook,omitempty"`
	// Again marks the same wait told again with more of what it asks
	// (From == To; since unchanged): a hook's prompt, then the screen's
	// choices and prompt id.
	Again bool `json:"again,omitempty"`
}

// DefaultHookGrace is how long a hook's word outweighs a screen that
// disagrees: the CLI draws its screen a few frames after its hook runs
// (a Stop hook while the spinner is still drawn, UserPromptSubmit before
// the spinner shows), and a reading taken in between must not flip the
// state back and forth.
const DefaultHookGrace = 1500 * time.Millisecond

// Tracker fuses one session's readings into its state. It is not safe for
// concurrent use: the session's owner feeds it from one goroutine (or
// under the session's lock).
//
// The rule:
//
//   - A hook is exact about what it reports: its state applies at once
//     (Unknown events only add facts: session id, transcript path).
//   - The screen sees what no hook reports (dialogs: trust, API key, an
//     error banner; a turn the person interrupted, which fires no Stop).
//     A screen reading of NeedsApproval or NeedsAttention applies at once:
//     a dialog on screen is there, whatever a hook said.
//   - Any other screen reading (Working, Waiting) that disagrees with a
//     hook less than HookGrace old is ignored as the screen lagging the
//     hook; after that the screen wins, since the hook may have missed
//     the change (Esc at a prompt, a crash of the CLI's hook runner).
//   - Unknown screen readings (a blank or half-drawn screen) change
//     nothing.
//   - A hook that says the turn is over (Stop, AfterAgent) does not
//     clear a dialog or banner the screen shows: Gemini CLI says
//     AfterAgent after a failed request whose error stays on screen. The
//     screen clears it when it goes.
//   - Entering the state the session is already in is no transition: a
//     PermissionRequest hook then the menu on screen is one
//     needs_approval, whose detail the screen completes (choices, prompt
//     id). A new prompt while one is shown (another prompt id on screen)
//     is a transition to the same state, so a notification can be
//     replaced.
type Tracker struct {
	// HookGrace overrides DefaultHookGrace when not zero.
	HookGrace time.Duration

	state  State
	detail Detail
	since  time.Time
	source Source // of the current state
	// hookState and hookAt are the last hook's state (not Unknown) and time.
	hookState State
	hookAt    time.Time
	// Facts the hooks told.
	sessionID, transcript string
	ended                 bool
}

// NewTracker returns a tracker in state Unknown since now.
func NewTracker(now time.Time) *Tracker {
	return &Tracker{state: Unknown, since: now}
}

// State returns the current state, its detail and when it was entered.
func (t *Tracker) State() (State, Detail, time.Time) { return t.state, t.detail, t.since }

// Conversation returns what the hooks told of the CLI's own session: its
// id and transcript path (empty until a hook said), and whether it ended.
func (t *Tracker) Conversation() (sessionID, transcriptPath string, ended bool) {
	return t.sessionID, t.transcript, t.ended
}

func (t *Tracker) grace() time.Duration {
	if t.HookGrace > 0 {
		return t.HookGrace
	}
	return DefaultHookGrace
}

// Hook takes a hook's event received at at; it returns the transition it
// caused, if any.
//
// The CLI's session id is learned from the first hook that carries one and
// changes only on SessionStart (a new conversation: /clear, /new, resume);
// an event of another id is dropped whole, because Codex runs side
// threads (the title of a conversation is a turn of its own) whose notify
// calls say agent-turn-complete while the session's turn goes on.
func (t *Tracker) Hook(at time.Time, e Event) (Transition, bool) {
	if e.SessionID != "" && t.sessionID != "" && e.SessionID != t.sessionID && e.Name != "SessionStart" {
		return Transition{}, false
	}
	if e.SessionID != "" {
		t.sessionID = e.SessionID
	}
	if e.TranscriptPath != "" {
		t.transcript = e.TranscriptPath
	}
	if e.Ended {
		t.ended = true
	}
	if e.State == Unknown || e.State == "" {
		return Transition{}, false
	}
	t.hookState, t.hookAt = e.State, at
	if e.State == Waiting && t.state.Asks() && t.source == SourceScreen {
		// The turn ended on a dialog or banner the screen shows (Gemini
		// CLI says AfterAgent after a failed request): the screen clears
		// it when it goes.
		return Transition{}, false
	}
	if e.State == t.state {
		if e.State.Asks() {
			t.detail = mergeDetail(t.detail, e.Detail)
		}
		return Transition{}, false
	}
	return t.move(at, e.State, e.Detail, SourceHook, e.Name), true
}

// Screen takes a reading of the screen (Classify's result) taken at at;
// it returns the transition it caused, if any.
func (t *Tracker) Screen(at time.Time, s State, d Detail) (Transition, bool) {
	if s == Unknown || s == "" {
		return Transition{}, false
	}
	if s == t.state {
		if s.Asks() {
			if t.detail.PromptID != "" && d.PromptID != "" && d.PromptID != t.detail.PromptID {
				return t.move(at, s, d, SourceScreen, ""), true // another prompt
			}
			had := t.detail.PromptID
			t.detail = mergeDetail(d, t.detail)
			if had == "" && t.detail.PromptID != "" {
				// A hook told the prompt before the CLI drew it; the
				// screen now shows its choices: the same wait, told
				// again with what a person can answer (the prompt id
				// approve takes). The state and its since are kept.
				return Transition{From: s, To: s, At: at, Source: SourceScreen, Detail: t.detail, Again: true}, true
			}
		}
		return Transition{}, false
	}
	if !s.Asks() && t.hookState == t.state && !t.hookAt.IsZero() && at.Sub(t.hookAt) < t.grace() {
		return Transition{}, false // the screen lags the hook
	}
	return t.move(at, s, d, SourceScreen, ""), true
}

func (t *Tracker) move(at time.Time, s State, d Detail, src Source, hook string) Transition {
	tr := Transition{From: t.state, To: s, At: at, Source: src, Detail: d, Hook: hook}
	t.state, t.detail, t.since, t.source = s, d, at, src
	if !s.Asks() {
		t.detail = Detail{}
	}
	return tr
}

// mergeDetail fills a's empty fields from b: the screen's choices and
// prompt id with the hook's tool and exact command, or the reverse.
func mergeDetail(a, b Detail) Detail {
	if a.Kind == "" {
		a.Kind = b.Kind
	}
	if a.Tool == "" {
		a.Tool = b.Tool
	}
	if a.Subject == "" {
		a.Subject = b.Subject
	}
	if a.Question == "" {
		a.Question = b.Question
	}
	if a.Message == "" {
		a.Message = b.Message
	}
	if len(a.Choices) == 0 {
		a.Choices = b.Choices
	}
	if a.PromptID == "" {
		a.PromptID = b.PromptID
	}
	return a
}
