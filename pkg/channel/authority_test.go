package channel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBindingASessionNeedsProof: a registration that binds a session is
// refused ErrDenied unless mayBind vouches for the caller (explicit
// session, or the one its environment claims with a cc_session_id), and
// the refused caller holds nothing; an unbound channel needs no proof.
func TestBindingASessionNeedsProof(t *testing.T) {
	r := NewRegistry()
	deny := func(string) error { return errors.New("process 9 is not one of session \"vic\"'s processes") }
	for _, tc := range []struct {
		name    string
		p       Registration
		mayBind func(string) error
	}{
		{"explicit session, refused", Registration{Session: "vic"}, deny},
		{"explicit session, nobody to vouch", Registration{Session: "vic"}, nil},
		{"session from the environment", Registration{CCSessionID: "cc-1"}, deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := r.Register(&fakeListener{name: "thief"}, tc.p, func() string { return "vic" }, tc.mayBind)
			if !errors.Is(err, ErrDenied) {
				t.Fatalf("register %+v: got %v, want ErrDenied", tc.p, err)
			}
		})
	}
	if len(r.List()) != 0 {
		t.Fatalf("refused registrations left channels: %+v", r.List())
	}
	if _, _, err := r.Register(&fakeListener{name: "svc"}, Registration{ID: "free"}, func() string { return "" }, nil); err != nil {
		t.Fatalf("an unbound channel: %v", err)
	}
	owner := &fakeListener{name: "owner"}
	if _, _, err := r.Register(owner, Registration{Session: "vic"}, nil, func(string) error { return nil }); err != nil {
		t.Fatalf("a vouched binding: %v", err)
	}
}

// TestOnlyTheChannelsListenerReplies: a reply with the ask's id from
// another listener is ErrDenied and does not consume the ask; the holder's
// reply then answers it.
func TestOnlyTheChannelsListenerReplies(t *testing.T) {
	r := NewRegistry()
	owner, thief := &fakeListener{name: "owner"}, &fakeListener{name: "thief"}
	if _, _, err := r.Register(owner, Registration{ID: "c", Session: "vic"}, nil, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Register(thief, Registration{ID: "t"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *Answer
		err error
	}
	done := make(chan answer, 1)
	go func() {
		_, res, err := r.Ask(context.Background(), Peer{}, AskRequest{Session: "vic", Text: "6*7?", Timeout: time.Minute},
			func(string, string, string, string) {})
		done <- answer{res, err}
	}()
	var askID string
	deadline := time.Now().Add(30 * time.Second)
	for askID == "" {
		owner.mu.Lock()
		if len(owner.got) > 0 {
			var a AskMessage
			json.Unmarshal(owner.got[0].Body, &a)
			askID = a.AskID
		}
		owner.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the ask never reached the channel")
		}
		time.Sleep(time.Millisecond) // polling a fake listener; no other way to wait for it
	}
	if _, err := r.Reply(thief, askID, "43 (spoofed)"); !errors.Is(err, ErrDenied) {
		t.Fatalf("reply from another listener: got %v, want ErrDenied", err)
	}
	if _, err := r.Reply(owner, askID, "42"); err != nil {
		t.Fatalf("reply from the channel's listener: %v", err)
	}
	if a := <-done; a.err != nil || a.res.Text != "42" {
		t.Fatalf("ask answered %+v, %v; want 42", a.res, a.err)
	}
}

// TestBindingByCCSessionIDNeedsTheSameProofAsByName: a cc_session_id from
// a caller that claims no session is refused ErrDenied (it was bound with
// no proof at all, and then received the pushes meant for a session of
// that name), and a push to that name finds no channel; from a caller
// inside a session, the session must vouch, as for a name.
func TestBindingByCCSessionIDNeedsTheSameProofAsByName(t *testing.T) {
	r := NewRegistry()
	yes := func(string) error { return nil }
	_, _, err := r.Register(&fakeListener{name: "outsider"}, Registration{CCSessionID: "q"}, func() string { return "" }, yes)
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "cc_session_id") {
		t.Fatalf("cc_session_id from a caller in no session: got %v, want ErrDenied naming cc_session_id", err)
	}
	if _, err := r.Push(context.Background(), Peer{}, PushRequest{Session: "q", Message: json.RawMessage(`"for q's agent"`)}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("push --session q after the refusal: got %v, want ErrUnknown", err)
	}
	var asked string
	res, _, err := r.Register(&fakeListener{name: "agent"}, Registration{CCSessionID: "q"}, func() string { return "w1" },
		func(s string) error { asked = s; return nil })
	if err != nil || asked != "w1" || res.Session != "w1" {
		t.Fatalf("cc_session_id from inside w1: got %+v %v (vouched for %q), want bound to w1 with w1's word", res, err, asked)
	}
}
