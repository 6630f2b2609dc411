package wire

import (
	"encoding/json"
	"time"
)

// MaxDurationMS bounds every duration on the wire given in milliseconds
// (timeout_ms, idle_ms, lock_timeout_ms, grace_ms, and the channel
// methods' timeout_ms): 0 to 24 hours, 0 meaning the default. Longer is
// invalid_params naming the field and this range. The bound is checked
// before any arithmetic, so no value can wrap into a short or negative
// duration. Counts are bounded by their own limits (LogsParams.Limit,
// cols and rows, the act limits), each documented beside its field.
const MaxDurationMS = 24 * 60 * 60 * 1000

// Session methods (agent.*). Each has a parameter type named after it.
const (
	MethodSpawn     = "agent.spawn"
	MethodAsk       = "agent.ask"
	MethodList      = "agent.list"
	MethodStatus    = "agent.status"
	MethodStop      = "agent.stop"
	MethodRm        = "agent.rm"
	MethodReconcile = "agent.reconcile"
	MethodLogs      = "agent.logs"
	MethodSend      = "agent.send"
	MethodSnapshot  = "agent.snapshot"
	MethodWait      = "agent.wait"
	MethodResize    = "agent.resize"
	MethodAttach    = "agent.attach"
	MethodRestart   = "agent.restart"

	// NotifyLogEvent carries one event of a followed log (agent.logs with
	// follow): params are a LogEvent.
	NotifyLogEvent = "agent.log_event"
)

// SpawnParams start a session: a named program in a pseudo-terminal.
type SpawnParams struct {
	// Name matches [a-z0-9][a-z0-9._-]{0,62}, so it is safe as a path.
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	// Cwd is the working directory; empty is the user's home.
	Cwd string `json:"cwd,omitempty"`
	// Env adds variables to the program's environment. AGENTD_SESSION and
	// AGENTD_SOCKET are always set.
	Env map[string]string `json:"env,omitempty"`
	// Cols and Rows are the terminal size; zero is 120x40.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// MemoryMax (bytes) and CPUWeight (1 to 10000, 100 is every unit's
	// share) bound the session's own cgroup; zero takes the config's
	// session_memory_max and session_cpu_weight. They need a systemd user
	// manager: a daemon that forks its workers refuses them
	// (invalid_params).
	MemoryMax int64 `json:"memory_max,omitempty"`
	CPUWeight int   `json:"cpu_weight,omitempty"`
	// Desktop starts the program on an agent's desktop: a desktop's name,
	// or "new" for one made for this session, which goes away with it
	// unless KeepDesktop. The program gets DISPLAY, XAUTHORITY, the
	// desktop's D-Bus session bus, GDK_BACKEND=x11, QT_QPA_PLATFORM=xcb
	// and no WAYLAND_DISPLAY.
	Desktop     string `json:"desktop,omitempty"`
	KeepDesktop bool   `json:"keep_desktop,omitempty"`
	// Worktree runs the program in a git worktree of its own, made from
	// the repository Cwd is in, on a new branch named after the session
	// unless WorktreeBranch names one (an existing branch checked out
	// nowhere else, or a new one). WorktreeDir is the worktree's
	// directory (must not exist); empty is one under agentd's state
	// directory. Outside a repository, in a bare one, one with no commits
	// or with submodules: invalid_params, nothing created.
	Worktree       bool   `json:"worktree,omitempty"`
	WorktreeBranch string `json:"worktree_branch,omitempty"`
	WorktreeDir    string `json:"worktree_dir,omitempty"`
	// Agent says which agent CLI the program is (claude, codex, gemini,
	// none), for its state; empty is detected from the command.
	Agent string `json:"agent,omitempty"`
	// Restart is when the session is started again after it ends: no,
	// on-reboot or always (RestartPolicies); empty is the config's
	// session_restart. Anything else is invalid_params.
	Restart RestartPolicy `json:"restart,omitempty"`
	// Hooks says whether an agent CLI's hooks are wired to agentd: on,
	// or off (its state then comes from its screen alone); empty is the
	// config's hooks. Anything else is invalid_params.
	Hooks string `json:"hooks,omitempty"`
	// NoHooks is hooks: off, as older clients say it.
	NoHooks bool `json:"no_hooks,omitempty"`
}

// RestartParams start an ended session's program again (agent.restart):
// the same command (an agent CLI's resume form on its last
// conversation), directory, environment, size and limits, the event log
// going on after a "restarted" record. A running session is
// invalid_status unless Force, which stops it first. The answer is the
// session's SessionStatus.
type RestartParams struct {
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
}

// SessionStatus is everything about one session (agent.status, and the
// answer to agent.spawn).
type SessionStatus struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Allows lists what the status allows: ask, send, resize, wait, attach,
	// stop, remove.
	Allows []string `json:"allows"`
	// Termination is how it ended: clean_exit, nonzero_exit, signal_exit,
	// host_death, spawn_failure; empty while it runs.
	Termination  Termination `json:"termination,omitempty"`
	ExitCode     *int        `json:"exit_code,omitempty"`
	Signal       string      `json:"signal,omitempty"`
	Reason       string      `json:"reason,omitempty"`
	WorkerPID    int         `json:"worker_pid,omitempty"`
	ProgramPID   int         `json:"program_pid,omitempty"`
	Cols         int         `json:"cols"`
	Rows         int         `json:"rows"`
	Bytes        uint64      `json:"bytes"`  // output recorded
	Events       uint64      `json:"events"` // event-log records
	Asks         uint64      `json:"asks"`   // asks answered
	Argv         []string    `json:"argv"`
	Cwd          string      `json:"cwd"`
	EnvKeys      []string    `json:"env_keys,omitempty"` // names only: values are not kept
	CreatedAt    time.Time   `json:"created_at"`
	StartedAt    time.Time   `json:"started_at,omitzero"`
	EndedAt      time.Time   `json:"ended_at,omitzero"`
	LastActivity time.Time   `json:"last_activity,omitzero"`
	// Input says whether a running program waits for input: "ready"
	// (blocked reading its terminal, nothing typed left unread) or "busy";
	// absent when the kernel cannot tell or the session does not run.
	Input Input `json:"input,omitempty"`
	// Agent is the agent CLI the program is (claude, codex, gemini);
	// State what it does (StateWorking...), entered at StateSince, and
	// StateDetail what it asks when it needs approval or attention.
	Agent       string       `json:"agent,omitempty"`
	State       string       `json:"state,omitempty"`
	StateSince  time.Time    `json:"state_since,omitzero"`
	StateDetail *StateDetail `json:"state_detail,omitempty"`
	// SilentMS is how long the session's worker has not answered, in
	// milliseconds; set only with status unresponsive.
	SilentMS int64 `json:"silent_ms,omitempty"`
	// Launcher is how the live worker was started: "systemd" (a user unit
	// of its own, named in Unit) or "fork" (a child of agentd, in its
	// cgroup and under its restrictions); empty once the session ended.
	Launcher string `json:"launcher,omitempty"`
	Unit     string `json:"unit,omitempty"`
	// Worktree is the session's own git worktree (spawn with Worktree);
	// agent.diff shows its changes.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Restart is the session's restart policy ("" for no), Restarts how
	// many times it was restarted, BootID the boot its worker started in.
	Restart  RestartPolicy `json:"restart,omitempty"`
	Restarts int           `json:"restarts,omitempty"`
	BootID   string        `json:"boot_id,omitempty"`
	// ResumeID is the conversation of its agent CLI (Agent) the last
	// restart resumed, and Command the command spawned when the one
	// running (Argv) is its resume form.
	ResumeID string   `json:"resume_id,omitempty"`
	Command  []string `json:"command,omitempty"`
	// Lease is who holds the session's keyboard, if anyone.
	Lease *SessionLease `json:"lease,omitempty"`
	// Hooks says whether the agent CLI reports through its hooks, and
	// Conversation and Transcript are its own session id and transcript
	// file as they told them (what a restart resumes).
	Hooks        *HookStatus `json:"hooks,omitempty"`
	Conversation string      `json:"conversation_id,omitempty"`
	Transcript   string      `json:"transcript_path,omitempty"`
}

// SessionLease is a person's hold on a session's keyboard (Take over, in
// the view): until they hand back, asks, sends and approvals from anyone
// else are busy, naming Holder.
type SessionLease struct {
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
}

// ListParams filter agent.list; empty Status lists every session.
type ListParams struct {
	Status []Status `json:"status,omitempty"`
}

// ListResult is agent.list's answer.
type ListResult struct {
	Sessions []SessionRow `json:"sessions"`
}

// ListCommandBytes is the most of a session's command one agent.list row
// carries: with up to max_sessions rows, whole commands (a spawn may have
// up to 256 KiB of them) could pass the frame cap, and a list that fails
// fails for everyone. The row says when it was cut (CommandCut).
const ListCommandBytes = 4 << 10

// SessionRow is one row of agent.list.
type SessionRow struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// PID is the program's, until the session ends; an ended session has
	// none (the number may be another process's by then; agent.status
	// keeps it, said to be history).
	PID     int      `json:"pid,omitempty"`
	Command []string `json:"command"`
	// CommandCut is true when Command was cut to fit the row (over
	// ListCommandBytes): agent.status has it whole.
	CommandCut   bool      `json:"command_cut,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	AgeMS        int64     `json:"age_ms"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	// Input is "ready" or "busy" for a running program, as of its last
	// heartbeat (see SessionInfo.Input).
	Input Input `json:"input,omitempty"`
	// Agent and State are an agent CLI's state as of its last heartbeat,
	// entered at StateSince (see SessionStatus).
	Agent       string      `json:"agent,omitempty"`
	State       string      `json:"state,omitempty"`
	StateSince  time.Time   `json:"state_since,omitzero"`
	Termination Termination `json:"termination,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	// Reason says why a session failed, is broken or is unresponsive, for
	// people.
	Reason string `json:"reason,omitempty"`
	// SilentMS is how long the session's worker has not answered, in
	// milliseconds; set only with status unresponsive.
	SilentMS int64 `json:"silent_ms,omitempty"`
	// Restarts is how many times the session was restarted.
	Restarts int `json:"restarts,omitempty"`
	// Lease is who holds the session's keyboard, if anyone.
	Lease *SessionLease `json:"lease,omitempty"`
}

// NameParams name one session (agent.status, agent.snapshot).
type NameParams struct {
	Name string `json:"name"`
}

// StopParams end a session's program: Signal (default TERM) to its process
// group, SIGKILL after GraceMS (default 5000; 0 to MaxDurationMS). Force
// also ends a session whose worker does not answer (status unresponsive):
// SIGKILL to the worker and the program, recorded as failed (host_death);
// without it such a stop is invalid_status.
type StopParams struct {
	Name    string `json:"name"`
	Signal  string `json:"signal,omitempty"`
	GraceMS int64  `json:"grace_ms,omitempty"`
	Force   bool   `json:"force,omitempty"`
}

// ExitResult says how a session's program ended.
type ExitResult struct {
	Name         string      `json:"name"`
	Status       Status      `json:"status"`
	Termination  Termination `json:"termination"`
	ExitCode     *int        `json:"exit_code,omitempty"`
	Signal       string      `json:"signal,omitempty"`
	EndedAt      time.Time   `json:"ended_at,omitzero"`
	AlreadyEnded bool        `json:"already_ended"`
}

// RmParams remove an ended session and its files; Force stops a running one first.
type RmParams struct {
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
}

// RmResult is agent.rm's answer.
type RmResult struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

// AskParams deliver a question to a session and collect the answer. The
// ask waits for the program's prompt, types Text (a final line break is the
// Enter that follows it), and ends when the learned prompt is back and
// output is quiet (reason prompt), when the program exits, or at the
// deadline; see AskResult.Reason.
type AskParams struct {
	Name string `json:"name"`
	Text string `json:"text"` // at most 64 KiB; not empty, not only line breaks
	// TimeoutMS is the ask's deadline (default 10 minutes). Like every
	// duration here: 0 (the default) to MaxDurationMS.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// IdleMS also ends the ask once the program has been quiet this long
	// after it reacted, prompt or not. Without it, silence ends an ask only
	// on a program whose prompt could not be learned (after the daemon's
	// ask_idle).
	IdleMS int64 `json:"idle_ms,omitempty"`
	// Until, when set, replaces the prompt and silence rules: the ask ends
	// when this regular expression (RE2) matches the answer so far (the
	// rows after the question's echo; the cursor's row up to the cursor,
	// trailing spaces kept, so "(?m)^>>> $" matches Python's prompt).
	Until string `json:"until,omitempty"`
	// LockTimeoutMS is how long to wait for another ask on the session and
	// then for the program's prompt to come back.
	LockTimeoutMS int64 `json:"lock_timeout_ms,omitempty"`
	// Via is auto (default), pty or channel.
	Via AskVia `json:"via,omitempty"`
}

// AskResult is an answered ask.
type AskResult struct {
	Name string `json:"name"`
	// Answer is what a person reads between the question and the next
	// prompt, from the rendered terminal: the echo and the prompt left out,
	// trailing spaces and blank rows removed.
	Answer string `json:"answer"`
	// Prompt is the prompt the ask ended at, if any (">>>").
	Prompt string `json:"prompt,omitempty"`
	// Truncated is true when the answer's start was cut (over 4 MiB of
	// text); agent.logs has every byte.
	Truncated bool      `json:"truncated,omitempty"`
	Screen    []string  `json:"screen"`
	Reason    AskReason `json:"reason"`
	ElapsedMS int64     `json:"elapsed_ms"`
	FromSeq   uint64    `json:"from_seq"`
	ToSeq     uint64    `json:"to_seq"`
	Pasted    bool      `json:"pasted"`
	Resent    bool      `json:"resent"`
	// ReadySignal says how the ask knew the program waited for input:
	// "read" (the kernel: it was blocked reading its terminal) or "prompt"
	// (the look of its prompt and silence, where the kernel cannot tell).
	ReadySignal ReadySignal `json:"ready_signal,omitempty"`
	// Continued is true when the question was typed as the rest of an
	// input the last ask left incomplete (reason "incomplete").
	Continued bool `json:"continued,omitempty"`
}

// TimeoutDetails are the details of a timeout error from agent.ask or
// agent.wait: what was seen before the deadline.
type TimeoutDetails struct {
	Name      string   `json:"name"`
	Op        string   `json:"op"`
	TimeoutMS int64    `json:"timeout_ms"`
	Partial   string   `json:"partial,omitempty"`
	Screen    []string `json:"screen"`
	FromSeq   uint64   `json:"from_seq"`
	ToSeq     uint64   `json:"to_seq"`
	// Hint explains an until pattern that could not match as written.
	Hint string `json:"hint,omitempty"`
}

// SendParams deliver input without waiting: Text as typed, Keys by name
// (enter, esc, tab, up, ctrl+c, ...), or both, the text first, in one
// write to the program (a bad key name sends nothing).
type SendParams struct {
	Name string   `json:"name"`
	Text string   `json:"text,omitempty"`
	Keys []string `json:"keys,omitempty"`
}

// SnapshotResult is the terminal screen as a person sees it.
type SnapshotResult struct {
	Name           string   `json:"name"`
	Lines          []string `json:"lines"`
	Cols           int      `json:"cols"`
	Rows           int      `json:"rows"`
	CursorX        int      `json:"cursor_x"`
	CursorY        int      `json:"cursor_y"`
	CursorVisible  bool     `json:"cursor_visible"`
	AltScreen      bool     `json:"alt_screen"`
	BracketedPaste bool     `json:"bracketed_paste"`
	// Hash is the SHA-256 of the visible text: equal means unchanged.
	Hash string `json:"hash"`
	Seq  uint64 `json:"seq"`
}

// WaitParams wait for a condition: Until (a regular expression on the
// screen or new output), IdleMS of quiet, Exit, or Ready (the program waits
// for input); the first to hold wins.
type WaitParams struct {
	Name   string `json:"name"`
	Until  string `json:"until,omitempty"`
	IdleMS int64  `json:"idle_ms,omitempty"` // 0 to MaxDurationMS
	Exit   bool   `json:"exit,omitempty"`
	Ready  bool   `json:"ready,omitempty"`
	// States holds when the session's state is one of them: working,
	// waiting, needs_approval, needs_attention (agent CLIs), ready, busy.
	States    []string `json:"states,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"` // 0 (default) to MaxDurationMS
}

// WaitResult is a wait whose condition held.
type WaitResult struct {
	Name      string     `json:"name"`
	Reason    WaitReason `json:"reason"`
	Screen    []string   `json:"screen"`
	ElapsedMS int64      `json:"elapsed_ms"`
	Seq       uint64     `json:"seq"`
}

// ResizeParams change a session's terminal size.
type ResizeParams struct {
	Name string `json:"name"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

// LogsParams read a session's event log from FromSeq (or Since, or the
// last Tail events). Without Follow or Stream the answer is one page: at
// most Limit events and MaxLogPageBytes of them, with More set when the log
// goes on (read on with from_seq = next_seq). With Stream the events come
// as NotifyLogEvent notifications up to the log's end as it is now, and
// with Follow on until the client hangs up or the session ends; the call
// answers only then, so any log arrives whole at a flat memory cost.
type LogsParams struct {
	Name    string `json:"name"`
	FromSeq uint64 `json:"from_seq,omitempty"`
	// Since starts at the first event at or after a point: a seq number
	// ("120"), a duration ago ("90s", "5m", "1h30m") or a time ("2026-11-30T20:00:00Z",
	// "2026-11-30 20:00:00" or "2026-11-30" in the daemon's time zone).
	Since string `json:"since,omitempty"`
	// Tail starts at the last Tail events (never before from_seq or since).
	Tail int `json:"tail,omitempty"`
	// Follow keeps streaming new events until the session ends.
	Follow bool `json:"follow,omitempty"`
	// Stream sends the events as notifications up to the log's end.
	Stream bool `json:"stream,omitempty"`
	// Limit bounds the events: in a page at most MaxLogEvents (the
	// default); in a stream or follow, all of them when 0.
	Limit int `json:"limit,omitempty"`
	// Plain gives output as the text a person saw: escape sequences and
	// in-place edits applied, one text line per terminal line, lines as
	// they scrolled off the screen and then the screen as it was left. An
	// output event then holds the text of that record and any output
	// records after it up to the next other event; their seqs are skipped.
	// A page renders on its own (a line cut by a page boundary shows in
	// both); a stream renders whole.
	Plain bool `json:"plain,omitempty"`
}

// MaxLogEvents is the most events in one page of agent.logs, and
// MaxLogPageBytes the most bytes of them (as JSON): a page stops short of
// either and says More.
const (
	MaxLogEvents    = 10000
	MaxLogPageBytes = 1 << 20
)

// LogsResult is agent.logs' answer. A page holds its events; after a
// stream or follow they came as notifications and it holds none. NextSeq
// is where to read on; More says a page stopped short of the log's end.
type LogsResult struct {
	Name    string     `json:"name"`
	Events  []LogEvent `json:"events"`
	NextSeq uint64     `json:"next_seq"`
	More    bool       `json:"more,omitempty"`
}

// LogEvent is one event-log record: output, input, ask, answer, resize,
// signal, exit or marker. Data is the bytes of output or input as text
// (invalid UTF-8 replaced); asks' text is never recorded here.
type LogEvent struct {
	Name        string      `json:"name,omitempty"` // set in notifications
	Seq         uint64      `json:"seq"`
	TS          time.Time   `json:"ts"`
	Type        EventType   `json:"type"`
	Data        string      `json:"data,omitempty"`
	Text        string      `json:"text,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Cols        int         `json:"cols,omitempty"`
	Rows        int         `json:"rows,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Termination Termination `json:"termination,omitempty"`
	// Count and Bytes are set on a "gap" record: the records, and bytes of
	// program output or input, that could not be recorded (a full disk).
	// Seq numbers run on across a gap; the gap record marks the hole.
	Count uint64 `json:"count,omitempty"`
	Bytes uint64 `json:"bytes,omitempty"`
	// Detail is a "state" record's StateDetail as JSON (an agent CLI's
	// state changed: Text is the new state, Reason what told it).
	Detail json.RawMessage `json:"detail,omitempty"`
}

// ReconcileResult is what agent.reconcile found and did.
type ReconcileResult struct {
	Sessions []ReconcileRow `json:"sessions"`
	TookMS   int64          `json:"took_ms"`
}

// ReconcileRow is one session's outcome: attached, marked_failed,
// left_unknown or ended.
type ReconcileRow struct {
	Name   string          `json:"name"`
	Before Status          `json:"before"`
	After  Status          `json:"after"`
	Action ReconcileAction `json:"action"`
	Detail string          `json:"detail,omitempty"`
}

// AttachParams switch the connection to a raw terminal stream on a
// session; see "Raw streaming" in the package documentation.
type AttachParams struct {
	Name string `json:"name"`
	// ReadOnly watches without typing: input from this client is discarded.
	ReadOnly bool `json:"read_only,omitempty"`
	// Cols and Rows, when given (both), size the session's terminal before
	// the stream begins, so the first repaint already fits the attacher's
	// window. Not with ReadOnly: a watcher does not size the session.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// FramedInput makes the client's side of the stream attach frames
	// (AppendAttachFrame) instead of bare keyboard bytes, so the window's
	// size can change in the same stream, in order with the keys.
	FramedInput bool `json:"framed_input,omitempty"`
}

// AttachResult answers agent.attach just before the stream begins.
type AttachResult struct {
	Name string `json:"name"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}
