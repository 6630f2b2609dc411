package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLease: while a person holds a session's keyboard, sends, asks and
// approvals from anyone else are busy naming them and type nothing; the
// holder's own go through; a second take-over is refused naming the first;
// a hand-back frees the session, and both ends are in the event log.
func TestLease(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "sh", Argv: []string{"sh", "-i"}, Env: []string{"PS1=$ "}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `\$`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	l, err := m.TakeOver(ctx, "sh", "the person in page 1")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.LeaseOf("sh"); got == nil || got.Holder != "the person in page 1" || got.ID != "" || !got.Since.Equal(l.Since) {
		t.Fatalf("LeaseOf: %+v, want the holder and since, without the id", got)
	}
	busy := func(err error, op string) {
		t.Helper()
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `session "sh" is taken over by the person in page 1 since`) ||
			!strings.Contains(err.Error(), "this "+op+" was not typed") || !strings.Contains(err.Error(), "hand back") {
			t.Errorf("%s while taken over: %v, want busy naming the holder", op, err)
		}
	}
	busy(m.Send(ctx, SendRequest{Name: "sh", Text: "echo agent-$((1+1))\n"}), "send")
	_, err = m.Ask(ctx, AskRequest{Name: "sh", Text: "echo agent-$((2+2))", Timeout: 5 * time.Second})
	busy(err, "ask")
	_, err = m.Approve(ctx, "sh", false, "")
	busy(err, "approve")
	_, err = m.TakeOver(ctx, "sh", "the person in page 2")
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "already taken over by the person in page 1") {
		t.Errorf("a second take-over: %v, want busy naming page 1", err)
	}
	// The holder types.
	if err := m.Send(WithLease(ctx, l.ID), SendRequest{Name: "sh", Text: "echo holder-$((3+3))\n"}); err != nil {
		t.Fatalf("the holder's send: %v", err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `holder-6`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Another lease's id is not the holder's.
	busy(m.Send(WithLease(ctx, "not-the-id"), SendRequest{Name: "sh", Text: "x"}), "send")
	if m.HandBack("sh", "not-the-id", "x") {
		t.Error("HandBack with a wrong id ended the lease")
	}
	if !m.HandBack("sh", l.ID, "handed back") {
		t.Fatal("HandBack of the lease held said none was ended")
	}
	if m.HandBack("sh", l.ID, "twice") {
		t.Error("a second HandBack ended something")
	}
	if m.LeaseOf("sh") != nil {
		t.Error("a lease after the hand-back")
	}
	if err := m.Send(ctx, SendRequest{Name: "sh", Text: "echo after-$((4+4))\n"}); err != nil {
		t.Fatalf("send after the hand-back: %v", err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `after-8`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, "sh")
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(snap.Lines, "\n"); strings.Contains(s, "agent-") {
		t.Errorf("a refused send or ask was typed:\n%s", s)
	}
	var marks []string
	m.Logs(context.Background(), LogsRequest{Name: "sh"}, func(ev Event) error {
		if ev.Type == EventMarker && ev.Reason != "" {
			marks = append(marks, ev.Reason+": "+ev.Text)
		}
		return nil
	})
	if len(marks) != 2 || !strings.HasPrefix(marks[0], "take_over: taken over by the person in page 1") ||
		!strings.HasPrefix(marks[1], "hand_back: handed back by the person in page 1 after ") || !strings.HasSuffix(marks[1], ": handed back") {
		t.Errorf("event log markers %q, want the take-over and the hand-back", marks)
	}
	// A session that does not run cannot be taken over.
	if _, err := m.TakeOver(ctx, "nosuch", "p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("taking over a session that does not exist: %v, want not found", err)
	}
}

// TestTakeOverEndsARunningAsk: an ask in progress when a person takes the
// session over ends at once, busy naming them, instead of typing on.
func TestTakeOverEndsARunningAsk(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "sh", Argv: []string{"sh", "-i"}, Env: []string{"PS1=$ "}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `\$`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Ask(ctx, AskRequest{Name: "sh", Text: "sleep 20; echo late", Until: "late", Timeout: 25 * time.Second})
		done <- err
	}()
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Until: `sleep 20`, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := m.TakeOver(ctx, "sh", "the person in page 1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "taken over by the person in page 1 during this ask") {
			t.Errorf("the running ask: %v, want busy naming the holder", err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("the running ask ended %s after the take-over", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the running ask did not end 15 s after the take-over")
	}
	m.leases.mu.Lock()
	left := len(m.leases.asks)
	m.leases.mu.Unlock()
	if left != 0 {
		t.Errorf("%d sessions still list running asks", left)
	}
}
