package session

import "context"

// Lock order in pkg/session (daemon side), outermost first:
//
//  1. a session's lock (Manager.lockSession): serialises attaching to,
//     judging and settling one session's worker, and removing its files.
//     One session's lock at a time: no code holds two. It is held across a
//     dial and hello of that session's worker (at most attachTimeout), so
//     nothing that serves another session, nor the heartbeat, waits on it.
//  2. Manager.mu: the maps of live, unanswered and spawning sessions; held
//     only for map updates, never across I/O or a call.
//  3. a handle's health (handle.hl.mu) and the manifest watch's mutex:
//     leaves, held for a few field updates.
//
// No Manager-wide lock is held across a worker call, a dial or a wait for a
// process: a stopped worker delays only calls on its own session.

// sessionLock is one session's lock: a token in a channel, so taking it can
// give up with its caller's context. refs (guarded by Manager.mu) counts its
// holders and waiters; the last one out removes it from Manager.locks.
type sessionLock struct {
	token chan struct{}
	refs  int
}

// lockSession takes name's lock, or returns ctx's error if ctx ends first.
// The returned function releases it.
func (m *Manager) lockSession(ctx context.Context, name string) (unlock func(), err error) {
	m.mu.Lock()
	l := m.locks[name]
	if l == nil {
		l = &sessionLock{token: make(chan struct{}, 1)}
		m.locks[name] = l
	}
	l.refs++
	m.mu.Unlock()
	release := func() {
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.locks, name)
		}
		m.mu.Unlock()
	}
	select {
	case l.token <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	return func() {
		<-l.token
		release()
	}, nil
}
