package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/desktop"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// TestEveryDomainErrorHasItsCode round-trips every error kind of the
// components through toWireError and the client's side of the wire: the
// code is the table's, errors.Is against the wire sentinel matches, the
// message is the domain's, and retryable is the table's. A kind added to
// session, capture or channel without a row here fails the test.
func TestEveryDomainErrorHasItsCode(t *testing.T) {
	table := []struct {
		kind error
		code wire.Code
	}{
		{session.ErrNotFound, wire.CodeAgentNotFound},
		{session.ErrExists, wire.CodeAgentExists},
		{session.ErrInvalid, wire.CodeInvalidParams},
		{session.ErrSpawnFailed, wire.CodeSpawnFailed},
		{session.ErrInvalidStatus, wire.CodeInvalidStatus},
		{session.ErrLockTimeout, wire.CodeLockTimeout},
		{session.ErrTimeout, wire.CodeTimeout},
		{session.ErrBusy, wire.CodeBusy},
		{session.ErrDenied, wire.CodePermissionDenied},
		// pkg/capture's sentinels, as its doc lists them.
		{capture.ErrInvalid, wire.CodeInvalidParams},
		{capture.ErrTooLarge, wire.CodeInvalidParams},
		{capture.ErrRefused, wire.CodeRefused},
		{capture.ErrLockTimeout, wire.CodeLockTimeout},
		{capture.ErrBusy, wire.CodeBusy},
		{capture.ErrUnavailable, wire.CodeScreenUnavailable},
		{capture.ErrTimeout, wire.CodeTimeout},
		// pkg/channel's.
		{channel.ErrUnknown, wire.CodeChannelUnknown},
		{channel.ErrBusy, wire.CodeBusy},
		{channel.ErrInvalid, wire.CodeInvalidParams},
		{channel.ErrDenied, wire.CodePermissionDenied},
		{channel.ErrTimeout, wire.CodeTimeout},
		// pkg/desktop's.
		{desktop.ErrInvalid, wire.CodeInvalidParams},
		{desktop.ErrExists, wire.CodeAgentExists},
		{desktop.ErrNotFound, wire.CodeScreenUnavailable},
		{desktop.ErrBusy, wire.CodeBusy},
		{desktop.ErrStartFailed, wire.CodeSpawnFailed},
		{desktop.ErrUnavailable, wire.CodeScreenUnavailable},
		{context.DeadlineExceeded, wire.CodeTimeout},
		{context.Canceled, wire.CodeShuttingDown},
		{errors.New("disk on fire"), wire.CodeInternal},
	}
	covered := map[error]bool{}
	for _, tt := range table {
		covered[tt.kind] = true
		t.Run(tt.kind.Error(), func(t *testing.T) {
			in := fmt.Errorf("session \"w1\": %w", tt.kind)
			we := toWireError(in)
			if we.Code != tt.code {
				t.Fatalf("toWireError(%v) = code %s, want %s", in, we.Code, tt.code)
			}
			if !strings.Contains(we.Message, in.Error()) {
				t.Errorf("toWireError(%v) = message %q, want it to carry the domain's message", in, we.Message)
			}
			if we.Retryable != wire.InfoOf(tt.code).Retryable {
				t.Errorf("toWireError(%v) = retryable %v, want the table's %v", in, we.Retryable, wire.InfoOf(tt.code).Retryable)
			}
			// What the client decodes is the same object, by value.
			var got *wire.Error
			b, _ := json.Marshal(we)
			if err := json.Unmarshal(b, &got); err != nil || !errors.Is(got, &wire.Error{Code: tt.code}) {
				t.Errorf("the decoded %s does not match errors.Is(err, code %s): %v", b, tt.code, err)
			}
		})
	}
	for _, kind := range append(append(append(session.Kinds(), channel.Kinds()...), capture.Kinds()...), desktop.Kinds()...) {
		if !covered[kind] {
			t.Errorf("domain kind %v has no row in this table (and maybe none in toWireError)", kind)
		}
	}
}

// TestTimeoutCarriesItsEvidence checks that a session timeout reaches the
// client with what was seen, in the wire's units (ms).
func TestTimeoutCarriesItsEvidence(t *testing.T) {
	te := &session.TimeoutError{Name: "w1", Op: "ask", Timeout: 1500 * time.Millisecond, Partial: "half",
		Screen: []string{"$ "}, FromSeq: 3, ToSeq: 8, Hint: "h"}
	we := toWireError(fmt.Errorf("ask: %w", te))
	var d wire.TimeoutDetails
	if we.Code != wire.CodeTimeout || json.Unmarshal(we.Details, &d) != nil {
		t.Fatalf("toWireError(%v) = %+v, want code timeout with details", te, we)
	}
	want := wire.TimeoutDetails{Name: "w1", Op: "ask", TimeoutMS: 1500, Partial: "half", Screen: []string{"$ "}, FromSeq: 3, ToSeq: 8, Hint: "h"}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("details: got %+v, want %+v", d, want)
	}
}

// TestChannelTimeoutsCarryTheirDetails checks the details a push or an ask
// through a channel carries when it times out, as the wire documents them.
func TestChannelTimeoutsCarryTheirDetails(t *testing.T) {
	we := toWireError(&channel.PushTimeoutError{ChannelID: "c1", Seq: 7, Written: true, Timeout: 2 * time.Second})
	var pd wire.PushTimeoutDetails
	if we.Code != wire.CodeTimeout || json.Unmarshal(we.Details, &pd) != nil ||
		pd != (wire.PushTimeoutDetails{ChannelID: "c1", Seq: 7, Written: true, TimeoutMS: 2000}) {
		t.Errorf("push timeout: got %+v (details %s), want code timeout with the push's details", we, we.Details)
	}
	we = toWireError(&channel.AskTimeoutError{Session: "w1", ChannelID: "c1", Timeout: time.Second})
	var ad wire.TimeoutDetails
	if we.Code != wire.CodeTimeout || json.Unmarshal(we.Details, &ad) != nil || ad.Name != "w1" || ad.Op != "ask" || ad.TimeoutMS != 1000 || ad.Screen == nil {
		t.Errorf("ask timeout: got %+v (details %s), want code timeout with the ask's details and an empty screen", we, we.Details)
	}
}

// TestWireErrorsPassThrough keeps the daemon's own errors (bad params,
// unknown methods, shutting down) as they were made.
func TestWireErrorsPassThrough(t *testing.T) {
	in := wire.Errorf(wire.CodeUnknownMethod, "no method %q", "agent.nope")
	if got := toWireError(fmt.Errorf("route: %w", in)); got != in {
		t.Errorf("toWireError(%v) = %+v, want the same *wire.Error", in, got)
	}
}

// TestKindsAreEverySentinel holds each domain's Kinds to the Err* sentinels
// its errors.go declares, so the table test above, which ranges over Kinds,
// sees a sentinel the day it is added.
func TestKindsAreEverySentinel(t *testing.T) {
	for _, d := range []struct {
		file  string
		kinds []error
	}{
		{"../session/errors.go", session.Kinds()},
		{"../capture/errors.go", capture.Kinds()},
		{"../channel/errors.go", channel.Kinds()},
		{"../desktop/errors.go", desktop.Kinds()},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), d.file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		declared := 0
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if strings.HasPrefix(name.Name, "Err") {
							declared++
						}
					}
				}
			}
		}
		seen := map[error]bool{}
		for _, k := range d.kinds {
			seen[k] = true
		}
		if len(seen) != declared || len(d.kinds) != declared {
			t.Errorf("%s declares %d sentinels; its Kinds() lists %d (%d distinct): %v", d.file, declared, len(d.kinds), len(seen), d.kinds)
		}
	}
}
