package session

import (
	"strings"
	"testing"
	"time"
)

// TestAskNeverReadyTypesNothing: a program that never reads its terminal
// gets nothing typed; the ask fails with lock_timeout saying what the
// program does instead (issue 26, bad input).
func TestAskNeverReadyTypesNothing(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "sl", "sleep", "100")
	ctx := testCtx(t, 30*time.Second)
	_, err := m.Ask(ctx, AskRequest{Name: "sl", Text: "hello", LockTimeout: 500 * time.Millisecond, Timeout: 10 * time.Second})
	wantErr(t, err, ErrLockTimeout, "ask of a program that never reads")
	if !strings.Contains(err.Error(), "sleeping") || !strings.Contains(err.Error(), "not waiting for input") {
		t.Errorf("the refusal does not say what the program does: %v", err)
	}
	m.Logs(ctx, LogsRequest{Name: "sl"}, func(ev Event) error {
		if ev.Type == EventInput || ev.Type == EventAsk {
			t.Errorf("something was typed or asked: %+v", ev)
		}
		return nil
	})
}

// TestAskWithoutEcho: a program reading a password (echo off) is typed
// into once it reads, and the answer is what it printed.
func TestAskWithoutEcho(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "pw", "bash", "--norc", "--noprofile", "-c", `while true; do read -r -s -p "Password: " x; echo; echo "got ${#x} characters"; done`)
	ctx := testCtx(t, 30*time.Second)
	res, err := m.Ask(ctx, AskRequest{Name: "pw", Text: "s3cret!", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "got 7 characters" || res.Reason != ReasonPrompt || res.ReadySignal != SignalRead || res.Prompt != "Password:" {
		t.Errorf("ask through a password prompt: %q (%s, %s, prompt %q), want \"got 7 characters\" at Password: by read", res.Answer, res.Reason, res.ReadySignal, res.Prompt)
	}
	if strings.Contains(strings.Join(res.Screen, "\n"), "s3cret") {
		t.Errorf("the secret shows on the screen: %q", res.Screen)
	}
}

// TestAskIncompleteThenContinued: a question that leaves the program
// waiting for the rest of its input comes back at once as incomplete; the
// next one is typed as the rest; after an interrupt the next ask is an
// ordinary one; after the program is gone it is refused, nothing typed.
func TestAskIncompleteThenContinued(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "sh", "bash", "--norc", "--noprofile", "-i")
	ctx := testCtx(t, 60*time.Second)
	ask := func(q string) *AskResult {
		t.Helper()
		res, err := m.Ask(ctx, AskRequest{Name: "sh", Text: q, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("ask %q: %v", q, err)
		}
		return res
	}
	if res := ask("python3 -q"); res.Reason != ReasonPrompt || res.Prompt != ">>>" {
		t.Fatalf("starting python: %q (%s, prompt %q)", res.Answer, res.Reason, res.Prompt)
	}
	start := time.Now()
	res := ask("x = (6 *")
	if res.Reason != ReasonIncomplete || res.Prompt != "..." || res.Continued {
		t.Fatalf("an open bracket: %q (%s, prompt %q, continued %v), want incomplete at ...", res.Answer, res.Reason, res.Prompt, res.Continued)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the incomplete ask took %s; it should end when the program waits again", d)
	}
	res = ask("7); print(x)")
	if res.Answer != "42" || res.Reason != ReasonPrompt || !res.Continued {
		t.Errorf("the rest of the input: %q (%s, continued %v), want 42, continued", res.Answer, res.Reason, res.Continued)
	}
	// Left incomplete, then interrupted by hand: an ordinary ask.
	if res := ask("y = ["); res.Reason != ReasonIncomplete {
		t.Fatalf("an open list: %s", res.Reason)
	}
	if err := m.Send(ctx, SendRequest{Name: "sh", Keys: []string{"ctrl+c"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Ready: true, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if res := ask("print(6*7)"); res.Answer != "42" || res.Continued {
		t.Errorf("after an interrupt: %q (continued %v), want 42, not continued", res.Answer, res.Continued)
	}
	// Left incomplete, then the program ends: refused, nothing typed.
	if res := ask("z = ("); res.Reason != ReasonIncomplete {
		t.Fatalf("an open bracket: %s", res.Reason)
	}
	// Each key once the program has taken the last and waits again.
	for _, k := range []string{"ctrl+c", "ctrl+d"} {
		if err := m.Send(ctx, SendRequest{Name: "sh", Keys: []string{k}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Wait(ctx, WaitRequest{Name: "sh", Ready: true, Timeout: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Ask(ctx, AskRequest{Name: "sh", Text: "echo typed", Timeout: 10 * time.Second})
	wantErr(t, err, ErrInvalidStatus, "an ask after the incomplete program ended")
	if !strings.Contains(err.Error(), "nothing was typed") {
		t.Errorf("the refusal does not say nothing was typed: %v", err)
	}
	if res := ask("echo $((6*7))"); res.Answer != "42" {
		t.Errorf("the ask after the refusal: %q, want 42", res.Answer)
	}
}

// TestWaitReady: wait --ready returns once the program waits for input
// and not before, and status says ready or busy.
func TestWaitReady(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	spawn(t, m, "r", "bash", "--norc", "--noprofile", "-c", "sleep 1.5; read -r -p 'name? ' x; echo hi $x; sleep 100")
	ctx := testCtx(t, 30*time.Second)
	start := time.Now()
	st, err := m.Status(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Input != InputBusy {
		t.Errorf("a program asleep reads as %q, want busy", st.Input)
	}
	res, err := m.Wait(ctx, WaitRequest{Name: "r", Ready: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonReady || time.Since(start) < time.Second {
		t.Errorf("wait ready: %s after %s, want ready after the program's 1.5 s sleep", res.Reason, time.Since(start))
	}
	if st, _ := m.Status(ctx, "r"); st.Input != InputReady {
		t.Errorf("a program at its read reads as %q, want ready", st.Input)
	}
}
