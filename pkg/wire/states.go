package wire

// The values a client compares against or sends: statuses, termination
// categories, the reasons an ask or wait ended, act outcomes, reconcile
// actions, event-log record types, an ask's route and an action's kind,
// button and scroll direction. They
// are the contract's, spelled here once; the domain packages have their own
// Go constants with the same spelling, and pkg/daemon converts between
// them (a test there checks that every domain value has its wire twin).

// Status is a session's status.
type Status string

// The session statuses, in the order a session goes through them.
const (
	StatusStarting   Status = "starting"
	StatusRunning    Status = "running"
	StatusExiting    Status = "exiting"
	StatusExited     Status = "exited"
	StatusFailed     Status = "failed"
	StatusDestroying Status = "destroying"
	StatusDestroyed  Status = "destroyed"
	// StatusBroken is a session whose manifest is missing or damaged; its
	// reason says why. agent.stop ends whatever of it runs, agent.rm
	// (force while a worker of it runs) removes it.
	StatusBroken Status = "broken"
	// StatusUnresponsive is a live session whose worker has not answered
	// the daemon within its deadline (stopped by SIGSTOP, or starved);
	// silent_ms says for how long. Only agent.stop with force is allowed
	// (it kills the worker and the program); once the worker answers again
	// the session is running.
	StatusUnresponsive Status = "unresponsive"
)

// Statuses lists every Status. Read-only.
var Statuses = []Status{StatusStarting, StatusRunning, StatusExiting, StatusExited, StatusFailed, StatusDestroying, StatusDestroyed, StatusBroken, StatusUnresponsive}

// Termination is how a session ended; empty while it runs.
type Termination string

// The termination categories.
const (
	TermCleanExit    Termination = "clean_exit"    // the program exited with status 0
	TermNonzeroExit  Termination = "nonzero_exit"  // the program exited with a non-zero status
	TermSignalExit   Termination = "signal_exit"   // a signal killed the program
	TermHostDeath    Termination = "host_death"    // its worker died, taking the program with it
	TermSpawnFailure Termination = "spawn_failure" // the program could not be started
)

// Terminations lists every Termination. Read-only.
var Terminations = []Termination{TermCleanExit, TermNonzeroExit, TermSignalExit, TermHostDeath, TermSpawnFailure}

// AskReason is why an ask ended, in AskResult.Reason.
type AskReason string

// Reasons an ask ended.
const (
	AskReasonPrompt  AskReason = "prompt"  // the program's prompt came back and it was quiet
	AskReasonIdle    AskReason = "idle"    // quiet for the idle time (no prompt learned, or idle_ms given)
	AskReasonMatched AskReason = "matched" // until matched the answer
	AskReasonExited  AskReason = "exited"  // the program ended
	AskReasonReply   AskReason = "reply"   // a reply came through the session's channel
	// AskReasonIncomplete: the program waits for the rest of an input (a
	// continuation prompt, or a question of its own); the next ask is typed
	// as that rest (AskResult.Continued).
	AskReasonIncomplete AskReason = "incomplete"
)

// ReadySignal is how an ask knew its program waited, in
// AskResult.ReadySignal.
type ReadySignal string

// The signals.
const (
	ReadySignalRead   ReadySignal = "read"   // the kernel: blocked reading its terminal
	ReadySignalPrompt ReadySignal = "prompt" // the look of the prompt and silence
)

// Input is whether a running program waits for input, in
// SessionInfo.Input and SessionRow.Input.
type Input string

// The input states.
const (
	InputReady Input = "ready" // blocked reading its terminal, nothing typed left unread
	InputBusy  Input = "busy"  // running, sleeping, reading something else, or stopped
)

// WaitReason is why a wait's condition held, in WaitResult.Reason.
type WaitReason string

// Reasons a wait ended.
const (
	WaitReasonMatched WaitReason = "matched" // until matched the screen or the output
	WaitReasonIdle    WaitReason = "idle"    // quiet for the idle time
	WaitReasonExited  WaitReason = "exited"  // the program ended
	WaitReasonReady   WaitReason = "ready"   // the program waits for input
	WaitReasonState   WaitReason = "state"   // the session entered one of the states asked for
)

// ActOutcome is how an act batch ended, in ActResult.Outcome.
type ActOutcome string

// Act outcomes. All but ok come with an error response whose details are
// the ActResult.
const (
	ActOK          ActOutcome = "ok"
	ActRefused     ActOutcome = "refused"      // acting disabled, or the kill switch tripped
	ActInvalid     ActOutcome = "invalid"      // an action the validator refused
	ActLockTimeout ActOutcome = "lock_timeout" // another batch held the screen
	ActBusy        ActOutcome = "busy"         // too many batches queued
	ActUnavailable ActOutcome = "unavailable"  // no X display
	ActTimeout     ActOutcome = "timeout"      // the batch ran past its budget
	ActCanceled    ActOutcome = "canceled"     // the caller went away
	ActError       ActOutcome = "error"        // anything else
)

// ReconcileAction is what agent.reconcile did to one session.
type ReconcileAction string

// Reconcile actions.
const (
	ReconcileAttached    ReconcileAction = "attached"      // a live worker answered; the session is managed again
	ReconcileMarkedDead  ReconcileAction = "marked_failed" // the worker is gone; the session is now failed (host_death)
	ReconcileLeftUnknown ReconcileAction = "left_unknown"  // could not tell; left as it was
	ReconcileEnded       ReconcileAction = "ended"         // already ended; nothing to do
	// ReconcileBroken: the manifest is missing or damaged and no worker
	// runs; kept, listed as broken, agent.rm removes it.
	ReconcileBroken ReconcileAction = "broken"
	// ReconcileOrphanWorker: the manifest is missing or damaged but a
	// worker runs; listed as broken, agent.stop ends it.
	ReconcileOrphanWorker ReconcileAction = "orphan_worker"
	// ReconcileRemovedLeftover: a directory with nothing to keep, or what
	// an interrupted removal left; removed.
	ReconcileRemovedLeftover ReconcileAction = "removed_leftover"
	// ReconcileRestarted: the worker was gone and the session's restart
	// policy started it again (after a reboot, or restart always).
	ReconcileRestarted ReconcileAction = "restarted"
)

// EventType is the kind of an event-log record, in LogEvent.Type.
type EventType string

// The event-log record types.
const (
	EventOutput EventType = "output" // bytes the program wrote (Data)
	EventInput  EventType = "input"  // bytes delivered to the program (Data)
	EventAsk    EventType = "ask"    // an ask began (Text)
	EventAnswer EventType = "answer" // an ask ended (Text, Reason)
	EventResize EventType = "resize" // the terminal was resized (Cols, Rows)
	EventSignal EventType = "signal" // a signal was sent to the program (Signal)
	EventExit   EventType = "exit"   // the program ended (ExitCode or Signal, Termination)
	EventMarker EventType = "marker" // a note from agentd itself (Text)
	EventGap    EventType = "gap"    // records that could not be recorded (Count, Bytes, Text)
	// EventRestarted: the program was started again (Reason: reboot, exit
	// or by_hand; Text: the boot id, how the old program ended, what runs
	// now; the old end in Termination, ExitCode, Signal). The new
	// program's records follow.
	EventRestarted EventType = "restarted"
)

// EventTypes lists every EventType. Read-only.
var EventTypes = []EventType{EventOutput, EventInput, EventAsk, EventAnswer, EventResize, EventSignal, EventExit, EventMarker, EventGap, EventRestarted}

// RestartPolicy is when a session is started again after it ends, in
// SpawnParams.Restart.
type RestartPolicy string

// The restart policies.
const (
	RestartNo       RestartPolicy = "no"        // never by itself; agent.restart still can
	RestartOnReboot RestartPolicy = "on-reboot" // when agentd starts after the machine rebooted under it
	// RestartAlways: after a reboot too, and whenever the program exits
	// non-zero, is killed by a signal nobody asked for or loses its
	// worker, with back-off (1 s doubling to 60 s) and a ceiling (5 in 10
	// minutes, then failed: "restart loop").
	RestartAlways RestartPolicy = "always"
)

// RestartPolicies lists every RestartPolicy. Read-only.
var RestartPolicies = []RestartPolicy{RestartNo, RestartOnReboot, RestartAlways}

// AskVia is where an ask goes, in AskParams.Via.
type AskVia string

// Ask routes.
const (
	// ViaAuto (or empty): the session's channel when one is registered
	// for it, else its terminal.
	ViaAuto    AskVia = "auto"
	ViaPTY     AskVia = "pty"     // the terminal, even when a channel is registered
	ViaChannel AskVia = "channel" // the channel only; invalid_params when the session has none
)

// AskVias lists every AskVia. Read-only.
var AskVias = []AskVia{ViaAuto, ViaPTY, ViaChannel}

// ActionKind is what one step of an act batch does, in Action.Kind.
type ActionKind string

// Action kinds.
const (
	ActionClick  ActionKind = "click"
	ActionMove   ActionKind = "move"
	ActionDown   ActionKind = "down"
	ActionUp     ActionKind = "up"
	ActionType   ActionKind = "type"
	ActionKey    ActionKind = "key"
	ActionScroll ActionKind = "scroll"
	ActionWait   ActionKind = "wait"
	ActionFocus  ActionKind = "focus"
	// ActionKeyDown holds a key (Key, Modifiers) until an ActionKeyUp of
	// the same key or the end of the batch.
	ActionKeyDown ActionKind = "key_down"
	ActionKeyUp   ActionKind = "key_up"
)

// ActionKinds lists every ActionKind. Read-only.
var ActionKinds = []ActionKind{ActionClick, ActionMove, ActionDown, ActionUp, ActionType, ActionKey, ActionScroll, ActionWait, ActionFocus, ActionKeyDown, ActionKeyUp}

// Button is a mouse button, in Action.Button.
type Button string

// Mouse buttons; empty is left.
const (
	ButtonLeft   Button = "left"
	ButtonRight  Button = "right"
	ButtonMiddle Button = "middle"
)

// Buttons lists every Button. Read-only.
var Buttons = []Button{ButtonLeft, ButtonRight, ButtonMiddle}

// ScrollDirection is which way a scroll action turns the wheel, in
// Action.Direction.
type ScrollDirection string

// Scroll directions.
const (
	ScrollUp    ScrollDirection = "up"
	ScrollDown  ScrollDirection = "down"
	ScrollLeft  ScrollDirection = "left"
	ScrollRight ScrollDirection = "right"
)

// ScrollDirections lists every ScrollDirection. Read-only.
var ScrollDirections = []ScrollDirection{ScrollUp, ScrollDown, ScrollLeft, ScrollRight}
