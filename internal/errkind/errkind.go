// Package errkind is the one vocabulary of error kinds the domains share:
// what went wrong, in the domain's own terms (invalid, busy, timed out...),
// with no wire codes. A domain declares its sentinels with New, each of a
// kind; the daemon maps a kind to a wire code in one table (pkg/daemon's
// kindCodes) instead of one branch per sentinel per domain. It is a leaf:
// it imports nothing of agentd, so every domain may use it.
//
// Every domain (pkg/session, pkg/channel, pkg/capture, pkg/desktop)
// declares its sentinels here; the daemon's translator names none of them.
// A failure with its own message is an *Error (made by Errorf) whose Kind
// is one of those sentinels; the domains name the type as their own Error.
package errkind

import (
	"errors"
	"fmt"
)

// Kind is what kind of failure an error is.
type Kind uint8

// The kinds. Their names are the domains'; pkg/daemon says which wire code
// each one is.
const (
	// Invalid: the request is wrong in itself.
	Invalid Kind = iota + 1
	// NotFound: what the request names does not exist.
	NotFound
	// Exists: what the request would make exists already.
	Exists
	// Busy: a capacity or queue limit was hit, or another holds it.
	Busy
	// Timeout: it did not happen within its deadline.
	Timeout
	// LockTimeout: waited for a lock someone else held, and gave up.
	LockTimeout
	// Refused: consent not given, disabled, or a kill switch.
	Refused
	// Denied: the caller may not do this.
	Denied
	// Unavailable: what it needs (a display) is not there.
	Unavailable
	// ChannelUnknown: no such channel, or it has ended.
	ChannelUnknown
	// StartFailed: what the request had to start (a program, a server)
	// is not installed or did not start.
	StartFailed
	// InvalidStatus: the thing exists but its state does not allow the
	// operation (a session that has ended, a worker that does not answer).
	InvalidStatus
)

// Sentinel is a domain's sentinel error: a fixed text and its kind. Errors
// wrap it (fmt.Errorf("...: %w", ErrX)) and are tested with errors.Is, as
// any sentinel.
type Sentinel struct {
	kind Kind
	text string
}

// New returns a sentinel of kind k whose Error is text.
func New(k Kind, text string) *Sentinel { return &Sentinel{kind: k, text: text} }

func (s *Sentinel) Error() string { return s.text }

// Kind returns the sentinel's kind.
func (s *Sentinel) Kind() Kind { return s.kind }

// Of returns the kind of the first sentinel err wraps; false when it wraps
// none.
func Of(err error) (Kind, bool) {
	var s *Sentinel
	if errors.As(err, &s) {
		return s.kind, true
	}
	return 0, false
}

// Error is a failure of a sentinel's kind with a message for people: the
// message names the thing and the fix, the sentinel (Kind) is what
// errors.Is and Of find through Unwrap. A domain names it as its own type
// (session.Error, desktop.Error, channel.Error are this type), so a caller
// that builds &session.Error{Kind: session.ErrInvalid, Msg: "..."} makes
// one.
type Error struct {
	// Kind is the sentinel, normally a *Sentinel; any error is carried.
	Kind error
	// Msg is the whole message; the sentinel's text is not added to it.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf returns an *Error of kind (a sentinel) whose message is format
// and args as fmt.Sprintf writes them.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
