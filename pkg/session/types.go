package session

import (
	"time"
)

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
	// Cols and Rows are the terminal size; zero is DefaultCols/DefaultRows.
	Cols, Rows int
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
	PID          int           `json:"pid,omitempty"` // the program's
	Command      []string      `json:"command"`
	CreatedAt    time.Time     `json:"created_at"`
	Age          time.Duration `json:"age_ns"`
	LastActivity time.Time     `json:"last_activity,omitzero"`
	Termination  Termination   `json:"termination,omitempty"`
	ExitCode     *int          `json:"exit_code,omitempty"`
	Signal       string        `json:"signal,omitempty"`
}

// StopRequest ends a session's program.
type StopRequest struct {
	Name string
	// Signal is sent first: a name ("TERM", "SIGINT", "hup") or number;
	// empty is SIGTERM.
	Signal string
	// Grace is how long to wait before SIGKILL; zero is DefaultStopGrace.
	Grace time.Duration
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

// AskRequest delivers a question and collects the answer.
type AskRequest struct {
	Name string
	Text string
	// Timeout is the ask's deadline; zero is DefaultAskTimeout.
	Timeout time.Duration
	// Idle ends the ask once the program has been quiet this long after it
	// started answering. When both Idle and Until are zero, Idle is
	// DefaultAskIdle.
	Idle time.Duration
	// Until ends the ask when this regular expression (RE2) matches the
	// answer so far, or the visible screen (rows joined by "\n", trailing
	// spaces removed) once the answer has begun and the screen changed.
	Until string
	// LockTimeout is how long to wait for an ask in progress on the same
	// session; zero is DefaultLockTimeout, negative does not wait.
	LockTimeout time.Duration
}

// Reasons an ask or wait ended.
const (
	ReasonIdle    = "idle"
	ReasonMatched = "matched"
	ReasonExited  = "exited"
)

// AskResult is an answered ask.
type AskResult struct {
	Name string `json:"name"`
	// Answer is what the program printed in reply, as plain text: escapes
	// removed, the echo of the question and the trailing prompt left out.
	Answer string `json:"answer"`
	// Screen is the visible screen at the end.
	Screen []string `json:"screen"`
	// Reason is ReasonIdle, ReasonMatched or ReasonExited.
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
}

// SendRequest delivers input without waiting. Exactly one of Text and Keys
// is given.
type SendRequest struct {
	Name string
	Text string
	Keys []string // names, see KeyBytes
}

// WaitRequest waits for a condition; at least one of Until, Idle and Exit is
// given, and the first to hold ends the wait.
type WaitRequest struct {
	Name string
	// Until is a regular expression matched against the screen and the
	// output since the wait began.
	Until string
	// Idle holds when the program has been quiet this long.
	Idle time.Duration
	// Exit holds when the program has ended (at once if it already has).
	Exit bool
	// Timeout is the deadline; zero is DefaultWaitTimeout.
	Timeout time.Duration
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
	// Follow keeps delivering new events until ctx ends or the session ends.
	Follow bool
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
	mAttach   = "worker.attach"
	nOutput   = "worker.output"
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
}

type sendParams struct {
	Data []byte `json:"data"`
}

type askParams struct {
	Text        string        `json:"text"`
	Timeout     time.Duration `json:"timeout"`
	Idle        time.Duration `json:"idle"`
	Until       string        `json:"until"`
	LockTimeout time.Duration `json:"lock_timeout"`
}

type waitParams struct {
	Until   string        `json:"until"`
	Idle    time.Duration `json:"idle"`
	Exit    bool          `json:"exit"`
	Timeout time.Duration `json:"timeout"`
}

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
