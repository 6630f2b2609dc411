package wire

import (
	"fmt"

	"github.com/agentd/agentd/internal/rpc"
)

// Code is a stable, snake_case error code carried in an error response.
// Codes are a public contract: scripts match on them and agentctl turns them
// into exit codes through Codes. The type is the engine's (internal/rpc),
// which raises internal, malformed_frame and invalid_params itself; the
// table of what each code means is here.
type Code = rpc.Code

// The error codes. Their meanings, retryability and exit codes are in Codes.
const (
	CodeInternal           Code = "internal"
	CodeMalformedFrame     Code = "malformed_frame"
	CodeUnknownMethod      Code = "unknown_method"
	CodeInvalidParams      Code = "invalid_params"
	CodeUnsupportedVersion Code = "unsupported_version"
	CodeAgentNotFound      Code = "agent_not_found"
	CodeSpawnFailed        Code = "spawn_failed"
	CodeLockTimeout        Code = "lock_timeout"
	CodeAgentExists        Code = "agent_exists"
	CodeInvalidStatus      Code = "invalid_status"
	CodeBusy               Code = "busy"
	CodeShuttingDown       Code = "shutting_down"
	CodeChannelUnknown     Code = "channel_unknown"
	CodeTimeout            Code = "timeout"
	CodeRefused            Code = "refused"
	CodePermissionDenied   Code = "permission_denied"
	CodeScreenUnavailable  Code = "screen_unavailable"
)

// Exit codes that belong to no wire code.
const (
	// ExitOK is success.
	ExitOK = 0
	// ExitUsage is a command line agentctl could not make sense of; it is
	// the same number as the caller-error codes, since both are the caller's.
	ExitUsage = 2
	// ExitUnreachable is a daemon that could not be reached: no socket, or
	// the connection was refused (sysexits' EX_UNAVAILABLE).
	ExitUnreachable = 69
)

// CodeInfo is one row of the error-code table.
type CodeInfo struct {
	Code      Code
	Exit      int    // agentctl's exit status for this code
	Retryable bool   // whether retrying the same request can succeed
	Meaning   string // one line for people, shown by agentctl --help and the README
}

// Codes is the error-code table, in the order it is documented. It is the one
// source for exit codes, agentctl --help and the README's table (a test checks
// that they agree).
var Codes = []CodeInfo{
	{CodeInternal, 1, false, "the daemon's fault; it stays up"},
	{CodeMalformedFrame, 2, false, "the frame or its JSON is broken"},
	{CodeUnknownMethod, 2, false, "no such method"},
	{CodeInvalidParams, 2, false, "the parameters are wrong"},
	{CodeUnsupportedVersion, 2, false, "the daemon does not speak that protocol version"},
	{CodeAgentNotFound, 13, false, "no session by that name"},
	{CodeSpawnFailed, 14, false, "the program could not be started"},
	{CodeLockTimeout, 15, true, "waited for a session or the screen and gave up"},
	{CodeAgentExists, 16, false, "a session by that name exists"},
	{CodeInvalidStatus, 17, false, "not allowed in the session's current status"},
	{CodeBusy, 18, true, "a capacity or queue limit was hit, or a person has taken the session over"},
	{CodeShuttingDown, 19, true, "the daemon is stopping"},
	{CodeChannelUnknown, 20, false, "no such channel"},
	{CodeTimeout, 21, true, "an ask or wait ran past its deadline"},
	{CodeRefused, 22, false, "consent not given, kill switch tripped, or loop guard"},
	{CodePermissionDenied, 23, false, "the peer is not allowed on this socket"},
	{CodeScreenUnavailable, 24, true, "no X display, or it went away"},
}

// InfoOf returns the table row for c; an unknown code is treated as
// internal, so a newer daemon's codes still map to a failing exit status.
func InfoOf(c Code) CodeInfo {
	for _, ci := range Codes {
		if ci.Code == c {
			return ci
		}
	}
	return CodeInfo{Code: c, Exit: 1, Meaning: "unknown error code"}
}

// KnownCode reports whether c is in the table.
func KnownCode(c Code) bool {
	for _, ci := range Codes {
		if ci.Code == c {
			return true
		}
	}
	return false
}

// Error is the error object of a response. It is also a Go error: on the
// client side errors.Is(err, wire.ErrAgentNotFound) matches by code.
type Error = rpc.Error

// Errorf returns an *Error with code c, a message for people, and the
// retryability from the table.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), Retryable: InfoOf(c).Retryable}
}

// Sentinels for errors.Is on the client side; they carry only a code.
var (
	ErrInternal           = &Error{Code: CodeInternal}
	ErrMalformedFrame     = &Error{Code: CodeMalformedFrame}
	ErrUnknownMethod      = &Error{Code: CodeUnknownMethod}
	ErrInvalidParams      = &Error{Code: CodeInvalidParams}
	ErrUnsupportedVersion = &Error{Code: CodeUnsupportedVersion}
	ErrAgentNotFound      = &Error{Code: CodeAgentNotFound}
	ErrSpawnFailed        = &Error{Code: CodeSpawnFailed}
	ErrLockTimeout        = &Error{Code: CodeLockTimeout}
	ErrAgentExists        = &Error{Code: CodeAgentExists}
	ErrInvalidStatus      = &Error{Code: CodeInvalidStatus}
	ErrBusy               = &Error{Code: CodeBusy}
	ErrShuttingDown       = &Error{Code: CodeShuttingDown}
	ErrChannelUnknown     = &Error{Code: CodeChannelUnknown}
	ErrTimeout            = &Error{Code: CodeTimeout}
	ErrRefused            = &Error{Code: CodeRefused}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrScreenUnavailable  = &Error{Code: CodeScreenUnavailable}
)
