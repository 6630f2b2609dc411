package session

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// Settling a session whose worker is gone. The worker records the end
// itself (an exit record, then the manifest); on a full disk the record may
// land and the manifest not, or neither. The Manager then settles the
// session from the best word it has, in this order: the exit record the
// worker wrote last in the log, the exit the worker told the Manager (a
// stop's answer, a heartbeat), and only without either host_death. It adds
// an exit record only when the log has none for this end, so the log holds
// one. A manifest it cannot write either is kept in memory (unwritten):
// status, list and every lookup read it instead of the stale "running" on
// disk, so the session is settled once, logged once, and written out when
// space returns (issue 21, D4).

// unwrittenRetry is how often a kept manifest is tried on disk again, when
// the session is looked at.
const unwrittenRetry = 2 * time.Second

// unwritten is a settled manifest the disk did not take.
type unwritten struct {
	man  *Manifest
	next time.Time // the next try to write it
}

// markDead settles name, whose worker is gone, with no word from a handle
// (reconcile, an attach that found the worker dead, stop --force).
// Called with the session's lock held.
func (m *Manager) markDead(name string, man *Manifest, detail string) {
	m.settleGone(name, man, detail, nil)
}

// knownExit is the end the worker told this handle (stop's answer, or a
// status once the program ended), or nil.
func (h *handle) knownExit() *ExitInfo {
	st, have, _ := h.snapshot()
	if !have || !st.Status.Terminal() || st.Exit.Termination == "" {
		return nil
	}
	x := st.Exit
	return &x
}

// settleGone records the end of a session whose worker is gone, and kills
// whatever of its program may be left. Called with the session's lock held.
func (m *Manager) settleGone(name string, man *Manifest, detail string, known *ExitInfo) {
	if man.ProgramPID > 0 {
		signalAll(man.ProgramPID, sessionMembers(man.ProgramPID, 0, 0), syscall.SIGKILL)
	}
	dir := m.dir(name)
	now := time.Now().UTC()
	m.mu.Lock()
	delete(m.unanswered, name)
	if m.stopAsked[name] {
		man.StopAsked = true // stop --force: kept for a later agentd (restart.go)
	}
	m.mu.Unlock()
	recorded := m.lastExitRecord(name)
	switch {
	case recorded != nil:
		man.Status, man.Termination, man.ExitCode, man.Signal, man.Reason = StatusExited, recorded.Termination, recorded.ExitCode, recorded.Signal, ""
		man.EndedAt = &recorded.TS
		man.Events = recorded.Seq
	case known != nil:
		man.Status, man.Termination, man.ExitCode, man.Signal, man.Reason = StatusExited, known.Termination, known.ExitCode, known.Signal, ""
		man.EndedAt = &now
		if !known.EndedAt.IsZero() {
			man.EndedAt = &known.EndedAt
		}
		if l, err := eventlog.Open(dir, m.opts.LogCap); err == nil {
			l.Append(&Event{Type: EventExit, ExitCode: known.ExitCode, Signal: known.Signal, Termination: known.Termination})
			man.Events = l.Seq()
			l.Close()
		}
	default:
		if l, err := eventlog.Open(dir, m.opts.LogCap); err == nil {
			l.Append(&Event{Type: EventMarker, Text: "worker gone: " + detail})
			l.Append(&Event{Type: EventExit, Termination: TermHostDeath})
			man.Events = l.Seq()
			l.Close()
		}
		man.Status, man.Termination, man.Reason, man.EndedAt = StatusFailed, TermHostDeath, detail, &now
	}
	if err := writeManifest(dir, man); err != nil {
		m.log.Error().Err(err).Str("session", name).Msg("write manifest; the session's end is kept in memory and written when the disk takes it")
		m.mu.Lock()
		if m.unwritten == nil {
			m.unwritten = map[string]*unwritten{}
		}
		m.unwritten[name] = &unwritten{man: man, next: time.Now().Add(unwrittenRetry)}
		m.mu.Unlock()
	}
	if man.Socket != "" {
		os.Remove(man.Socket)
	}
	if man.Status == StatusFailed {
		m.log.Warn().Str("session", name).Str("detail", detail).Msg("session failed: its worker is gone")
	} else {
		m.log.Info().Str("session", name).Str("termination", string(man.Termination)).Msg("session ended; its worker recorded the end but not its manifest")
	}
}

// lastExitRecord is the log's last record when it is an exit: the worker
// recorded the end (nothing is appended after it).
func (m *Manager) lastExitRecord(name string) *Event {
	var last *Event
	m.Logs(context.Background(), LogsRequest{Name: name, Tail: 1}, func(ev Event) error {
		last = &ev
		return nil
	})
	if last == nil || last.Type != EventExit {
		return nil
	}
	return last
}

// settledInMemory returns the manifest kept for name when the one read from
// disk (disk) is the stale live one it replaces, trying to write it out
// again now and then; else disk. A manifest of another run (another
// worker pid: the name was removed and spawned again) drops it.
func (m *Manager) settledInMemory(name string, disk *Manifest) *Manifest {
	m.mu.Lock()
	u := m.unwritten[name]
	if u == nil {
		m.mu.Unlock()
		return disk
	}
	if disk.WorkerPID != u.man.WorkerPID || disk.Status.Terminal() {
		delete(m.unwritten, name)
		m.mu.Unlock()
		return disk
	}
	try := time.Now().After(u.next)
	if try {
		u.next = time.Now().Add(unwrittenRetry)
	}
	man := *u.man
	m.mu.Unlock()
	if try && writeManifest(m.dir(name), &man) == nil {
		m.mu.Lock()
		if m.unwritten[name] == u {
			delete(m.unwritten, name)
		}
		m.mu.Unlock()
	}
	return &man
}
