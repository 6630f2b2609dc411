package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// TokenEnv names the variable in which a session's program (and so every
// process it starts) finds the session's secret. The worker makes the
// secret at start and puts it there only: never in argv, a file or the
// manifest. It is how a process inside a session that is not a descendant
// of its worker (one started through another service, say) proves where it
// runs. It keeps out programs that merely claim a session (AGENTD_SESSION
// can be set by anyone); it is no wall against the user's own programs set
// on it, which can read another process's environment.
const TokenEnv = "AGENTD_SESSION_TOKEN"

// newToken returns a fresh session secret: 32 random bytes, in hex.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tokenDigestOf is the form in which a session's secret leaves its worker:
// its SHA-256 in hex. Knowing it does not let anyone present the secret.
func tokenDigestOf(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// digest is the secret's digest a hello carries, or that of the secret a
// worker of an older agentd sent whole.
func (st *liveStatus) digest() string {
	if st.TokenDigest == "" && st.Token != "" {
		return tokenDigestOf(st.Token)
	}
	return st.TokenDigest
}

// withEnv returns env with kv set, replacing any entry of the same key: a
// program started inside another session must not keep that one's secret.
func withEnv(env []string, kv string) []string {
	k, _, _ := strings.Cut(kv, "=")
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if ek, _, _ := strings.Cut(e, "="); ek != k {
			out = append(out, e)
		}
	}
	return append(out, kv)
}

// maxAncestry bounds the walk up a process's parents (pid_max is 4M, and
// real trees are a few dozen deep).
const maxAncestry = 4096

// Vouch says whether the process pid runs inside the running session name:
// it descends from the session's worker (the worker is a subreaper, so
// what its program starts stays below it even after a double fork), or
// token is the session's secret (TokenEnv). ok false comes with why, a
// reason for people; err is only for ctx ending. A session that does not
// exist or does not run vouches for nobody.
//
// A program may ask before its session's spawn has finished (it starts
// before its worker has recorded it): Vouch then waits for the spawn, at
// most SpawnTimeout.
func (m *Manager) Vouch(ctx context.Context, name string, pid int, token string) (ok bool, why string, err error) {
	h, why, err := m.runningHandle(ctx, name, true)
	if h == nil {
		return false, why, err
	}
	if tokenMatches(h, token) {
		return true, "", nil
	}
	if descends(pid, h.workerPID, h.workerStart) {
		return true, "", nil
	}
	if token != "" {
		return false, fmt.Sprintf("the token given is not session %q's, and process %d is not one of its processes", name, pid), nil
	}
	return false, fmt.Sprintf("process %d is not one of session %q's processes and gave no token", pid, name), nil
}

// tokenMatches says whether token is the secret of h's session.
func tokenMatches(h *handle, token string) bool {
	return token != "" && h.tokenDigest != "" && subtle.ConstantTimeCompare([]byte(tokenDigestOf(token)), []byte(h.tokenDigest)) == 1
}

// runningHandle is the handle of the running session name, waiting for a
// spawn in progress (see Vouch); nil with the reason for people when the
// session does not exist or does not run, and err only for ctx ending.
// With confirm the worker is asked whether its program still runs (it
// outlives it for a moment); without, a caller whose worker call says so
// itself saves the round trip.
func (m *Manager) runningHandle(ctx context.Context, name string, confirm bool) (*handle, string, error) {
	h, man, err := m.lookup(ctx, name)
	deadline := time.Now().Add(m.opts.SpawnTimeout)
	for err == nil && h == nil && man.Status == StatusStarting && time.Now().Before(deadline) {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		h, man, err = m.lookup(ctx, name)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, err.Error(), nil
	}
	if h == nil {
		return nil, fmt.Sprintf("session %q is %s, so nothing runs inside it", name, man.Status), nil
	}
	if !confirm {
		return h, "", nil
	}
	// The worker outlives its program for a moment; ask it.
	if st, err := m.statusOf(ctx, h); err != nil || !st.Status.Allows().Live {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, fmt.Sprintf("session %q has ended, so nothing runs inside it", name), nil
	}
	return h, "", nil
}

// descends reports whether pid is a descendant of ancestor (started at
// start, 0 skips the check), by walking parents in /proc.
func descends(pid, ancestor int, start uint64) bool {
	if pid <= 1 || ancestor <= 1 || pid == ancestor {
		return false
	}
	if !processAlive(ancestor, start) {
		return false
	}
	for i := 0; i < maxAncestry && pid > 1; i++ {
		st, ok := readProcStat(pid)
		if !ok {
			return false
		}
		if st.ppid == ancestor {
			return true
		}
		pid = st.ppid
	}
	return false
}
