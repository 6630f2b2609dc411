package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/errkind"
	"github.com/agentd/agentd/internal/rpc"
)

// Sentinel errors, each of an internal/errkind kind (which pkg/daemon maps to
// a wire code). Every error a Manager method returns wraps at most one of
// them, so a caller matches with errors.Is; the message itself is written for
// people and names the thing and the fix.
var (
	// ErrNotFound is a session name with no session.
	ErrNotFound = errkind.New(errkind.NotFound, "session not found")
	// ErrExists is a spawn of a name already taken.
	ErrExists = errkind.New(errkind.Exists, "session exists")
	// ErrInvalid is a request that is wrong in itself: a bad name, size,
	// key, pattern or text.
	ErrInvalid = errkind.New(errkind.Invalid, "invalid request")
	// ErrSpawnFailed is a program that could not be started.
	ErrSpawnFailed = errkind.New(errkind.StartFailed, "spawn failed")
	// ErrInvalidStatus is an operation the session's status does not allow
	// (see StatusInfo).
	ErrInvalidStatus = errkind.New(errkind.InvalidStatus, "not allowed in the session's status")
	// ErrLockTimeout is an ask that waited for another ask to finish and
	// gave up.
	ErrLockTimeout = errkind.New(errkind.LockTimeout, "lock timeout")
	// ErrTimeout is an ask or wait that ran past its deadline; the error is
	// a *TimeoutError carrying what was seen.
	ErrTimeout = errkind.New(errkind.Timeout, "timeout")
	// ErrBusy is a capacity limit, such as ManagerOptions.MaxSessions.
	ErrBusy = errkind.New(errkind.Busy, "busy")
	// ErrDenied is a caller that may not act for the session: a hook
	// without the session's secret, or with another session's.
	ErrDenied = errkind.New(errkind.Denied, "permission denied")
)

// Error is a domain error: a sentinel (Kind) with a message for people.
// errors.Is(err, ErrNotFound) works through it. It is the one such type of
// every domain (internal/errkind's), so a literal &Error{Kind, Msg} made
// here or by a caller is the same as errorf's.
type Error = errkind.Error

// errorf is errkind.Errorf: an *Error of kind with a message for people.
func errorf(kind error, format string, args ...any) error {
	return errkind.Errorf(kind, format, args...)
}

// SpawnError is a program that could not be started. It wraps ErrSpawnFailed.
type SpawnError struct {
	Name   string // the session
	Reason string // why, e.g. `exec: "nope": executable file not found in $PATH`
}

func (e *SpawnError) Error() string {
	return fmt.Sprintf("session %q could not start its program: %s; check the command and its working directory", e.Name, e.Reason)
}

// Unwrap returns ErrSpawnFailed.
func (e *SpawnError) Unwrap() error { return ErrSpawnFailed }

// Category returns the termination category such a session would have had.
func (e *SpawnError) Category() Termination { return TermSpawnFailure }

// TimeoutError is an ask or wait that ran past its deadline. It wraps
// ErrTimeout and carries the evidence: what the program printed so far and
// the screen at the deadline.
type TimeoutError struct {
	Name    string        `json:"name"`
	Op      string        `json:"op"` // "ask" or "wait"
	Timeout time.Duration `json:"timeout_ns"`
	// Partial is the answer collected so far (asks only), as plain text.
	Partial string `json:"partial,omitempty"`
	// Screen is the visible screen at the deadline.
	Screen []string `json:"screen"`
	// FromSeq and ToSeq are the event-log range the operation covered.
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	// Hint explains an until pattern that could not match as written.
	Hint string `json:"hint,omitempty"`
}

// timeoutTailRows is how many of the screen's last rows with text a timeout
// message quotes.
const timeoutTailRows = 3

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s on session %q ran past its %s deadline; raise the timeout or check the program", e.Op, e.Name, e.Timeout)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	var tail []string
	for i := len(e.Screen) - 1; i >= 0 && len(tail) < timeoutTailRows; i-- {
		if strings.TrimSpace(e.Screen[i]) != "" || len(tail) > 0 {
			tail = append([]string{e.Screen[i]}, tail...)
		}
	}
	if len(tail) > 0 {
		msg += fmt.Sprintf("; the screen ends with %q", strings.Join(tail, "\n"))
	}
	return msg
}

// Unwrap returns ErrTimeout.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Kinds returns every sentinel a Manager method's error may wrap, so the
// layer that translates them (pkg/daemon) can prove it knows each one.
func Kinds() []error {
	out := make([]error, len(kinds))
	for i, k := range kinds {
		out[i] = k.err
	}
	return out
}

// kinds names each sentinel on the worker protocol, the one place a
// session error crosses a socket. The names are the session's own; they are
// spelled as agentd's wire codes were when workers first spoke them, so a
// worker started by an older agentd still reports errors a newer one reads
// (workers outlive upgrades). A test round-trips every kind.
var kinds = []struct {
	err  error
	name rpc.Code
}{
	{ErrNotFound, "agent_not_found"},
	{ErrExists, "agent_exists"},
	{ErrInvalid, "invalid_params"},
	{ErrSpawnFailed, "spawn_failed"},
	{ErrInvalidStatus, "invalid_status"},
	{ErrLockTimeout, "lock_timeout"},
	{ErrTimeout, "timeout"},
	{ErrBusy, "busy"},
	{ErrDenied, "permission_denied"},
}

// codeUnknownMethod answers a method the worker does not serve: a newer
// Manager talking to an older worker.
const codeUnknownMethod rpc.Code = "unknown_method"

// codePermissionDenied answers a peer the worker does not serve (another
// uid); it is agentd's wire code of the same name.
const codePermissionDenied rpc.Code = "permission_denied"

// encodeError carries a domain error to the Manager by its kind's name; a
// *TimeoutError travels whole in the details. An error of no kind is the
// worker's own fault and goes as the engine's internal.
func encodeError(err error) *rpc.Error {
	var te *TimeoutError
	if errors.As(err, &te) {
		return rpc.Errorf(kindTimeout, "%s", te.Error()).WithDetails(te)
	}
	var re *rpc.Error
	if errors.As(err, &re) {
		return re
	}
	code := rpc.CodeInternal
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			code = k.name
			break
		}
	}
	return rpc.Errorf(code, "%s", err.Error())
}

// kindTimeout is the name of ErrTimeout, whose details carry a TimeoutError.
const kindTimeout rpc.Code = "timeout"

// decodeError undoes encodeError on the Manager's side: a known kind
// becomes its sentinel again (a timeout its *TimeoutError), anything else a
// plain error with the worker's message, which the daemon reports as
// internal. Errors that are not answers from the worker pass unchanged.
func decodeError(err error) error {
	var re *rpc.Error
	if !errors.As(err, &re) {
		return err
	}
	if re.Code == kindTimeout && len(re.Details) > 0 {
		var te TimeoutError
		if json.Unmarshal(re.Details, &te) == nil {
			return &te
		}
	}
	for _, k := range kinds {
		if k.name == re.Code {
			return &Error{Kind: k.err, Msg: re.Message}
		}
	}
	return errors.New(re.Message)
}
