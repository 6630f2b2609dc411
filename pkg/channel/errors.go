package channel

import (
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/errkind"
)

// Sentinel errors. Every error a Registry method returns wraps one of them
// (test with errors.Is) and carries a message for people. The daemon maps
// them to wire codes:
//
//	ErrUnknown  channel_unknown
//	ErrBusy     busy
//	ErrInvalid  invalid_params
//	ErrDenied   permission_denied
//	ErrTimeout  timeout (a *PushTimeoutError or *AskTimeoutError)
var (
	// ErrUnknown: no such channel, or it has ended.
	ErrUnknown = errkind.New(errkind.ChannelUnknown, "channel unknown")
	// ErrBusy: a limit was hit (queue, channels, pending asks) or the id,
	// session or cc_session_id is held by another channel.
	ErrBusy = errkind.New(errkind.Busy, "channel busy")
	// ErrInvalid: the request is wrong in itself.
	ErrInvalid = errkind.New(errkind.Invalid, "invalid channel request")
	// ErrDenied: the caller is not the channel's listener.
	ErrDenied = errkind.New(errkind.Denied, "not the channel's listener")
	// ErrTimeout: an acknowledgement or a reply did not come in time.
	ErrTimeout = errkind.New(errkind.Timeout, "channel timeout")
)

// Kinds returns every sentinel, so the translating layer can prove it
// knows each one.
func Kinds() []error { return []error{ErrUnknown, ErrBusy, ErrInvalid, ErrDenied, ErrTimeout} }

// Error is a channel error: a sentinel (Kind) with a message for people.
// It is internal/errkind's Error, the one such type of every domain.
type Error = errkind.Error

// errorf is errkind.Errorf: an *Error of kind with a message for people.
func errorf(kind error, format string, args ...any) error {
	return errkind.Errorf(kind, format, args...)
}

// PushTimeoutError is a push with ack whose acknowledgement did not come
// in time. It wraps ErrTimeout.
type PushTimeoutError struct {
	ChannelID string
	Seq       uint64
	Written   bool // the message reached the listener; only the ack is missing
	Timeout   time.Duration
}

func (e *PushTimeoutError) Error() string {
	return fmt.Sprintf("channel %q: message %d was not acknowledged within %s", e.ChannelID, e.Seq, e.Timeout)
}

// Unwrap returns ErrTimeout.
func (e *PushTimeoutError) Unwrap() error { return ErrTimeout }

// AskTimeoutError is an ask through a channel with no reply in time. It
// wraps ErrTimeout.
type AskTimeoutError struct {
	Session   string
	ChannelID string
	Timeout   time.Duration
}

func (e *AskTimeoutError) Error() string {
	return fmt.Sprintf("session %q: no reply through channel %q within %s", e.Session, e.ChannelID, e.Timeout)
}

// Unwrap returns ErrTimeout.
func (e *AskTimeoutError) Unwrap() error { return ErrTimeout }
