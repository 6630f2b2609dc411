package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code is the code of an error response. The engine does not own the codes
// a protocol speaks: pkg/wire declares agentd's table (with retryability and
// exit codes) and the session worker protocol uses its own kind names. The
// engine raises only the few codes below, for faults of the stream itself.
type Code string

// The codes the engine itself answers with. Their spelling is agentd's
// (pkg/wire declares the same values in its table), so a broken frame reads
// the same on every socket.
const (
	// CodeInternal answers a handler that panicked, an answer too large for
	// a frame, or an error the protocol's translator did not know.
	CodeInternal Code = "internal"
	// CodeMalformedFrame answers a frame that holds no valid request.
	CodeMalformedFrame Code = "malformed_frame"
	// CodeInvalidParams answers params that are not a JSON object.
	CodeInvalidParams Code = "invalid_params"
)

// Canceled is the outcome of a call whose connection ended while it ran:
// its client has gone, so nothing is written, and the call's outcome is
// neither a fault nor a stop. A handler returns it (the translator passes
// it on as it is); OnRequestDone is told Canceled, so a log can say
// canceled. Its code never reaches the wire.
var Canceled = &Error{Code: "canceled", Message: "the call was cancelled: its connection ended"}

// Error is the error object of a response. It is also a Go error; Is
// matches another *Error by code, so a protocol can declare sentinels that
// carry only a code and callers test them with errors.Is.
type Error struct {
	Code      Code            `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// Errorf returns a non-retryable *Error with code c and a message for
// people. The engine's own codes are never retryable; a protocol whose
// codes may be builds its errors itself (wire.Errorf reads its table).
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying v, marshalled, as details. A value
// that cannot be marshalled is dropped rather than losing the error.
func (e *Error) WithDetails(v any) *Error {
	c := *e
	if b, err := json.Marshal(v); err == nil {
		c.Details = b
	}
	return &c
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is matches another *Error by code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}
