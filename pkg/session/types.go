package session

import (
	"time"

	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/termmodel"
)

// MaxSpawnBytes bounds a spawn's argv and, apart, its environment (the
// bytes of each string plus one for its NUL, as execve counts them). A
// session's argv is kept in memory and in its manifest and sent in every
// status; a megabyte of it in each of 256 sessions pinned hundreds of MiB
// and made list answers pass the frame cap. Linux itself refuses one
// string over 128 KiB (MAX_ARG_STRLEN); a command line longer than this
// belongs in a file the program reads.
const MaxSpawnBytes = 256 << 10

// MaxCwdBytes bounds a spawn's working directory: PATH_MAX, the longest
// path the kernel resolves.
const MaxCwdBytes = 4096

// SpawnRequest starts a session.
type SpawnRequest struct {
	// Name is the session's name, see ValidateName.
	Name string
	// Argv is the program and its arguments; Argv[0] is looked up in the
	// PATH of the program's environment when it holds no '/'.
	Argv []string
	// Cwd is the program's working directory, an absolute path; empty is
	// the user's home directory.
	Cwd string
	// Env adds to (and overrides) the daemon's environment, "KEY=value"
	// each. AGENTD_SESSION and AGENTD_SOCKET are always set by agentd; TERM
	// defaults to xterm-256color.
	Env []string
	// Unset are variable names removed from the daemon's environment
	// before Env applies (a desktop's program loses WAYLAND_DISPLAY).
	Unset []string
	// Cols and Rows are the terminal size; zero is DefaultCols/DefaultRows.
	Cols, Rows int
	// Limits bound the session's cgroup (see Launcher); zero fields take
	// the launcher's defaults.
	Limits Limits
	// Worktree, when set, runs the program in a new git worktree of the
	// repository Cwd is in (see WorktreeRequest).
	Worktree *WorktreeRequest
	// Agent says which agent CLI the program is (claude, codex, gemini,
	// none), for its state (agentstate.go); empty is detected from Argv.
	Agent string
	// Restart is when the session is started again after it ends (see
	// RestartPolicy); empty is RestartNo.
	Restart RestartPolicy
	// Desktop names the agents' desktop the program runs on (its
	// variables are in Env), "new" for one made for it, kept in the
	// manifest with KeepDesktop so a restart binds it again (see
	// ManagerOptions.Desktop).
	Desktop     string
	KeepDesktop bool
	// NoHooks leaves an agent CLI's hooks unwired (hooks.go): its state
	// comes from the screen alone.
	NoHooks bool
}

// Info is a session's full status.
type Info struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Allows is what Status allows (from StatusTable).
	Allows      Allows      `json:"allows"`
	Termination Termination `json:"termination,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	WorkerPID   int         `json:"worker_pid,omitempty"`
	ProgramPID  int         `json:"program_pid,omitempty"`
	Cols        int         `json:"cols"`
	Rows        int         `json:"rows"`
	// Bytes is the program's output recorded so far, Events the event-log
	// records written, Asks the asks answered.
	Bytes  uint64 `json:"bytes"`
	Events uint64 `json:"events"`
	Asks   uint64 `json:"asks"`
	// LastActivity is the time of the last output or input (zero if none).
	LastActivity time.Time `json:"last_activity,omitzero"`
	// Input says whether the program waits for input (InputReady: blocked
	// reading its terminal, nothing typed left unread) or not (InputBusy),
	// as of the last heartbeat; "" when the kernel cannot tell or the
	// session is not running.
	Input string `json:"input,omitempty"`
	// Agent is the agent CLI the program is ("" for none); State what it
	// does (agentstate.State: working, waiting, needs_approval,
	// needs_attention), since Since, and Detail what it asks, if anything.
	Agent  string             `json:"agent,omitempty"`
	State  string             `json:"state,omitempty"`
	Since  time.Time          `json:"state_since,omitzero"`
	Detail *agentstate.Detail `json:"state_detail,omitempty"`
	// Hooks says whether the agent CLI reports through its hooks (nil for
	// other programs and ended sessions).
	Hooks *HookReport `json:"hooks,omitempty"`
	// SilentFor is how long the worker has not answered, set only with
	// StatusUnresponsive.
	SilentFor time.Duration `json:"silent_ns,omitempty"`
	// Manifest is the record on disk.
	Manifest Manifest `json:"manifest"`
}

// ListRequest filters List; an empty Status lists every session.
type ListRequest struct {
	Status []Status
}

// ListEntry is one row of List.
type ListEntry struct {
	Name         string        `json:"name"`
	Status       Status        `json:"status"`
	PID          int           `json:"pid,omitempty"` // the program's, while the session has not ended
	Command      []string      `json:"command"`
	CreatedAt    time.Time     `json:"created_at"`
	Age          time.Duration `json:"age_ns"`
	LastActivity time.Time     `json:"last_activity,omitzero"`
	// Input is InputReady or InputBusy for a running program, as of its
	// worker's last heartbeat; "" when unknown.
	Input string `json:"input,omitempty"`
	// Agent and State are an agent CLI's state as of the last heartbeat,
	// entered at Since.
	Agent       string      `json:"agent,omitempty"`
	State       string      `json:"state,omitempty"`
	Since       time.Time   `json:"state_since,omitzero"`
	Termination Termination `json:"termination,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	// Reason says why a session failed, is broken or is unresponsive, for
	// people.
	Reason string `json:"reason,omitempty"`
	// SilentFor is how long the worker has not answered, set only with
	// StatusUnresponsive.
	SilentFor time.Duration `json:"silent_ns,omitempty"`
	// Restarts counts the session's restarts (restart.go).
	Restarts int `json:"restarts,omitempty"`
	// Lease is who holds the session's keyboard (TakeOver), if anyone.
	Lease *Lease `json:"lease,omitempty"`
}

// StopRequest ends a session's program.
type StopRequest struct {
	Name string
	// Signal is sent first: a name ("TERM", "SIGINT", "hup") or number;
	// empty is SIGTERM.
	Signal string
	// Grace is how long to wait before SIGKILL; zero is DefaultStopGrace.
	Grace time.Duration
	// Force ends a session whose worker does not answer (unresponsive,
	// e.g. stopped by SIGSTOP): SIGKILL to the worker and the program's
	// process group and session, recorded as failed (host_death). A worker
	// that answers is stopped as without it.
	Force bool
}

// ExitInfo is how a session's program ended.
type ExitInfo struct {
	Name        string      `json:"name"`
	Status      Status      `json:"status"`
	Termination Termination `json:"termination"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	EndedAt     time.Time   `json:"ended_at,omitzero"`
	// AlreadyEnded is true when the session had ended before Stop.
	AlreadyEnded bool `json:"already_ended"`
}

// AskRequest delivers a question and collects the answer; see Manager.Ask
// for how an ask decides it is done.
type AskRequest struct {
	Name string `json:"-"` // the worker knows its session
	// Text is the question. Trailing line breaks are not typed (Enter
	// follows the text anyway); what is left must not be empty.
	Text string `json:"text"`
	// Timeout is the ask's deadline; zero is the Manager's (Timeouts).
	Timeout time.Duration `json:"timeout"`
	// Idle, when set, also ends the ask once the program has been quiet
	// this long after it reacted, prompt or not.
	Idle time.Duration `json:"idle"`
	// FallbackIdle is the quiet that ends an ask on a program whose prompt
	// could not be learned; zero is the Manager's (Timeouts).
	FallbackIdle time.Duration `json:"fallback_idle"`
	// Until, when set, is the only rule besides exit and the deadline: the
	// ask ends when this regular expression (RE2) matches the answer so far
	// (the rows after the question's echo, the cursor's row up to the
	// cursor with its spaces kept, e.g. "42\n>>> ").
	Until string `json:"until"`
	// LockTimeout is how long to wait for an ask in progress on the same
	// session, and then for the program's prompt to come back; zero is
	// the Manager's (Timeouts), negative does not wait.
	LockTimeout time.Duration `json:"lock_timeout"`
}

// Reasons an ask or wait ended. An ask's answer record in the event log
// may also carry ReasonTimeout, ReasonCanceled or ReasonInterrupted.
const (
	// ReasonPrompt: the program's prompt came back and it was quiet for a
	// moment (asks only).
	ReasonPrompt = "prompt"
	// ReasonIdle: the program was quiet for the idle time.
	ReasonIdle = "idle"
	// ReasonMatched: the until pattern matched.
	ReasonMatched = "matched"
	// ReasonExited: the program ended.
	ReasonExited = "exited"
	// ReasonIncomplete: the program waits for the rest of an input (a
	// continuation prompt, or a question of its own); the next ask is
	// typed as that rest (AskResult.Continued).
	ReasonIncomplete = "incomplete"
	// ReasonReady: a wait's program waits for input (WaitRequest.Ready).
	ReasonReady = "ready"
	// ReasonState: a wait's session entered one of its States.
	ReasonState = "state"
	// ReasonTimeout: the deadline passed first.
	ReasonTimeout = "timeout"
	// ReasonCanceled: the asker went away or cancelled.
	ReasonCanceled = "canceled"
	// ReasonInterrupted: the worker lost the connection the ask came on
	// (the daemon died or restarted).
	ReasonInterrupted = "interrupted"
	// ReasonFailed: the question could not be delivered in full.
	ReasonFailed = "failed"
)

// AskResult is an answered ask.
type AskResult struct {
	Name string `json:"name"`
	// Answer is what a person reads between the question and the
	// program's next prompt, from the rendered terminal: the rows after the
	// question's echo, trailing spaces and trailing blank rows removed.
	Answer string `json:"answer"`
	// Prompt is the prompt the ask ended at, when it ended at one.
	Prompt string `json:"prompt,omitempty"`
	// Truncated is true when the answer was longer than an ask keeps
	// (its start is missing; the event log has every byte).
	Truncated bool `json:"truncated,omitempty"`
	// Screen is the visible screen at the end.
	Screen []string `json:"screen"`
	// Reason is ReasonPrompt, ReasonIdle, ReasonMatched or ReasonExited.
	Reason  string        `json:"reason"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// FromSeq and ToSeq are the event-log range of the ask (its ask and
	// answer records included).
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	// Pasted is true when the text went as a bracketed paste.
	Pasted bool `json:"pasted"`
	// Resent is true when Enter had to be sent a second time.
	Resent bool `json:"resent"`
	// ReadySignal says how the ask knew the program was waiting:
	// SignalRead (the kernel: it was blocked reading its terminal) or
	// SignalPrompt (the look of its prompt and silence).
	ReadySignal string `json:"ready_signal"`
	// Continued is true when the question was typed as the rest of an
	// input the last ask left incomplete.
	Continued bool `json:"continued,omitempty"`
}

// SendRequest delivers input without waiting: Text, Keys, or Text then
// Keys in one write.
type SendRequest struct {
	Name string
	Text string
	Keys []string // names, see KeyBytes
}

// WaitRequest waits for a condition; at least one of Until, Idle and Exit is
// given, and the first to hold ends the wait.
type WaitRequest struct {
	Name string `json:"-"` // the worker knows its session
	// Until is a regular expression matched against the screen as it was
	// when the wait began and every row rendered after it, to the last row
	// with text; the cursor's row counts up to the cursor with its spaces
	// kept (so "(?m)^>>> $" matches a Python prompt at the cursor).
	Until string `json:"until"`
	// Idle holds when the program has been quiet this long.
	Idle time.Duration `json:"idle"`
	// Exit holds when the program has ended (at once if it already has).
	Exit bool `json:"exit"`
	// Ready holds when the program waits for input: blocked reading its
	// terminal with nothing typed left unread (see readiness.go). Where the
	// kernel cannot tell, the wait fails with ErrInvalid.
	Ready bool `json:"ready,omitempty"`
	// States holds when the session's state is one of these: an agent
	// CLI's (working, waiting, needs_approval, needs_attention), or any
	// program's ready or busy (as Ready tells).
	States []string `json:"states,omitempty"`
	// Timeout is the deadline; zero is the Manager's (Timeouts).
	Timeout time.Duration `json:"timeout"`
}

// WaitResult is a wait whose condition held.
type WaitResult struct {
	Name    string        `json:"name"`
	Reason  string        `json:"reason"` // ReasonMatched, ReasonIdle or ReasonExited
	Screen  []string      `json:"screen"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Seq     uint64        `json:"seq"`
}

// LogsRequest reads the event log.
type LogsRequest struct {
	Name string
	// FromSeq is the first seq wanted; 0 is the oldest kept.
	FromSeq uint64
	// Since skips the events stamped before it (zero: none).
	Since time.Time
	// Tail, when above zero, starts at the last Tail events instead (and
	// never before FromSeq).
	Tail int
	// Follow keeps delivering new events until ctx ends or the session ends.
	Follow bool
	// WholeRunes moves the bytes of a character split between two
	// successive output records into the first, for readers that turn
	// output into text record by record.
	WholeRunes bool
	// CaughtUp, when set, is called each time the read has delivered all
	// the log holds: at its end, and at each pause while following. An
	// error from it stops the read.
	CaughtUp func() error
}

// ReconcileReport is what Reconcile found and did.
type ReconcileReport struct {
	Sessions []ReconcileEntry `json:"sessions"`
	Took     time.Duration    `json:"took_ns"`
}

// Reconcile actions.
const (
	ActionAttached    = "attached"      // a live worker answered; the session is managed again
	ActionMarkedDead  = "marked_failed" // the worker is gone; the session is now failed (host_death)
	ActionUnreachable = "left_unknown"  // could not tell (e.g. the socket timed out); left as it was
	ActionEnded       = "ended"         // already ended; nothing to do
	// ActionBroken: the manifest is missing or damaged and no worker runs;
	// kept (it may hold a log worth reading), listed as broken, rm removes it.
	ActionBroken = "broken"
	// ActionOrphanWorker: the manifest is missing or damaged but a worker
	// runs (found by its socket or its process); listed as broken, stop ends
	// it.
	ActionOrphanWorker = "orphan_worker"
	// ActionRemovedLeftover: a directory with nothing to keep (no manifest,
	// no worker, no event) or what an interrupted removal left; removed.
	ActionRemovedLeftover = "removed_leftover"
	// ActionRestarted: the worker was gone and the session's restart
	// policy started it again (after a reboot, or RestartAlways).
	ActionRestarted = "restarted"
)

// ReconcileEntry is one session's outcome.
type ReconcileEntry struct {
	Name   string `json:"name"`
	Before Status `json:"before"`
	After  Status `json:"after"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// worker protocol: method names and payloads between Manager and worker.
const (
	mHello    = "worker.hello"
	mStatus   = "worker.status"
	mSend     = "worker.send"
	mAsk      = "worker.ask"
	mWait     = "worker.wait"
	mSnapshot = "worker.snapshot"
	mResize   = "worker.resize"
	mStop     = "worker.stop"
	// mAttach streams output as nOutput notifications and takes input
	// as mSend calls. Workers keep serving it, and the Manager falls back
	// to it, only for workers started by an older agentd, which know no
	// mAttachStream (workers outlive upgrades).
	mAttach = "worker.attach"
	// mAttachStream upgrades its connection to the raw terminal: output
	// bytes from the worker, input bytes to it, as agent.attach does on
	// agentd's socket.
	mAttachStream = "worker.attach_stream"
	mCancel       = "worker.cancel"
	mApprove      = "worker.approve"
	mHook         = "worker.hook"
	mRecord       = "worker.record"
	// mMark writes a marker record (a take-over, a hand-back: lease.go).
	mMark   = "worker.mark"
	nOutput = "worker.output"
)

// workerSpec is what the Manager hands a new worker on fd 3.
type workerSpec struct {
	Name       string    `json:"name"`
	Argv       []string  `json:"argv"`
	Cwd        string    `json:"cwd"`
	Env        []string  `json:"env"`
	EnvKeys    []string  `json:"env_keys"`
	Cols       int       `json:"cols"`
	Rows       int       `json:"rows"`
	SessionDir string    `json:"session_dir"`
	Socket     string    `json:"socket"`
	LogCap     int64     `json:"log_cap"`
	CreatedAt  time.Time `json:"created_at"`
	Worktree   *Worktree `json:"worktree,omitempty"`
	// Keep is what the worker keeps in every manifest it writes.
	Keep RestartState `json:"keep,omitzero"`
	// Hooks is the agentctl an agent CLI's hooks run (hooks.go), ""
	// when they are not wired, HooksOff then why.
	Hooks    string `json:"hooks,omitempty"`
	HooksOff string `json:"hooks_off,omitempty"`
}

// workerReady is the worker's answer on fd 3.
type workerReady struct {
	OK         bool   `json:"ok"`
	Error      string `json:"error,omitempty"`
	WorkerPID  int    `json:"worker_pid,omitempty"`
	ProgramPID int    `json:"program_pid,omitempty"`
}

// liveStatus is a worker's answer to worker.status and worker.hello.
type liveStatus struct {
	Name         string    `json:"name"`
	Status       Status    `json:"status"`
	WorkerPID    int       `json:"worker_pid"`
	ProgramPID   int       `json:"program_pid"`
	Cols         int       `json:"cols"`
	Rows         int       `json:"rows"`
	Bytes        uint64    `json:"bytes"`
	Events       uint64    `json:"events"`
	Asks         uint64    `json:"asks"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	Exit         ExitInfo  `json:"exit"`
	// Input is InputReady or InputBusy as the kernel tells it ("" when
	// it cannot), looked at when the status is asked for.
	Input string `json:"input,omitempty"`
	// Agent, State, Since and Detail are an agent CLI's state
	// (agentstate.go); empty for other programs.
	Agent  string             `json:"agent,omitempty"`
	State  string             `json:"state,omitempty"`
	Since  time.Time          `json:"state_since,omitzero"`
	Detail *agentstate.Detail `json:"state_detail,omitempty"`
	// Hooks says whether the agent CLI reports through its hooks.
	Hooks *HookReport `json:"hooks,omitempty"`
	// TokenDigest is the SHA-256 of the session's secret (TokenEnv in
	// the program's environment), in hex: what the Manager keeps to check
	// a token presented for a channel binding. The secret itself never
	// crosses the worker protocol (see the package doc, Session secret).
	TokenDigest string `json:"token_sha256,omitempty"`
	// Token is the secret itself, as workers of agentds before issue 21
	// sent it in their hello; read only to go on vouching for their
	// sessions, never sent.
	Token string `json:"token,omitempty"`
}

type sendParams struct {
	Data []byte `json:"data"`
}

// askParams is an AskRequest on the worker protocol, with the id that
// cancelParams names. The request's JSON tags are the protocol's field
// names (workers of an older agentd read the same fields).
type askParams struct {
	ID string `json:"id"`
	AskRequest
}

// cancelParams end a running ask as canceled (the asker went away), as
// opposed to a lost connection, which ends it as interrupted.
type cancelParams struct {
	ID string `json:"id"`
}

// recordParams put an ask answered elsewhere (through a channel) into the
// session's event log and asks counter.
type recordParams struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Reason   string `json:"reason"`
}

// markParams put a note from agentd into the session's event log.
type markParams struct {
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

// waitParams is a WaitRequest on the worker protocol.
type waitParams = WaitRequest

type resizeParams struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

type stopParams struct {
	Signal int           `json:"signal"`
	Grace  time.Duration `json:"grace"`
}

type outputNote struct {
	Data []byte `json:"data"`
}

// Snapshot is the screen as a person sees it (the terminal model's).
type Snapshot = termmodel.Snapshot
