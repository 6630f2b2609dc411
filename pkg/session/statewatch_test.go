package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeClaude is a program that draws Claude Code's screens, recorded from
// the real CLI (pkg/agentstate's testdata), one per line of input: it
// works, asks for approval, works again and waits.
const fakeClaude = `d=$1
show() { printf '\033[2J\033[H%s' "$(cat "$d/claude-80x24-$1.txt")"; }
show working; read x; show permission; read x; show working; read x; show answered; read x; exit 3`

// changes collects a subscription's changes.
type changes struct {
	mu  sync.Mutex
	got []StateChange
}

func (c *changes) add(s StateChange) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
	return nil
}

func (c *changes) list() []StateChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]StateChange(nil), c.got...)
}

// awaitChange waits for a change that cond accepts and returns it.
func (c *changes) await(t *testing.T, what string, cond func(StateChange) bool) StateChange {
	t.Helper()
	var found StateChange
	await(t, 15*time.Second, what, func() bool {
		for _, s := range c.list() {
			if cond(s) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func spawnFakeClaude(t *testing.T, m *Manager, name string) {
	t.Helper()
	screens, err := filepath.Abs("../agentstate/testdata/screens")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Spawn(testCtx(t, 20*time.Second), SpawnRequest{Name: name, Argv: []string{"sh", "-c", fakeClaude, "sh", screens},
		Agent: "claude", Cwd: os.TempDir(), Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSubscribeDeliversStatesLifeAndSessionsSpawnedLater(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	spawn(t, m, "before", "sh", "-c", "read x")

	ctx, cancel := context.WithCancel(context.Background())
	var c changes
	done := make(chan error, 1)
	go func() { done <- m.Subscribe(ctx, SubscribeRequest{Current: true, Follow: true}, c.add) }()
	c.await(t, "the current state of the session there before", func(s StateChange) bool {
		return s.Session == "before" && s.Kind == ChangeCurrent && s.Status == StatusRunning
	})

	spawnFakeClaude(t, m, "agent")
	c.await(t, "the spawn of a session created after subscribing", func(s StateChange) bool {
		return s.Session == "agent" && s.Kind == ChangeSpawned
	})
	c.await(t, "working", func(s StateChange) bool { return s.Session == "agent" && s.State == "working" })
	send := func() {
		if err := m.Send(testCtx(t, 10*time.Second), SendRequest{Name: "agent", Text: "\r"}); err != nil {
			t.Fatal(err)
		}
	}
	send()
	ask := c.await(t, "needs_approval", func(s StateChange) bool { return s.Session == "agent" && s.State == "needs_approval" })
	if ask.Prev != "working" || ask.Detail == nil || ask.Detail.PromptID == "" || len(ask.Detail.Choices) == 0 || ask.Source != "screen" || ask.Seq == 0 {
		t.Fatalf("needs_approval change %+v (detail %+v): want prev working, a prompt id, choices, source screen and a seq", ask, ask.Detail)
	}
	send()
	again := c.await(t, "working after the answer", func(s StateChange) bool {
		return s.Session == "agent" && s.State == "working" && s.Prev == "needs_approval"
	})
	send()
	wait := c.await(t, "waiting", func(s StateChange) bool { return s.Session == "agent" && s.State == "waiting" })
	// The turn is the work since the answer: the wait for it is not.
	if want := wait.TS.Sub(again.TS); wait.Turn != want {
		t.Fatalf("waiting after working from %s: turn %s, want %s", again.TS, wait.Turn, want)
	}
	send()
	c.await(t, "the exit", func(s StateChange) bool {
		return s.Session == "agent" && s.Kind == ChangeExited && s.ExitCode != nil && *s.ExitCode == 3
	})
	// The exit is recorded before the session is settled as ended.
	await(t, 10*time.Second, "the ended session removed", func() bool {
		return m.Remove(testCtx(t, 10*time.Second), "agent", false) == nil
	})
	c.await(t, "the removal", func(s StateChange) bool { return s.Session == "agent" && s.Kind == ChangeRemoved })
	for _, s := range c.list() {
		t.Logf("%s %s seq %d state %q prev %q turn %s src %q", s.Session, s.Kind, s.Seq, s.State, s.Prev, s.Turn, s.Source)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Subscribe after its context ended: %v, want context.Canceled", err)
	}

}

func TestSubscribeResumesFromACursor(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	m := e.manager(t)
	spawnFakeClaude(t, m, "agent")
	ctx := testCtx(t, 30*time.Second)
	fctx, cancel := context.WithCancel(ctx)
	var live changes
	done := make(chan error, 1)
	go func() {
		done <- m.Subscribe(fctx, SubscribeRequest{Cursor: Cursor{Time: time.Unix(1, 0)}, Follow: true}, live.add)
	}()
	live.await(t, "working", func(s StateChange) bool { return s.State == "working" })
	if err := m.Send(ctx, SendRequest{Name: "agent", Text: "\r"}); err != nil {
		t.Fatal(err)
	}
	live.await(t, "needs_approval", func(s StateChange) bool { return s.State == "needs_approval" })
	cancel()
	<-done
	var all changes
	if err := m.Subscribe(ctx, SubscribeRequest{Cursor: Cursor{Time: time.Unix(1, 0)}}, all.add); err != nil {
		t.Fatal(err)
	}
	got := all.list()
	// Resume after the first change: the rest comes again, nothing before.
	var cur Cursor
	cur.Add(got[0])
	var again changes
	if err := m.Subscribe(ctx, SubscribeRequest{Cursor: cur}, again.add); err != nil {
		t.Fatal(err)
	}
	rest := again.list()
	if len(rest) != len(got)-1 || rest[0].Seq != got[1].Seq {
		t.Fatalf("from the cursor after seq %d: got %d changes starting %+v, want the %d after it", got[0].Seq, len(rest), rest, len(got)-1)
	}
	if err := m.Subscribe(ctx, SubscribeRequest{Cursor: Cursor{Seqs: map[string]uint64{"agent": 1 << 40}}}, again.add); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a cursor past the end of the log: %v, want ErrInvalid", err)
	}
	if err := m.Subscribe(ctx, SubscribeRequest{Names: []string{"nosuch"}}, again.add); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a session that does not exist: %v, want ErrNotFound", err)
	}
}
