package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/eventlog"
)

// Broken sessions.
//
// A session directory whose manifest is missing (a crash or a full disk
// while it was spawned) or damaged (truncated, empty, mistyped, naming
// another session or an unknown status) is reported with StatusBroken and
// the reason, never hidden and never an internal error: List shows it,
// Status describes it, Stop ends whatever of it still runs, and Remove
// deletes it. Its worker, if one lives, is found by its socket or, when the
// socket is gone or does not answer, by its process: every worker's
// environment names its session directory (workerDirEnv).

// brokenManifest is the record a broken session is reported by.
func brokenManifest(name, reason string) *Manifest {
	return &Manifest{Name: name, Status: StatusBroken, Reason: reason}
}

// noManifestReason is the reason given for a directory without a manifest,
// or with the first manifest of a spawn that never got a worker.
const noManifestReason = "it has no manifest (left by a crash or a full disk while it was being spawned)"

// unfinishedReason is the reason given for a session whose spawn never
// finished: its first manifest is there, its worker never wrote one.
const unfinishedReason = "its spawn never finished (left by a crash while it was being spawned)"

// storageReason words a failure to write under dir for people: a full disk
// or quota names the directory, so the fix is plain.
func storageReason(err error, dir string) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on device in " + dir
	case errors.Is(err, syscall.EDQUOT):
		return "disk quota exceeded in " + dir
	}
	return err.Error()
}

// readState reads name's manifest and judges it: a valid manifest as it
// is; a directory being spawned by this Manager as starting; a missing or
// damaged manifest as broken, with the reason. ErrNotFound when there is no
// such directory.
func (m *Manager) readState(name string) (*Manifest, error) {
	dir := m.dir(name)
	man, err := readManifest(dir)
	if err == nil {
		switch {
		case man.Name != name:
			return brokenManifest(name, fmt.Sprintf("its manifest %s names the session %q", filepath.Join(dir, manifestName), man.Name)), nil
		case !knownStatus(man.Status):
			return brokenManifest(name, fmt.Sprintf("its manifest %s has the unknown status %q", filepath.Join(dir, manifestName), man.Status)), nil
		case man.Status == StatusStarting && man.WorkerPID == 0 && !m.isSpawning(name):
			b := brokenManifest(name, unfinishedReason)
			b.Argv, b.Cwd, b.CreatedAt = man.Argv, man.Cwd, man.CreatedAt
			return b, nil
		}
		return m.settledInMemory(name, man), nil
	}
	if fi, serr := os.Lstat(dir); serr != nil || !fi.IsDir() {
		return nil, notFound(name)
	}
	if errors.Is(err, errNoManifest) {
		if m.isSpawning(name) {
			return &Manifest{Name: name, Status: StatusStarting}, nil
		}
		return brokenManifest(name, noManifestReason), nil
	}
	return brokenManifest(name, err.Error()), nil
}

func knownStatus(s Status) bool {
	_, ok := StatusTable[s]
	return ok && s != StatusBroken && s != StatusUnresponsive // reported, never stored
}

func (m *Manager) isSpawning(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spawningNames[name]
}

// liveWorker finds the worker of name's session, if one lives: by its
// socket (it answers hello for that name) or by its process. It returns
// its pid (0 for none) and how it was found, for people.
func (m *Manager) liveWorker(ctx context.Context, name string) (int, string) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c, err := rpc.Dial(dctx, m.socket(name), rpc.ClientOptions{}); err == nil {
		var st liveStatus
		err := c.Call(dctx, mHello, nil, &st)
		c.Close()
		if err == nil && st.Name == name && processAlive(st.WorkerPID, 0) {
			return st.WorkerPID, "its socket"
		}
	}
	if ws := workersOf(m.dir(name)); len(ws) > 0 {
		return ws[0].pid, "its process"
	}
	return 0, ""
}

// brokenStopSlack is how long past the worker's own stop grace Stop waits
// for a broken session's worker to record its end before killing it.
const brokenStopSlack = 3 * time.Second

// stopBroken ends whatever of a broken session still runs. A worker that
// answers on its socket is asked to stop as usual (it records how the
// program ended and writes a valid manifest again). A worker found only by
// its process is sent SIGTERM, which makes it stop its program (SIGTERM,
// then SIGKILL after DefaultStopGrace) and record the end; one that has
// not exited by then is killed with every process below it. It returns
// once no worker of the session is left.
func (m *Manager) stopBroken(ctx context.Context, name string, sig syscall.Signal, grace time.Duration) (*ExitInfo, error) {
	found := false
	if pid, how := m.liveWorker(ctx, name); pid > 0 && how == "its socket" {
		found = true
		if c, err := rpc.Dial(ctx, m.socket(name), rpc.ClientOptions{}); err == nil {
			var info ExitInfo
			c.Call(ctx, mStop, stopParams{Signal: int(sig), Grace: grace}, &info)
			c.Close()
		}
	}
	deadline := time.Now().Add(DefaultStopGrace + brokenStopSlack)
	termed := map[int]bool{}
	for {
		ws := workersOf(m.dir(name))
		if len(ws) == 0 {
			break
		}
		found = true
		if time.Now().After(deadline) {
			for _, w := range ws {
				signalAll(0, sessionMembers(0, w.pid, 0), syscall.SIGKILL)
				syscall.Kill(w.pid, syscall.SIGKILL)
			}
		} else {
			for _, w := range ws {
				if !termed[w.pid] {
					termed[w.pid] = true
					syscall.Kill(w.pid, syscall.SIGTERM)
				}
			}
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// A socket left by a worker that is gone would only mislead.
	if pid, _ := m.liveWorker(ctx, name); pid == 0 {
		os.Remove(m.socket(name))
	}
	if found {
		m.log.Info().Str("session", name).Msg("broken session stopped")
	}
	man, err := m.readState(name)
	if err != nil {
		return nil, err
	}
	if man.Status.Terminal() {
		info := exitFromManifest(man)
		info.AlreadyEnded = !found
		return info, nil
	}
	return &ExitInfo{Name: name, Status: man.Status, AlreadyEnded: !found}, nil
}

// removeDir deletes a session's files. It needs no free space (nothing is
// written): the directory is renamed out of the way first, so the name is
// free at once and a crash mid-removal leaves no half session under it,
// only a ".rm-" directory that Reconcile clears. Called with the session's
// lock held.
func (m *Manager) removeDir(name string) error {
	trash := filepath.Join(m.sessions, trashPrefix+name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(m.dir(name), trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return notFound(name) // another removal won the race
		}
		return fmt.Errorf("remove session %q: %w", name, err)
	}
	os.Remove(m.socket(name))
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove session %q: %w", name, err)
	}
	return nil
}

// trashPrefix starts the name of a session directory being removed.
const trashPrefix = ".rm-"

// hasEvents reports whether a session directory holds any recorded event.
func hasEvents(dir string) bool {
	for _, n := range []string{eventlog.FileName, eventlog.OldFileName} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}

// reconcileBroken classifies a broken session: an orphan worker (it runs
// though its manifest is missing or damaged), a leftover with nothing worth
// keeping (removed), or broken (kept for a person to look at and remove).
func (m *Manager) reconcileBroken(ctx context.Context, name string, man *Manifest) ReconcileEntry {
	ent := ReconcileEntry{Name: name, Before: StatusBroken, After: StatusBroken}
	pid, how := m.liveWorker(ctx, name)
	if pid > 0 {
		ent.Action = ActionOrphanWorker
		ent.Detail = fmt.Sprintf("%s, but its worker (pid %d, found by %s) runs; listed as broken; agentctl stop %s ends it, agentctl rm --force %s removes it",
			strings.TrimPrefix(man.Reason, "it "), pid, how, name, name)
		return ent
	}
	unlock, err := m.lockSession(ctx, name)
	if err != nil {
		ent.Action, ent.Detail = ActionUnreachable, "reconcile ran out of time"
		return ent
	}
	defer unlock()
	if (man.Reason == noManifestReason || man.Reason == unfinishedReason) && !m.isSpawning(name) && !hasEvents(m.dir(name)) {
		if err := m.removeDir(name); err == nil {
			ent.Action, ent.After = ActionRemovedLeftover, StatusDestroyed
			ent.Detail = "a directory without a manifest, a worker or any event (left by a crash or a full disk during spawn): removed"
			return ent
		}
	}
	ent.Action = ActionBroken
	ent.Detail = fmt.Sprintf("%s; no worker runs; listed as broken; agentctl rm %s removes it", man.Reason, name)
	return ent
}

// clearTrash removes what interrupted removals left (".rm-*" directories)
// and reports each.
func (m *Manager) clearTrash(ents []os.DirEntry) []ReconcileEntry {
	var out []ReconcileEntry
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), trashPrefix) {
			continue
		}
		ent := ReconcileEntry{Name: e.Name(), Before: StatusDestroying, After: StatusDestroyed, Action: ActionRemovedLeftover,
			Detail: "what an interrupted removal left: removed"}
		if err := os.RemoveAll(filepath.Join(m.sessions, e.Name())); err != nil {
			ent.Action, ent.After, ent.Detail = ActionUnreachable, StatusDestroying, fmt.Sprintf("what an interrupted removal left, could not be removed: %v", err)
		}
		out = append(out, ent)
	}
	return out
}
