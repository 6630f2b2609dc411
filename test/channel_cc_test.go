package test

import (
	"strings"
	"testing"
	"time"
)

// TestCCSessionIDCannotTakeAnotherSessionsPushes: a cc_session_id binding
// needs the same proof as a name. From a process in no session it is
// permission_denied (it used to bind with no proof and then receive
// `channel push --session q` meant for session q's agent); from inside a
// session p, a cc_session_id that is another session's name is refused
// too, since a push to that name would reach p's channel. Either way, the
// push to q finds no channel.
func TestCCSessionIDCannotTakeAnotherSessionsPushes(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "q", "--", "sleep", "3600")

	lp := h.startListenEnv(nil, "--id", "out.ch", "--cc-session-id", "q")
	select {
	case <-lp.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener outside every session was not refused")
	}
	if code := lp.cmd.ProcessState.ExitCode(); code != 23 || !strings.Contains(lp.stderr.String(), "needs proof") {
		t.Errorf("listen --cc-session-id q outside every session: exit %d, stderr %q; want 23 saying proof is needed", code, lp.stderr)
	}

	h.ctl(0, "spawn", "p", "--", "sh", "-c", bin.agentctl+" channel listen --id p.ch --cc-session-id q; echo listen-exit=$?; exec sleep 3600")
	await(t, 30*time.Second, "the listener inside p to be refused", func() bool {
		if out := h.ctl(0, "channel", "list"); strings.Contains(out, "p.ch") {
			t.Fatalf("a channel of session p took session q's name as its cc_session_id:\n%s", out)
		}
		out, _, _ := h.agentctl("", "snapshot", "p")
		return strings.Contains(out, "listen-exit=23")
	})
	if out, _, _ := h.agentctl("", "snapshot", "p"); !strings.Contains(out, "another session") {
		t.Errorf("the refusal inside p does not say why:\n%s", out)
	}
	if _, errOut, code := h.agentctl("", "channel", "push", "--session", "q", "my password is hunter2"); code != 20 {
		t.Errorf("push --session q: exit %d (%s), want 20 (channel_unknown): no channel is q's", code, errOut)
	}
}
