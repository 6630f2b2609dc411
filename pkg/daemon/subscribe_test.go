package daemon

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

func TestChangeKindsHaveWireTwins(t *testing.T) {
	domain := []session.ChangeKind{session.ChangeCurrent, session.ChangeState, session.ChangeSpawned, session.ChangeExited, session.ChangeRestarted, session.ChangeRemoved}
	contract := []string{wire.ChangeCurrent, wire.ChangeState, wire.ChangeSpawned, wire.ChangeExited, wire.ChangeRestarted, wire.ChangeRemoved}
	for i := range domain {
		if string(domain[i]) != contract[i] {
			t.Errorf("change kind %q has the wire twin %q", domain[i], contract[i])
		}
	}
}

// TestStateChangeConvertsEveryField fails when a field is added to either
// side and not converted: every field of a change filled in, every field
// of the wire's must be set.
func TestStateChangeConvertsEveryField(t *testing.T) {
	code := 2
	now := time.Now()
	c := session.StateChange{Session: "a", Kind: session.ChangeState, Seq: 9, TS: now, State: "waiting", Since: now, Source: "hook",
		Detail: &agentstate.Detail{PromptID: "p"}, Prev: "working", PrevSince: now, Turn: time.Second, Status: session.StatusRunning,
		Termination: session.TermNonzeroExit, ExitCode: &code, Signal: "TERM", Reason: "r"}
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves session.StateChange.%s unset; set it", v.Type().Field(i).Name)
		}
	}
	w := reflect.ValueOf(stateChange(c))
	for i := range w.NumField() {
		if w.Field(i).IsZero() {
			t.Errorf("stateChange leaves wire.StateChange.%s unset", w.Type().Field(i).Name)
		}
	}
	if v.NumField() != w.NumField() {
		t.Errorf("session.StateChange has %d fields, wire.StateChange %d: convert the new one", v.NumField(), w.NumField())
	}
}

// floodSessions' Subscribe delivers changes as fast as they are taken,
// until delivery fails, and reports how it ended.
type floodSessions struct {
	Sessions
	ended chan error
}

func (f floodSessions) Subscribe(ctx context.Context, req session.SubscribeRequest, fn func(session.StateChange) error) error {
	for i := uint64(1); ; i++ {
		err := fn(session.StateChange{Session: "a", Kind: session.ChangeState, Seq: i, TS: time.Now(), State: "working",
			Detail: &agentstate.Detail{Question: strings.Repeat("x", 1000)}})
		if err != nil {
			f.ended <- err
			return err
		}
	}
}

func (floodSessions) SetTimeouts(session.Timeouts) {}

func (floodSessions) Reconcile(context.Context) (*session.ReconcileReport, error) {
	return &session.ReconcileReport{}, nil
}

func TestSubscriberThatStopsReadingIsDropped(t *testing.T) {
	t.Parallel()
	fs := floodSessions{ended: make(chan error, 1)}
	td := startDaemonWith(t, Config{WriteTimeout: 300 * time.Millisecond}, fs)
	rc := dialRaw(t, td.socket)
	rc.Write(frame([]byte(`{"id":1,"method":"agent.subscribe","params":{"follow":true}}`))) // then reads nothing
	select {
	case err := <-fs.ended:
		if !strings.Contains(err.Error(), "write_timeout") {
			t.Errorf("the subscription ended with %q, want it to name write_timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a subscriber that reads nothing was not dropped after the write timeout")
	}
	if _, err := td.client(t).Hello(context.Background(), wire.HelloParams{}); err != nil {
		t.Errorf("the daemon stopped serving others: %v", err)
	}
	// What was written before the drop is still there to read; then the
	// connection's end.
	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var err error
	for err == nil {
		_, err = rc.fr.ReadFrame()
	}
	if isTimeoutErr(err) {
		t.Error("the stalled subscriber's connection was not closed")
	}
}
