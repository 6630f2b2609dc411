package daemon

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// Sessions is what the daemon needs from the session component:
// *session.Manager, or a fake in tests of the routing and error tables.
type Sessions interface {
	Spawn(ctx context.Context, req session.SpawnRequest) (*session.Info, error)
	Status(ctx context.Context, name string) (*session.Info, error)
	List(ctx context.Context, req session.ListRequest) ([]session.ListEntry, error)
	Stop(ctx context.Context, req session.StopRequest) (*session.ExitInfo, error)
	Remove(ctx context.Context, name string, force bool) error
	Ask(ctx context.Context, req session.AskRequest) (*session.AskResult, error)
	RecordAsk(ctx context.Context, name, question, answer, reason string) error
	Send(ctx context.Context, req session.SendRequest) error
	Snapshot(ctx context.Context, name string) (*session.Snapshot, error)
	Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error)
	Resize(ctx context.Context, name string, cols, rows int) error
	SetTimeouts(t session.Timeouts)
	Logs(ctx context.Context, req session.LogsRequest, fn func(session.Event) error) error
	Reconcile(ctx context.Context) (*session.ReconcileReport, error)
	Attach(ctx context.Context, name string, rw io.ReadWriter) error
	Diff(ctx context.Context, name string) (*session.WorktreeDiff, error)
	Approve(ctx context.Context, name string, deny bool, promptID string) (*session.ApproveResult, error)
	Restart(ctx context.Context, req session.RestartRequest) (*session.Info, error)
	Subscribe(ctx context.Context, req session.SubscribeRequest, fn func(session.StateChange) error) error
}

// sessionRoutes are the agent.* session methods.
func (d *Daemon) sessionRoutes() []Route {
	return []Route{
		{Method: wire.MethodSpawn, Mutates: true, Handle: d.spawn},
		{Method: wire.MethodAsk, Mutates: true, Lasts: Long, Handle: d.ask},
		{Method: wire.MethodList, Handle: d.list},
		{Method: wire.MethodStatus, Handle: d.status},
		{Method: wire.MethodStop, Mutates: true, Handle: d.stopSession},
		{Method: wire.MethodRm, Mutates: true, Handle: d.rm},
		{Method: wire.MethodReconcile, Mutates: true, Handle: d.reconcile},
		{Method: wire.MethodLogs, Lasts: LongWhenAsked, Stream: true, Handle: d.logs},
		{Method: wire.MethodSend, Mutates: true, Handle: d.send},
		{Method: wire.MethodSnapshot, Handle: d.snapshot},
		{Method: wire.MethodWait, Lasts: Long, Handle: d.wait},
		{Method: wire.MethodResize, Mutates: true, Handle: d.resize},
		{Method: wire.MethodAttach, Mutates: true, Upgrades: true, Lasts: Long, Handle: d.attach},
		{Method: wire.MethodDiff, Handle: d.diff},
		{Method: wire.MethodApprove, Mutates: true, Handle: d.approve},
		{Method: wire.MethodRestart, Mutates: true, Handle: d.restart},
		{Method: wire.MethodHook, Handle: d.hook},
		{Method: wire.MethodSubscribe, Lasts: LongWhenAsked, Stream: true, Handle: d.subscribe},
	}
}

// msDuration turns a wire duration into a time.Duration, refusing one
// outside 0..wire.MaxDurationMS before multiplying, so nothing wraps.
func msDuration(ms int64, field string) (time.Duration, error) {
	if ms < 0 || ms > wire.MaxDurationMS {
		return 0, wire.Errorf(wire.CodeInvalidParams, "%s is %d; give 0 (the default) to %d milliseconds (24 h)", field, ms, wire.MaxDurationMS)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (d *Daemon) spawn(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.SpawnParams](call)
	if err != nil {
		return nil, err
	}
	req := session.SpawnRequest{Name: p.Name, Argv: p.Argv, Cwd: p.Cwd, Cols: p.Cols, Rows: p.Rows, Agent: p.Agent, NoHooks: p.NoHooks,
		Limits: session.Limits{MemoryMax: p.MemoryMax, CPUWeight: p.CPUWeight}, Restart: session.RestartPolicy(p.Restart)}
	if req.Restart == "" {
		req.Restart = session.RestartPolicy(d.live.Load().SessionRestart)
	}
	switch p.Hooks {
	case "on":
		req.NoHooks = false
	case "off":
		req.NoHooks = true
	case "":
		req.NoHooks = p.NoHooks || d.live.Load().NoHooks
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "hooks %q is neither on nor off: give on, off, or nothing for the config's hooks", p.Hooks)
	}
	if _, err := session.ParseRestartPolicy(string(req.Restart)); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "restart %q is not a restart policy; give no, on-reboot or always", p.Restart)
	}
	if p.Worktree {
		req.Worktree = &session.WorktreeRequest{Branch: p.WorktreeBranch, Dir: p.WorktreeDir}
	} else if p.WorktreeBranch != "" || p.WorktreeDir != "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "worktree_branch and worktree_dir need worktree: true")
	}
	for k, v := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, wire.Errorf(wire.CodeInvalidParams, "environment variable name %q is not allowed: names are non-empty and hold no '=' or NUL", k)
		}
		req.Env = append(req.Env, k+"="+v)
	}
	if p.Desktop != "" {
		set, unset, undo, err := d.desktopForSpawn(ctx, p.Desktop, p.Name, p.KeepDesktop)
		if err != nil {
			return nil, err
		}
		req.Desktop, req.KeepDesktop = p.Desktop, p.KeepDesktop
		req.Env, req.Unset = append(req.Env, set...), unset
		info, err := d.sessions.Spawn(ctx, req)
		if err != nil {
			undo()
			return nil, err
		}
		return sessionStatus(info), nil
	}
	info, err := d.sessions.Spawn(ctx, req)
	if err != nil {
		return nil, err
	}
	return sessionStatus(info), nil
}

// restart answers agent.restart: an ended session's program started
// again (a running one with force).
func (d *Daemon) restart(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RestartParams](call)
	if err != nil {
		return nil, err
	}
	info, err := d.sessions.Restart(ctx, session.RestartRequest{Name: p.Name, Force: p.Force})
	if err != nil {
		return nil, err
	}
	return sessionStatus(info), nil
}

// diff answers agent.diff: a session's worktree changes since it started.
func (d *Daemon) diff(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.DiffParams](call)
	if err != nil {
		return nil, err
	}
	r, err := d.sessions.Diff(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	return &wire.DiffResult{Name: p.Name, Repo: r.Repo, Path: r.Path, Branch: r.Branch, Base: r.Base,
		Patch: r.Patch, Untracked: r.Untracked}, nil
}

// approve answers agent.approve: an agent CLI's prompt answered as a
// person would.
func (d *Daemon) approve(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ApproveParams](call)
	if err != nil {
		return nil, err
	}
	r, err := d.sessions.Approve(ctx, p.Name, p.Deny, p.PromptID)
	if err != nil {
		return nil, err
	}
	return &wire.ApproveResult{Name: r.Name, PromptID: r.PromptID, Choice: r.Choice, Kind: r.Kind, Tool: r.Tool, Subject: r.Subject}, nil
}

func (d *Daemon) status(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.NameParams](call)
	if err != nil {
		return nil, err
	}
	info, err := d.sessions.Status(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	st := sessionStatus(info)
	if l, ok := d.sessions.(leaseSessions); ok {
		st.Lease = wireLease(l.LeaseOf(p.Name))
	}
	return st, nil
}

func (d *Daemon) list(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ListParams](call)
	if err != nil {
		return nil, err
	}
	var req session.ListRequest
	for _, s := range p.Status {
		st := session.Status(s)
		if _, ok := session.StatusTable[st]; !ok {
			return nil, wire.Errorf(wire.CodeInvalidParams, "unknown status %q; use starting, running, exiting, exited, failed, destroying, destroyed, broken or unresponsive", s)
		}
		req.Status = append(req.Status, st)
	}
	rows, err := d.sessions.List(ctx, req)
	if err != nil {
		return nil, err
	}
	return listAnswer{rows}, nil
}

// sessionRow is one list row on the wire, its command cut to
// wire.ListCommandBytes.
func sessionRow(r *session.ListEntry) wire.SessionRow {
	cmd, cut := cutCommand(r.Command, wire.ListCommandBytes)
	return wire.SessionRow{
		Name: r.Name, Status: wire.Status(r.Status), PID: r.PID, Command: cmd, CommandCut: cut, CreatedAt: r.CreatedAt,
		AgeMS: r.Age.Milliseconds(), LastActivity: r.LastActivity, Input: wire.Input(r.Input),
		Agent: r.Agent, State: r.State, StateSince: r.Since, Termination: wire.Termination(r.Termination),
		ExitCode: r.ExitCode, Signal: r.Signal, Reason: r.Reason, SilentMS: silentMS(r.SilentFor), Restarts: r.Restarts,
		Lease: wireLease(r.Lease),
	}
}

// wireLease is a lease on the wire, nil for none.
func wireLease(l *session.Lease) *wire.SessionLease {
	if l == nil {
		return nil
	}
	return &wire.SessionLease{Holder: l.Holder, Since: l.Since}
}

// cutCommand returns argv kept to max bytes (of the strings themselves):
// whole arguments while they fit, then the start of the one that does not,
// cut at a character boundary; true when anything was left out.
func cutCommand(argv []string, max int) ([]string, bool) {
	n := 0
	for i, a := range argv {
		if n+len(a) <= max {
			n += len(a)
			continue
		}
		out := append(make([]string, 0, i+1), argv[:i]...)
		keep := max - n
		for keep > 0 && !utf8.RuneStart(a[keep]) {
			keep--
		}
		return append(out, a[:keep]), true
	}
	return argv, false
}

// listAnswer is agent.list's result, the rows appended straight into the
// response (rpc.JSONAppender) one at a time by a hand-written encoder: with
// 256 sessions, encoding/json's reflection, and a second copy of every row
// as a wire.SessionRow, were most of what a list cost the daemon. It
// writes exactly what encoding/json writes for the wire.ListResult of the
// same rows (a test compares the two), falling back to encoding/json for
// any string that needs escaping.
type listAnswer struct{ rows []session.ListEntry }

// AppendJSON appends the answer's JSON.
func (l listAnswer) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"sessions":[`...)
	for i := range l.rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		r := sessionRow(&l.rows[i])
		dst = appendRow(dst, &r)
	}
	return append(dst, "]}"...)
}

// MarshalJSON is the same JSON for any other encoder (tests call the
// handler directly).
func (l listAnswer) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }

// appendRow appends one wire.SessionRow as encoding/json would, field by
// field in the struct's order, with the same omitempty and omitzero rules.
func appendRow(dst []byte, r *wire.SessionRow) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, r.Name)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(r.Status))
	if r.PID != 0 {
		dst = append(dst, `,"pid":`...)
		dst = strconv.AppendInt(dst, int64(r.PID), 10)
	}
	dst = append(dst, `,"command":`...)
	if r.Command == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, a := range r.Command {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, a)
		}
		dst = append(dst, ']')
	}
	if r.CommandCut {
		dst = append(dst, `,"command_cut":true`...)
	}
	dst = append(dst, `,"created_at":`...)
	dst = appendJSONTime(dst, r.CreatedAt)
	dst = append(dst, `,"age_ms":`...)
	dst = strconv.AppendInt(dst, r.AgeMS, 10)
	if !r.LastActivity.IsZero() {
		dst = append(dst, `,"last_activity":`...)
		dst = appendJSONTime(dst, r.LastActivity)
	}
	if r.Input != "" {
		dst = append(dst, `,"input":`...)
		dst = appendJSONString(dst, string(r.Input))
	}
	if r.Agent != "" {
		dst = append(dst, `,"agent":`...)
		dst = appendJSONString(dst, r.Agent)
	}
	if r.State != "" {
		dst = append(dst, `,"state":`...)
		dst = appendJSONString(dst, r.State)
	}
	if !r.StateSince.IsZero() {
		dst = append(dst, `,"state_since":`...)
		dst = appendJSONTime(dst, r.StateSince)
	}
	if r.Termination != "" {
		dst = append(dst, `,"termination":`...)
		dst = appendJSONString(dst, string(r.Termination))
	}
	if r.ExitCode != nil {
		dst = append(dst, `,"exit_code":`...)
		dst = strconv.AppendInt(dst, int64(*r.ExitCode), 10)
	}
	if r.Signal != "" {
		dst = append(dst, `,"signal":`...)
		dst = appendJSONString(dst, r.Signal)
	}
	if r.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, r.Reason)
	}
	if r.SilentMS != 0 {
		dst = append(dst, `,"silent_ms":`...)
		dst = strconv.AppendInt(dst, r.SilentMS, 10)
	}
	if r.Restarts != 0 {
		dst = append(dst, `,"restarts":`...)
		dst = strconv.AppendInt(dst, int64(r.Restarts), 10)
	}
	if r.Lease != nil {
		dst = append(dst, `,"lease":{"holder":`...)
		dst = appendJSONString(dst, r.Lease.Holder)
		dst = append(dst, `,"since":`...)
		dst = appendJSONTime(dst, r.Lease.Since)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string. Plain printable ASCII
// without the characters encoding/json escapes goes as it is; anything else
// through encoding/json, so the bytes are always the same as its.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted). A time it refuses (a year outside 0..9999, which
// would fail the whole answer there) is null here.
func appendJSONTime(dst []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return append(dst, "null"...) // no session has such a time
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

func (d *Daemon) stopSession(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.StopParams](call)
	if err != nil {
		return nil, err
	}
	grace, err := msDuration(p.GraceMS, "grace_ms")
	if err != nil {
		return nil, err
	}
	x, err := d.sessions.Stop(ctx, session.StopRequest{Name: p.Name, Signal: p.Signal, Grace: grace, Force: p.Force})
	if err != nil {
		return nil, err
	}
	return exitResult(x), nil
}

func (d *Daemon) rm(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RmParams](call)
	if err != nil {
		return nil, err
	}
	if err := d.sessions.Remove(ctx, p.Name, p.Force); err != nil {
		return nil, err
	}
	return &wire.RmResult{Name: p.Name, Removed: true}, nil
}

func (d *Daemon) reconcile(ctx context.Context, call *Call) (any, error) {
	if _, err := decodeParams[struct{}](call); err != nil {
		return nil, err
	}
	rep, err := d.sessions.Reconcile(ctx)
	if err != nil {
		return nil, err
	}
	return reconcileResult(rep), nil
}

func reconcileResult(rep *session.ReconcileReport) *wire.ReconcileResult {
	res := &wire.ReconcileResult{Sessions: make([]wire.ReconcileRow, 0, len(rep.Sessions)), TookMS: rep.Took.Milliseconds()}
	for _, s := range rep.Sessions {
		res.Sessions = append(res.Sessions, wire.ReconcileRow{Name: s.Name, Before: wire.Status(s.Before), After: wire.Status(s.After), Action: wire.ReconcileAction(s.Action), Detail: s.Detail})
	}
	return res
}

func (d *Daemon) ask(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.AskParams](call)
	if err != nil {
		return nil, err
	}
	req := session.AskRequest{Name: p.Name, Text: p.Text, Until: p.Until}
	if req.Timeout, err = msDuration(p.TimeoutMS, "timeout_ms"); err != nil {
		return nil, err
	}
	if req.Idle, err = msDuration(p.IdleMS, "idle_ms"); err != nil {
		return nil, err
	}
	if req.LockTimeout, err = msDuration(p.LockTimeoutMS, "lock_timeout_ms"); err != nil {
		return nil, err
	}
	switch p.Via {
	case "", wire.ViaAuto, wire.ViaPTY, wire.ViaChannel:
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "via %q is not auto, pty or channel", p.Via)
	}
	if routed, res, err := d.askViaChannel(ctx, call.Conn, p, req.Timeout); routed {
		return res, err
	}
	if p.Via == wire.ViaChannel {
		return nil, wire.Errorf(wire.CodeInvalidParams, "session %q has no channel to ask through; use via auto or pty, or bind a channel to it first", p.Name)
	}
	r, err := d.sessions.Ask(ctx, req)
	if err != nil {
		return nil, err
	}
	return askResult(r), nil
}

func askResult(r *session.AskResult) *wire.AskResult {
	return &wire.AskResult{Name: r.Name, Answer: r.Answer, Prompt: r.Prompt, Truncated: r.Truncated, Screen: r.Screen, Reason: wire.AskReason(r.Reason),
		ElapsedMS: r.Elapsed.Milliseconds(), FromSeq: r.FromSeq, ToSeq: r.ToSeq, Pasted: r.Pasted, Resent: r.Resent,
		ReadySignal: wire.ReadySignal(r.ReadySignal), Continued: r.Continued}
}

func (d *Daemon) send(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.SendParams](call)
	if err != nil {
		return nil, err
	}
	return nil, d.sessions.Send(ctx, session.SendRequest{Name: p.Name, Text: p.Text, Keys: p.Keys})
}

func (d *Daemon) snapshot(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.NameParams](call)
	if err != nil {
		return nil, err
	}
	s, err := d.sessions.Snapshot(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	return snapshotResult(s), nil
}

func snapshotResult(s *session.Snapshot) *wire.SnapshotResult {
	return &wire.SnapshotResult{Name: s.Name, Lines: s.Lines, Cols: s.Cols, Rows: s.Rows, CursorX: s.CursorX, CursorY: s.CursorY,
		CursorVisible: s.CursorVisible, AltScreen: s.AltScreen, BracketedPaste: s.BracketedPaste, Hash: s.Hash, Seq: s.Seq}
}

func (d *Daemon) wait(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.WaitParams](call)
	if err != nil {
		return nil, err
	}
	req := session.WaitRequest{Name: p.Name, Until: p.Until, Exit: p.Exit, Ready: p.Ready, States: p.States}
	if req.Idle, err = msDuration(p.IdleMS, "idle_ms"); err != nil {
		return nil, err
	}
	if req.Timeout, err = msDuration(p.TimeoutMS, "timeout_ms"); err != nil {
		return nil, err
	}
	r, err := d.sessions.Wait(ctx, req)
	if err != nil {
		return nil, err
	}
	return waitResult(r), nil
}

func waitResult(r *session.WaitResult) *wire.WaitResult {
	return &wire.WaitResult{Name: r.Name, Reason: wire.WaitReason(r.Reason), Screen: r.Screen, ElapsedMS: r.Elapsed.Milliseconds(), Seq: r.Seq}
}

func (d *Daemon) resize(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ResizeParams](call)
	if err != nil {
		return nil, err
	}
	return nil, d.sessions.Resize(ctx, p.Name, p.Cols, p.Rows)
}

func sessionStatus(i *session.Info) *wire.SessionStatus {
	m := i.Manifest
	s := &wire.SessionStatus{
		Name: i.Name, Status: wire.Status(i.Status), Allows: allowsList(i.Allows), Termination: wire.Termination(i.Termination),
		ExitCode: i.ExitCode, Signal: i.Signal, Reason: i.Reason, WorkerPID: i.WorkerPID, ProgramPID: i.ProgramPID,
		Cols: i.Cols, Rows: i.Rows, Bytes: i.Bytes, Events: i.Events, Asks: i.Asks,
		Argv: m.Argv, Cwd: m.Cwd, EnvKeys: m.EnvKeys, CreatedAt: m.CreatedAt, StartedAt: m.StartedAt, LastActivity: i.LastActivity,
		Input: wire.Input(i.Input), Agent: i.Agent, State: i.State, StateSince: i.Since, StateDetail: stateDetail(i.Detail),
		SilentMS: silentMS(i.SilentFor),
	}
	if m.EndedAt != nil {
		s.EndedAt = *m.EndedAt
	}
	s.Launcher, s.Unit = launcherOf(i)
	if w := m.Worktree; w != nil {
		s.Worktree = &wire.Worktree{Repo: w.Repo, Path: w.Path, Branch: w.Branch, Base: w.Base}
	}
	s.Restart, s.Restarts, s.BootID = wire.RestartPolicy(m.Restart), m.Restarts, m.BootID
	s.Agent, s.ResumeID, s.Command = m.Agent, m.ResumeID, m.Command
	s.Conversation, s.Transcript = m.ConversationID, m.TranscriptPath
	if h := i.Hooks; h != nil {
		s.Hooks = &wire.HookStatus{Wired: h.Wired, How: h.How, Why: h.Why, Count: h.Count, Last: h.Last}
	}
	return s
}

// stateDetail is what an agent's state asks, on the wire.
func stateDetail(d *agentstate.Detail) *wire.StateDetail {
	if d == nil {
		return nil
	}
	w := &wire.StateDetail{Kind: string(d.Kind), Tool: d.Tool, Subject: d.Subject, Question: d.Question, Message: d.Message, PromptID: d.PromptID}
	for _, c := range d.Choices {
		w.Choices = append(w.Choices, wire.StateChoice{Label: c.Label, Role: string(c.Role)})
	}
	return w
}

// silentMS is a silence on the wire: whole milliseconds, at least 1 for
// any silence at all, so a set silent_ms is never 0.
func silentMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

func allowsList(a session.Allows) []string {
	out := []string{}
	for _, x := range []struct {
		ok   bool
		name string
	}{{a.Ask, "ask"}, {a.Send, "send"}, {a.Resize, "resize"}, {a.Wait, "wait"}, {a.Attach, "attach"}, {a.Stop, "stop"}, {a.Remove, "remove"}} {
		if x.ok {
			out = append(out, x.name)
		}
	}
	return out
}

func exitResult(x *session.ExitInfo) *wire.ExitResult {
	return &wire.ExitResult{Name: x.Name, Status: wire.Status(x.Status), Termination: wire.Termination(x.Termination), ExitCode: x.ExitCode,
		Signal: x.Signal, EndedAt: x.EndedAt, AlreadyEnded: x.AlreadyEnded}
}
