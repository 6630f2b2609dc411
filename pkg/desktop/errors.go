package desktop

import "github.com/agentd/agentd/internal/errkind"

// Sentinel errors. Every error the package returns for one of these reasons
// wraps the sentinel and carries a message for people naming the problem
// and the fix. Each is of an errkind kind, which the daemon maps to a wire
// code:
//
//	ErrInvalid     invalid_params
//	ErrExists      agent_exists
//	ErrNotFound    screen_unavailable
//	ErrBusy        busy
//	ErrStartFailed spawn_failed
//	ErrUnavailable screen_unavailable
var (
	// ErrInvalid: a bad name, size, window manager or layout.
	ErrInvalid = errkind.New(errkind.Invalid, "invalid desktop request")
	// ErrExists: a desktop by that name exists.
	ErrExists = errkind.New(errkind.Exists, "desktop exists")
	// ErrNotFound: no desktop by that name. Its kind is Unavailable, not
	// NotFound: a desktop is a screen target, and a target that is not
	// there is a screen that is unavailable (NotFound's code, agent_not_found,
	// names a session).
	ErrNotFound = errkind.New(errkind.Unavailable, "no such desktop")
	// ErrBusy: the cap on desktops is reached, or the display range is
	// exhausted.
	ErrBusy = errkind.New(errkind.Busy, "desktops busy")
	// ErrStartFailed: the X server (or a program the desktop needs) is not
	// installed, or did not start.
	ErrStartFailed = errkind.New(errkind.StartFailed, "desktop did not start")
	// ErrUnavailable: the desktop exists but cannot do what was asked now
	// (it is not running, or its worker does not answer).
	ErrUnavailable = errkind.New(errkind.Unavailable, "desktop unavailable")
)

// Kinds returns every sentinel, so the translating layer can prove it
// knows each one.
func Kinds() []error {
	return []error{ErrInvalid, ErrExists, ErrNotFound, ErrBusy, ErrStartFailed, ErrUnavailable}
}

// Error is a failure of one of the kinds above: its message is for people,
// its Kind (a sentinel) for errors.Is and errkind.Of. It is internal/errkind's
// Error, the one such type of every domain.
type Error = errkind.Error

// errorf is errkind.Errorf: an *Error of kind with a message for people.
func errorf(kind error, format string, args ...any) error {
	return errkind.Errorf(kind, format, args...)
}
