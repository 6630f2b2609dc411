package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
)

// TestSessionKnowsNothingOfTheWire keeps the domain free of the contract:
// pkg/session exports Go types and sentinels, and only pkg/daemon turns them
// into wire codes. The worker protocol uses the engine (internal/rpc), which
// is not the contract either. pkg/capture is held to the same rule.
func TestSessionKnowsNothingOfTheWire(t *testing.T) {
	for _, pkg := range []string{".", "../capture"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range []string{"agentd/pkg/wire", "agentd/pkg/daemon", "agentd/cmd/"} {
				if strings.Contains(dep, banned) {
					t.Errorf("go list -deps %s: depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestErrorKindsRoundTrip carries every session error kind over the worker
// protocol's encoding and back: the sentinel, the message and, for a
// timeout, the evidence must survive.
func TestErrorKindsRoundTrip(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(kind.Error(), func(t *testing.T) {
			in := errorf(kind, "session %q: something about %v", "w1", kind)
			got := decodeError(encodeError(in))
			if !errors.Is(got, kind) || got.Error() != in.Error() {
				t.Errorf("decodeError(encodeError(%v)) = %T %v; want the same message wrapping %v", in, got, got, kind)
			}
			for _, other := range Kinds() {
				if other != kind && errors.Is(got, other) {
					t.Errorf("decodeError(encodeError(%v)) also matches %v", in, other)
				}
			}
		})
	}
	t.Run("timeout with evidence", func(t *testing.T) {
		in := &TimeoutError{Name: "w1", Op: "ask", Timeout: 3 * time.Second, Partial: "half", Screen: []string{"$ "}, FromSeq: 4, ToSeq: 9, Hint: "h"}
		got := decodeError(encodeError(fmt.Errorf("ask: %w", in)))
		var te *TimeoutError
		if !errors.As(got, &te) || !reflect.DeepEqual(te, in) || !errors.Is(got, ErrTimeout) {
			t.Errorf("decodeError(encodeError(%+v)) = %T %+v; want the same *TimeoutError", in, got, got)
		}
	})
	t.Run("no kind is internal", func(t *testing.T) {
		in := errors.New("disk on fire")
		enc := encodeError(in)
		got := decodeError(enc)
		if enc.Code != rpc.CodeInternal || got.Error() != in.Error() {
			t.Errorf("encodeError(%v) = %+v, decoded %v; want code internal and the message kept", in, enc, got)
		}
		for _, k := range Kinds() {
			if errors.Is(got, k) {
				t.Errorf("an error of no kind came back as %v", k)
			}
		}
	})
}

// TestWorkerProtocolFieldsStay pins the worker protocol's ask and wait
// payloads, which reuse the domain's request types: workers started by an
// older agentd read exactly these fields.
func TestWorkerProtocolFieldsStay(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{askParams{ID: "a-1", AskRequest: AskRequest{Name: "w1", Text: "hi", Timeout: 2, Idle: 3, FallbackIdle: 4, Until: "x", LockTimeout: 5}},
			`{"id":"a-1","text":"hi","timeout":2,"idle":3,"fallback_idle":4,"until":"x","lock_timeout":5}`},
		{waitParams{Name: "w1", Until: "y", Idle: 1, Exit: true, Timeout: 6},
			`{"until":"y","idle":1,"exit":true,"timeout":6}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("json of %T = %s, %v; want %s", tt.v, b, err, tt.want)
		}
	}
}
