package session

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestAskOfAnAgentCLINeedsUntil: an ask without until of an agent CLI's
// session is refused before anything is typed, naming what works instead
// (an agent CLI reads its terminal all the time, so the ask's end rules
// answered with the echo or ran to the timeout); with until it is asked
// as any program is. The program here is cat declared an agent with
// spawn's Agent: the refusal is decided by the declaration alone.
func TestAskOfAnAgentCLINeedsUntil(t *testing.T) {
	t.Parallel()
	m := newTestEnv(t).manager(t)
	ctx := testCtx(t, 60*time.Second)
	if _, err := m.Spawn(ctx, SpawnRequest{Name: "cx", Argv: []string{"cat"}, Agent: "codex", Cwd: os.TempDir()}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Ask(ctx, AskRequest{Name: "cx", Text: "hello", Timeout: 10 * time.Second})
	wantErr(t, err, ErrInvalid, "ask without until of an agent CLI")
	for _, want := range []string{"codex", "nothing was typed", "--until", "agentctl wait cx --state waiting,needs_approval,needs_attention"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	res, err := m.Ask(ctx, AskRequest{Name: "cx", Text: "hi there", Until: "(?m)^hi there$", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("ask with until of an agent CLI: %v", err)
	}
	if res.Reason != ReasonMatched {
		t.Errorf("ask with until ended by %s, want %s", res.Reason, ReasonMatched)
	}
	var typed []string
	m.Logs(ctx, LogsRequest{Name: "cx"}, func(ev Event) error {
		if ev.Type == EventInput {
			typed = append(typed, string(ev.Data))
		}
		return nil
	})
	if got := strings.Join(typed, ""); strings.Contains(got, "hello") || !strings.Contains(got, "hi there") {
		t.Errorf("typed %q: want only the ask with until's text", got)
	}
}
