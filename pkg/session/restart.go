package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// Restarts. A session spawned with a RestartPolicy other than RestartNo is
// started again by the Manager when it ends in a way the policy names:
// RestartOnReboot when Reconcile (agentd's start) finds its worker gone
// and the machine booted since the worker started (the manifest's BootID
// against the kernel's boot id); RestartAlways then too, and also whenever
// its program exits non-zero, is killed by a signal nobody asked for, or
// its worker dies, with a back-off (RestartBackoff, doubling up to
// RestartMaxBackoff) and a ceiling (RestartBurst restarts in RestartWindow;
// past it the session is failed, "restart loop", with the count). Restart
// (agentctl restart) does it by hand, whatever the policy.
//
// A restart runs the same command in the same directory (a worktree
// session's own worktree), with the same size, the same environment and
// the same limits: the manifest keeps only the names of the variables
// given at spawn, so their values are kept apart, in restartFile (0600,
// beside the event log, which holds far more of what the session did), and
// never in the manifest, a list or a status. An agent CLI that keeps its
// conversations (Claude Code, Codex, Gemini CLI: resume.go) is restarted
// with its resume form on the conversation found in its own store.
//
// The event log goes on: a "restarted" record (the reason, the boot id,
// how the old program ended and what the new one runs), then the new
// program's records, with seq numbers continuing, so logs and record read
// across it.
//
// Decision: the restart is the Manager's, not the worker's. A worker dies
// with the machine, and a worker that respawned its own program could not
// outlive a crash of its own; the Manager is the one process that sees
// every session end (its watcher, or Reconcile at start) and already owns
// starting workers.

// RestartPolicy says when a session is started again after it ends.
type RestartPolicy string

// The restart policies.
const (
	// RestartNo (or empty): never by itself; agentctl restart still can.
	RestartNo RestartPolicy = "no"
	// RestartOnReboot: when agentd starts after the machine rebooted under
	// the session.
	RestartOnReboot RestartPolicy = "on-reboot"
	// RestartAlways: after a reboot, and whenever the program ends other
	// than by a clean exit or a stop asked for, with back-off and a ceiling.
	RestartAlways RestartPolicy = "always"
)

// RestartPolicies lists the policies, for messages and completion.
var RestartPolicies = []RestartPolicy{RestartNo, RestartOnReboot, RestartAlways}

// ParseRestartPolicy reads a policy; "" is RestartNo. Anything else is
// ErrInvalid naming the three.
func ParseRestartPolicy(s string) (RestartPolicy, error) {
	switch p := RestartPolicy(s); p {
	case "":
		return RestartNo, nil
	case RestartNo, RestartOnReboot, RestartAlways:
		return p, nil
	}
	return "", errorf(ErrInvalid, "restart policy %q is not known; give no, on-reboot or always", s)
}

// Restart reasons, in the restarted record's Reason.
const (
	RestartReasonReboot = "reboot"  // the machine booted since the worker started
	RestartReasonExit   = "exit"    // RestartAlways: the program ended badly
	RestartReasonByHand = "by_hand" // Restart (agentctl restart)
)

// EventRestarted is the record a restart writes before the new program's
// output: Reason, Text (the boot id, the old program's end, what runs now)
// and the old program's end in Termination, ExitCode and Signal.
const EventRestarted EventType = "restarted"

// RestartState is what a manifest keeps about restarts, written by the
// Manager when it starts a worker and kept by the worker in every
// manifest it writes.
type RestartState struct {
	// Restart is the session's policy; empty is RestartNo.
	Restart RestartPolicy `json:"restart,omitempty"`
	// BootID is the kernel's boot id when the current worker started
	// (/proc/sys/kernel/random/boot_id): a different one now means the
	// machine rebooted under the session.
	BootID string `json:"boot_id,omitempty"`
	// Restarts counts the restarts, automatic and by hand.
	Restarts int `json:"restarts,omitempty"`
	// RestartTimes are the automatic restarts within the last
	// RestartWindow, for the ceiling.
	RestartTimes []time.Time `json:"restart_times,omitempty"`
	// Command is the command spawned, when the running one differs (a
	// resume form of it); Argv is what runs.
	Command []string `json:"command,omitempty"`
	// Agent is the agent CLI the command runs (AgentClaude, AgentCodex,
	// AgentGemini), "" for any other program.
	Agent string `json:"agent,omitempty"`
	// ResumeID is the agent CLI's own id of the conversation the program
	// was last restarted into.
	ResumeID string `json:"resume_id,omitempty"`
	// ConversationID and TranscriptPath are the agent CLI's own session
	// id and transcript file as its hooks last told them (hooks.go): the
	// conversation a restart resumes.
	ConversationID string `json:"conversation_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	// NoHooks says the session was spawned with its hooks off.
	NoHooks bool `json:"no_hooks,omitempty"`
	// Desktop is the agents' desktop the session was spawned on ("new":
	// one made for it), KeepDesktop whether a new one outlives it.
	Desktop     string `json:"desktop,omitempty"`
	KeepDesktop bool   `json:"keep_desktop,omitempty"`
	// StopAsked says the program was stopped on request (stop, rm
	// --force): an end RestartAlways leaves alone, even when a later
	// agentd finds it.
	StopAsked bool `json:"stop_asked,omitempty"`
}

// spawnCommand is the command the session was spawned with.
func (man *Manifest) spawnCommand() []string {
	if len(man.Command) > 0 {
		return man.Command
	}
	return man.Argv
}

// The restart back-off and ceiling (RestartAlways), unless
// ManagerOptions.RestartLimits says otherwise.
const (
	RestartBackoff    = time.Second
	RestartMaxBackoff = 60 * time.Second
	RestartBurst      = 5
	RestartWindow     = 10 * time.Minute
)

// RestartLimits are RestartAlways's back-off and ceiling: Backoff before
// the first automatic restart in Window, doubling up to MaxBackoff; past
// Burst restarts in Window the session is failed. Zero fields take the
// Restart* constants.
type RestartLimits struct {
	Backoff, MaxBackoff time.Duration
	Burst               int
	Window              time.Duration
}

func (l RestartLimits) filled() RestartLimits {
	if l.Backoff <= 0 {
		l.Backoff = RestartBackoff
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = RestartMaxBackoff
	}
	if l.Burst <= 0 {
		l.Burst = RestartBurst
	}
	if l.Window <= 0 {
		l.Window = RestartWindow
	}
	return l
}

// delay is the back-off before the restart that follows n recent ones.
func (l RestartLimits) delay(n int) time.Duration {
	d := l.Backoff
	for i := 0; i < n && d < l.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, l.MaxBackoff)
}

// BootIDFileEnv names a file read instead of the kernel's boot id when
// ManagerOptions.BootIDFile is empty. It is for tests (a simulated reboot
// writes a new id into it); agentd never sets it.
const BootIDFileEnv = "AGENTD_TEST_BOOT_ID_FILE"

// kernelBootID is where Linux says which boot this is.
const kernelBootID = "/proc/sys/kernel/random/boot_id"

// bootID is this boot's id, "" when it cannot be read (then no session is
// taken to have outlived a reboot).
func (m *Manager) bootID() string {
	b, err := os.ReadFile(m.opts.BootIDFile)
	if err != nil {
		m.log.Warn().Err(err).Str("file", m.opts.BootIDFile).Msg("cannot read the boot id; sessions are not restarted after a reboot")
		return ""
	}
	return strings.TrimSpace(string(b))
}

// restartFile keeps, in the session's directory and only there, what a
// restart needs that the manifest does not hold: the values of the
// variables given at spawn (the manifest has their names), the variables
// removed, and the limits.
const restartFile = "restart.json"

// restartSpec is restartFile's content.
type restartSpec struct {
	Env    []string `json:"env,omitempty"`
	Unset  []string `json:"unset,omitempty"`
	Limits Limits   `json:"limits,omitzero"`
}

// writeRestartSpec writes restartFile (0600, replaced atomically).
func writeRestartSpec(dir string, s *restartSpec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".restart-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", restartFile, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", restartFile, err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, restartFile))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", restartFile, err)
	}
	return nil
}

// readRestartSpec reads restartFile; a session spawned before agentd kept
// it has none (nil, nil).
func readRestartSpec(dir string) (*restartSpec, error) {
	b, err := readNoFollow(filepath.Join(dir, restartFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s restartSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", filepath.Join(dir, restartFile), err)
	}
	return &s, nil
}

// RestartRequest starts an ended session's program again.
type RestartRequest struct {
	Name string
	// Force stops a running session first (as Stop with Force).
	Force bool
}

// Restart starts the program of an ended session again (see the
// restarts' doc above): same command (an agent CLI's resume form on its
// last conversation), directory, environment, size and limits, with the
// event log going on. A running session is ErrInvalidStatus unless Force,
// which stops it first; a session being started is ErrInvalidStatus. A
// program that cannot start is ErrSpawnFailed, and the session is then
// failed with the reason.
func (m *Manager) Restart(ctx context.Context, req RestartRequest) (*Info, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, err
	}
	man, err := m.readState(req.Name)
	if err != nil {
		return nil, err
	}
	if !man.Status.Terminal() && man.Status != StatusBroken {
		if !req.Force {
			return nil, errorf(ErrInvalidStatus, "session %q is %s; restart starts an ended session again: stop it first (agentctl stop %s), or agentctl restart --force %s stops and restarts it", req.Name, man.Status, req.Name, req.Name)
		}
		if _, err := m.Stop(ctx, StopRequest{Name: req.Name, Force: true}); err != nil {
			return nil, err
		}
	}
	if man.WorkerPID > 0 {
		// The worker writes its last records and removes its socket
		// before it exits, also after its session has ended: a new worker
		// started before then would have its socket removed under it.
		if _, err := waitGone(ctx, man.WorkerPID, man.WorkerStart, 3*time.Second); err != nil {
			return nil, err
		}
	}
	return m.restartSession(ctx, req.Name, RestartReasonByHand, -1)
}

// restartSession starts name's ended program again for reason. want is
// the restart count the caller saw (a back-off's timer), -1 for none: a
// session restarted meanwhile is left alone.
func (m *Manager) restartSession(ctx context.Context, name, reason string, want int) (*Info, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	if m.spawningNames[name] {
		m.mu.Unlock()
		return nil, errorf(ErrInvalidStatus, "session %q is being started; agentctl status %s shows it", name, name)
	}
	if len(m.live)+m.spawning >= m.opts.MaxSessions {
		m.mu.Unlock()
		return nil, errorf(ErrBusy, "%d sessions are running, agentd's limit (max_sessions); stop or remove one first, or raise max_sessions in the config", m.opts.MaxSessions)
	}
	m.spawning++
	m.spawningNames[name] = true
	delete(m.stopAsked, name)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.spawning--
		delete(m.spawningNames, name)
		m.mu.Unlock()
	}()

	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		return nil, err
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	man, err := m.readState(name)
	if err != nil {
		return nil, err
	}
	if !man.Status.Terminal() || want >= 0 && man.Restarts != want {
		return nil, errorf(ErrInvalidStatus, "session %q is %s; only an ended session is restarted", name, man.Status)
	}
	dir := m.dir(name)
	saved, err := readRestartSpec(dir)
	if err != nil {
		return nil, errorf(ErrInvalidStatus, "session %q cannot be restarted: %v; remove it (agentctl rm %s) and spawn it again", name, err, name)
	}
	var notes []string
	if saved == nil {
		saved = &restartSpec{}
		if len(man.EnvKeys) > 0 {
			notes = append(notes, "the values of "+strings.Join(man.EnvKeys, ", ")+" were not kept (spawned by an older agentd); restarted without them")
		}
	}
	if man.Desktop != "" && m.opts.Desktop != nil {
		set, unset, err := m.opts.Desktop(ctx, name, man.Desktop, man.KeepDesktop)
		if err != nil {
			return nil, fmt.Errorf("restart %q on desktop %s: %w", name, man.Desktop, err)
		}
		saved = rebind(saved, set, unset)
	}
	now := time.Now().UTC()
	boot := m.bootID()
	next := *man
	next.Status, next.Termination, next.ExitCode, next.Signal, next.Reason, next.EndedAt = StatusStarting, "", nil, "", "", nil
	next.WorkerPID, next.WorkerStart, next.ProgramPID, next.StartedAt = 0, 0, 0, time.Time{}
	next.Restarts++
	next.BootID = boot
	next.StopAsked = false
	if reason != RestartReasonByHand {
		next.RestartTimes = append(recentRestarts(man.RestartTimes, now, m.restartLimits().Window), now)
	}
	env := programEnv(withoutKeys(os.Environ(), saved.Unset), saved.Env, name, m.opts.DaemonSocket)
	spawned := man.spawnCommand()
	argv, resume, note := resumeForm(man, spawned, env)
	if note != "" {
		notes = append(notes, note)
	}
	if next.Agent == "" {
		next.Agent = agentOf(spawned)
	}
	next.ResumeID = resume
	next.Command = nil
	if !equalStrings(argv, spawned) {
		next.Command = spawned
	}
	next.Argv = argv

	text := fmt.Sprintf("restarted (%s) in boot %s after the program %s; runs %s", reason, orUnknown(boot), endWords(man), strings.Join(argv, " "))
	if len(notes) > 0 {
		text += "; " + strings.Join(notes, "; ")
	}
	if l, err := eventlog.Open(dir, m.opts.LogCap); err == nil {
		l.Append(&Event{Type: EventRestarted, Reason: reason, Text: text, Termination: man.Termination, ExitCode: man.ExitCode, Signal: man.Signal})
		next.Events = l.Seq()
		l.Close()
	} else {
		return nil, logError(name, err)
	}
	if err := writeManifest(dir, &next); err != nil {
		return nil, &SpawnError{Name: name, Reason: storageReason(err, m.sessions)}
	}
	unlock()
	locked = false

	spec := workerSpec{Name: name, Argv: argv, Cwd: man.Cwd, Env: env, EnvKeys: man.EnvKeys,
		Cols: man.Cols, Rows: man.Rows, SessionDir: dir, Socket: m.socket(name), LogCap: m.opts.LogCap,
		CreatedAt: man.CreatedAt, Worktree: man.Worktree, Keep: next.RestartState}
	spec.Hooks, spec.HooksOff = m.hooksFor(next.Agent, next.NoHooks)
	ready, exited, err := m.startWorker(ctx, spec, saved.Limits)
	if err == nil && !ready.OK {
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		err = &SpawnError{Name: name, Reason: ready.Error}
	}
	if err != nil {
		m.failRestart(name, &next, err)
		return nil, err
	}
	m.log.Info().Str("session", name).Str("reason", reason).Int("restarts", next.Restarts).Str("resume_id", resume).
		Int("pid", ready.ProgramPID).Msg("session restarted")
	h, ended, err := m.attachStarted(ctx, name, dir, exited, "restarted")
	if err != nil || ended != nil {
		return ended, err
	}
	return m.infoLive(ctx, h)
}

// rebind is s with the desktop's variables set and unset replacing the
// ones of the desktop it was spawned on.
func rebind(s *restartSpec, set, unset []string) *restartSpec {
	out := *s
	drop := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	for _, k := range unset {
		drop[k] = true
	}
	out.Env = nil
	for _, kv := range s.Env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out.Env = append(out.Env, kv)
		}
	}
	out.Env = append(out.Env, set...)
	out.Unset = unset
	return &out
}

// failRestart records a restart whose program could not start: the
// session is failed (spawn_failure) with the reason.
func (m *Manager) failRestart(name string, man *Manifest, cause error) {
	unlock, err := m.lockSession(context.Background(), name)
	if err != nil {
		return
	}
	defer unlock()
	cur, err := readManifest(m.dir(name))
	if err != nil || cur.Status != StatusStarting || cur.WorkerPID != 0 {
		return // the worker got as far as recording itself
	}
	now := time.Now().UTC()
	man.Status, man.Termination, man.EndedAt = StatusFailed, TermSpawnFailure, &now
	man.Reason = "restart failed: " + cause.Error()
	if l, err := eventlog.Open(m.dir(name), m.opts.LogCap); err == nil {
		l.Append(&Event{Type: EventExit, Termination: TermSpawnFailure, Text: man.Reason})
		man.Events = l.Seq()
		l.Close()
	}
	if err := writeManifest(m.dir(name), man); err != nil {
		m.log.Error().Err(err).Str("session", name).Msg("write manifest of a failed restart")
	}
	m.log.Warn().Str("session", name).Err(cause).Msg("restart failed")
}

// recentRestarts keeps the times within window of now.
func recentRestarts(times []time.Time, now time.Time, window time.Duration) []time.Time {
	var out []time.Time
	for _, t := range times {
		if now.Sub(t) < window {
			out = append(out, t)
		}
	}
	return out
}

func (m *Manager) restartLimits() RestartLimits { return m.opts.RestartLimits.filled() }

// endWords says how a program ended, for the restarted record.
func endWords(man *Manifest) string {
	switch {
	case man.Termination == TermHostDeath:
		return "died with its worker (host_death)"
	case man.ExitCode != nil:
		return fmt.Sprintf("exited with status %d", *man.ExitCode)
	case man.Signal != "":
		return "was killed by " + man.Signal
	case man.Termination != "":
		return "ended (" + string(man.Termination) + ")"
	}
	return "ended"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rebootRestart says whether Reconcile restarts name, failed because its
// worker is gone (justDied: Reconcile found it so; else something else,
// such as a status call that came first, did), and why. RestartOnReboot
// and RestartAlways when the machine booted since its worker started: a
// restart records the boot it starts in, so a failed manifest of another
// boot is one nothing has restarted yet in this one. RestartAlways also
// when Reconcile found the worker dead in this boot.
func (m *Manager) rebootRestart(name string, justDied bool) (reason string, ok bool) {
	man, err := m.readState(name)
	if err != nil || !man.Status.Terminal() || man.StopAsked {
		return "", false
	}
	// What the going down did to the session: its worker killed (host
	// death), or its program killed by a signal first and the worker
	// recording that before it went too (a shutdown kills in any order).
	killed := man.Status == StatusFailed && man.Termination == TermHostDeath || man.Termination == TermSignalExit
	rebooted := man.BootID != "" && man.BootID != m.bootID()
	switch {
	case rebooted && killed && (man.Restart == RestartOnReboot || man.Restart == RestartAlways):
		return RestartReasonReboot, true
	case justDied && man.Status == StatusFailed && man.Termination == TermHostDeath && man.Restart == RestartAlways:
		return RestartReasonExit, true
	}
	return "", false
}

// noteStopAsked records that name's program is being stopped on request,
// so its end is not one RestartAlways restarts.
func (m *Manager) noteStopAsked(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopAsked == nil {
		m.stopAsked = map[string]bool{}
	}
	m.stopAsked[name] = true
}

// afterEnd runs once a session's worker is gone (its watcher ended, or a
// spawn found its program ended at once), and for every ended session
// Reconcile finds (a back-off an earlier agentd did not see out): a
// RestartAlways session that ended badly, and not by a stop asked for, is
// restarted after its back-off, or failed past the ceiling.
func (m *Manager) afterEnd(name string) {
	m.mu.Lock()
	asked, closed := m.stopAsked[name], m.closed
	delete(m.stopAsked, name)
	m.mu.Unlock()
	if asked || closed {
		return
	}
	man, err := m.readState(name)
	if err != nil || !man.Status.Terminal() || man.Restart != RestartAlways || man.StopAsked {
		return
	}
	if man.Status == StatusFailed && (man.Termination != TermHostDeath || strings.HasPrefix(man.Reason, restartLoop)) {
		return // failed by the ceiling
	}
	switch man.Termination {
	case TermNonzeroExit, TermSignalExit, TermHostDeath:
	default:
		return // a clean exit, or a program that cannot start
	}
	lim := m.restartLimits()
	recent := recentRestarts(man.RestartTimes, time.Now(), lim.Window)
	if len(recent) >= lim.Burst {
		m.failLoop(name, man.Restarts, len(recent))
		return
	}
	delay := lim.delay(len(recent))
	want := man.Restarts
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	m.log.Info().Str("session", name).Dur("in", delay).Int("recent", len(recent)).Msg("session ended badly; restarting it (restart always)")
	go func() {
		defer m.wg.Done()
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-m.closing:
			return
		}
		if _, err := m.restartSession(m.life, name, RestartReasonExit, want); err != nil && !errors.Is(err, ErrInvalidStatus) && !errors.Is(err, ErrNotFound) {
			m.log.Warn().Err(err).Str("session", name).Msg("automatic restart failed")
		}
	}()
}

// restartPending says an ended session is one RestartAlways restarts (or
// fails at the ceiling) once its back-off is over.
func (man *Manifest) restartPending() bool {
	if man.Restart != RestartAlways || man.StopAsked {
		return false
	}
	switch {
	case man.Status == StatusExited:
		return man.Termination == TermNonzeroExit || man.Termination == TermSignalExit
	case man.Status == StatusFailed:
		return man.Termination == TermHostDeath && !strings.HasPrefix(man.Reason, restartLoop)
	}
	return false
}

// restartLoop begins the reason of a session failed by the ceiling.
const restartLoop = "restart loop"

// failLoop fails a RestartAlways session that reached the ceiling.
func (m *Manager) failLoop(name string, restarts, recent int) {
	unlock, err := m.lockSession(m.life, name)
	if err != nil {
		return
	}
	defer unlock()
	man, err := m.readState(name)
	if err != nil || !man.Status.Terminal() || man.Restarts != restarts {
		return
	}
	lim := m.restartLimits()
	man.Status = StatusFailed
	man.Reason = fmt.Sprintf(restartLoop+": restarted %d times in %s and the program %s again; agentctl restart %s starts it once more",
		recent, lim.Window, endWords(man), name)
	if l, err := eventlog.Open(m.dir(name), m.opts.LogCap); err == nil {
		l.Append(&Event{Type: EventMarker, Text: man.Reason})
		man.Events = l.Seq()
		l.Close()
	}
	if err := writeManifest(m.dir(name), man); err != nil {
		m.log.Error().Err(err).Str("session", name).Msg("write manifest of a restart loop")
	}
	m.log.Warn().Str("session", name).Int("restarts", recent).Msg("restart loop: the session is failed")
}
