package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/rpc"
)

// designCodes is the error-code table of design.md ("The wire"), copied here
// by hand as an independent witness: Codes must agree with it. Retryability:
// the design says shutting_down is retryable and that retryable is true only
// where retrying can help; the caller-error codes (exit 2) can never succeed
// on a retry. The other flags record the decision made in Codes.
var designCodes = []struct {
	code      Code
	exit      int
	retryable bool
}{
	{"internal", 1, false},
	{"malformed_frame", 2, false},
	{"unknown_method", 2, false},
	{"invalid_params", 2, false},
	{"unsupported_version", 2, false},
	{"agent_not_found", 13, false},
	{"spawn_failed", 14, false},
	{"lock_timeout", 15, true},
	{"agent_exists", 16, false},
	{"invalid_status", 17, false},
	{"busy", 18, true},
	{"shutting_down", 19, true},
	{"channel_unknown", 20, false},
	{"timeout", 21, true},
	{"refused", 22, false},
	{"permission_denied", 23, false},
	{"screen_unavailable", 24, true},
}

// sentinels pairs every code with its exported sentinel.
var sentinels = map[Code]*Error{
	CodeInternal:           ErrInternal,
	CodeMalformedFrame:     ErrMalformedFrame,
	CodeUnknownMethod:      ErrUnknownMethod,
	CodeInvalidParams:      ErrInvalidParams,
	CodeUnsupportedVersion: ErrUnsupportedVersion,
	CodeAgentNotFound:      ErrAgentNotFound,
	CodeSpawnFailed:        ErrSpawnFailed,
	CodeLockTimeout:        ErrLockTimeout,
	CodeAgentExists:        ErrAgentExists,
	CodeInvalidStatus:      ErrInvalidStatus,
	CodeBusy:               ErrBusy,
	CodeShuttingDown:       ErrShuttingDown,
	CodeChannelUnknown:     ErrChannelUnknown,
	CodeTimeout:            ErrTimeout,
	CodeRefused:            ErrRefused,
	CodePermissionDenied:   ErrPermissionDenied,
	CodeScreenUnavailable:  ErrScreenUnavailable,
}

var snakeCase = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

func TestCodesTable(t *testing.T) {
	t.Parallel()
	seen := map[Code]bool{}
	for i, ci := range Codes {
		if seen[ci.Code] {
			t.Errorf("Codes[%d]: code %q appears twice", i, ci.Code)
		}
		seen[ci.Code] = true
		if !snakeCase.MatchString(string(ci.Code)) {
			t.Errorf("Codes[%d]: code %q is not snake_case", i, ci.Code)
		}
		if ci.Meaning == "" || strings.HasSuffix(ci.Meaning, ".") || ci.Meaning != strings.ToLower(ci.Meaning[:1])+ci.Meaning[1:] {
			t.Errorf("Codes[%d] (%s): meaning %q, want one lower-case line without a trailing period", i, ci.Code, ci.Meaning)
		}
		if ci.Exit == ExitOK || ci.Exit == ExitUnreachable {
			t.Errorf("Codes[%d] (%s): exit %d is reserved for success or an unreachable daemon", i, ci.Code, ci.Exit)
		}
	}
	if len(Codes) != len(designCodes) {
		t.Errorf("Codes has %d rows, design.md's table has %d", len(Codes), len(designCodes))
	}
	for i, want := range designCodes {
		if !KnownCode(want.code) {
			t.Errorf("code %q from design.md: Known() = false, want true", want.code)
			continue
		}
		got := InfoOf(want.code)
		if got.Code != want.code || got.Exit != want.exit || got.Retryable != want.retryable {
			t.Errorf("InfoOf(%q) = {Code: %q, Exit: %d, Retryable: %v}, want {Code: %q, Exit: %d, Retryable: %v}",
				want.code, got.Code, got.Exit, got.Retryable, want.code, want.exit, want.retryable)
		}
		// Codes is in the order it is documented.
		if i < len(Codes) && Codes[i].Code != want.code {
			t.Errorf("Codes[%d] is %q, want %q (the documented order)", i, Codes[i].Code, want.code)
		}
		if sentinels[want.code] == nil {
			t.Errorf("code %q has no sentinel in this test's list", want.code)
		}
	}
	if got := InfoOf(Code("shutting_down")).Retryable; !got {
		t.Errorf("shutting_down retryable = false, want true (design.md: \"the daemon is stopping; retryable\")")
	}
	if ExitOK != 0 || ExitUsage != 2 || ExitUnreachable != 69 {
		t.Errorf("ExitOK, ExitUsage, ExitUnreachable = %d, %d, %d; want 0, 2, 69", ExitOK, ExitUsage, ExitUnreachable)
	}
}

func TestCodeConstants(t *testing.T) {
	t.Parallel()
	// Each constant spells the code it names.
	consts := map[Code]string{
		CodeInternal: "internal", CodeMalformedFrame: "malformed_frame", CodeUnknownMethod: "unknown_method",
		CodeInvalidParams: "invalid_params", CodeUnsupportedVersion: "unsupported_version",
		CodeAgentNotFound: "agent_not_found", CodeSpawnFailed: "spawn_failed", CodeLockTimeout: "lock_timeout",
		CodeAgentExists: "agent_exists", CodeInvalidStatus: "invalid_status", CodeBusy: "busy",
		CodeShuttingDown: "shutting_down", CodeChannelUnknown: "channel_unknown", CodeTimeout: "timeout",
		CodeRefused: "refused", CodePermissionDenied: "permission_denied", CodeScreenUnavailable: "screen_unavailable",
	}
	if len(consts) != len(designCodes) {
		t.Errorf("%d distinct code constants, want %d", len(consts), len(designCodes))
	}
	for c, s := range consts {
		if string(c) != s {
			t.Errorf("constant for %q is %q", s, c)
		}
	}
	for c, e := range sentinels {
		if e.Code != c {
			t.Errorf("sentinel for %q carries code %q", c, e.Code)
		}
	}
}

func TestUnknownCode(t *testing.T) {
	t.Parallel()
	c := Code("from_the_future")
	if KnownCode(c) {
		t.Errorf("KnownCode(%q) = true, want false", c)
	}
	if got := InfoOf(c); got.Exit != 1 || got.Retryable || got.Code != c {
		t.Errorf("InfoOf(%q) = %+v, want exit 1 (a failure), not retryable, the code kept", c, got)
	}
}

// decodeError decodes an error response carrying code, as a client would.
func decodeError(t *testing.T, code Code) *Error {
	t.Helper()
	body := fmt.Sprintf(`{"id":9,"error":{"code":%q,"message":"something about %s","retryable":false}}`, code, code)
	in, err := rpc.DecodeIncoming([]byte(body))
	if err != nil || in.Response == nil || in.Response.Error == nil {
		t.Fatalf("rpc.DecodeIncoming(%s) = %+v, %v; want an error response", body, in, err)
	}
	return in.Response.Error
}

func TestErrorsIsByCode(t *testing.T) {
	t.Parallel()
	for _, row := range designCodes {
		t.Run(string(row.code), func(t *testing.T) {
			t.Parallel()
			got := decodeError(t, row.code)
			wrapped := fmt.Errorf("agent.ask: %w", got)
			for c, sentinel := range sentinels {
				want := c == row.code
				if is := errors.Is(got, sentinel); is != want {
					t.Errorf("errors.Is(decoded %q error, sentinel %q) = %v, want %v", row.code, c, is, want)
				}
				if is := errors.Is(wrapped, sentinel); is != want {
					t.Errorf("errors.Is(wrapped decoded %q error, sentinel %q) = %v, want %v", row.code, c, is, want)
				}
			}
			var e *Error
			if !errors.As(wrapped, &e) || e.Code != row.code {
				t.Errorf("errors.As(wrapped %q error) = %v, want the *Error with its code", row.code, e)
			}
		})
	}
	plain := errors.New("agent_not_found")
	if errors.Is(plain, ErrAgentNotFound) || errors.Is(ErrAgentNotFound, plain) {
		t.Errorf("a plain error whose text is a code matched the sentinel; errors must match by code, not by text")
	}
	if errors.Is(nil, ErrAgentNotFound) {
		t.Errorf("errors.Is(nil, ErrAgentNotFound) = true, want false")
	}
}

func TestErrorf(t *testing.T) {
	t.Parallel()
	for _, row := range designCodes {
		e := Errorf(row.code, "session %q does not exist", "w1")
		if e.Code != row.code || e.Retryable != row.retryable || e.Message != `session "w1" does not exist` {
			t.Errorf("Errorf(%q, ...) = %+v, want code %q, retryable %v, the formatted message", row.code, *e, row.code, row.retryable)
		}
		if e.Error() != e.Message {
			t.Errorf("Errorf(%q, ...).Error() = %q, want the message %q", row.code, e.Error(), e.Message)
		}
	}
	if got := ErrBusy.Error(); got != "busy" {
		t.Errorf("ErrBusy.Error() = %q, want the code %q when there is no message", got, "busy")
	}
}

func TestWithDetails(t *testing.T) {
	t.Parallel()
	base := Errorf(CodeTimeout, "no answer within 30s")
	got := base.WithDetails(map[string]any{"waited_ms": 30000, "seen": "partial"})
	if string(got.Details) != `{"seen":"partial","waited_ms":30000}` {
		t.Errorf("WithDetails: got details %s, want %s", got.Details, `{"seen":"partial","waited_ms":30000}`)
	}
	if base.Details != nil {
		t.Errorf("WithDetails changed its receiver: details %s, want none", base.Details)
	}
	if got.Code != base.Code || got.Message != base.Message || got.Retryable != base.Retryable {
		t.Errorf("WithDetails: got %+v, want the code, message and retryability of %+v", *got, *base)
	}
	// A value that cannot be marshalled is dropped; the error survives.
	dropped := base.WithDetails(make(chan int))
	if dropped == nil || dropped.Details != nil || dropped.Code != CodeTimeout {
		t.Errorf("WithDetails(chan): got %+v, want the error without details", dropped)
	}
	// The error object's JSON shape is the wire's.
	b, err := json.Marshal(got)
	if err != nil || string(b) != `{"code":"timeout","message":"no answer within 30s","retryable":true,"details":{"seen":"partial","waited_ms":30000}}` {
		t.Errorf("json.Marshal(%+v) = %s, %v", *got, b, err)
	}
}

// TestEngineCodesAreTheTables keeps the codes the engine raises by itself
// (internal/rpc) spelled as this table spells them, and not retryable, as
// the engine sends them.
func TestEngineCodesAreTheTables(t *testing.T) {
	for _, c := range []Code{rpc.CodeInternal, rpc.CodeMalformedFrame, rpc.CodeInvalidParams} {
		if !KnownCode(c) || InfoOf(c).Retryable {
			t.Errorf("engine code %q: known %v, retryable %v; want known and not retryable", c, KnownCode(c), InfoOf(c).Retryable)
		}
	}
}
