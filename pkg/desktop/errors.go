package desktop

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns for one of these reasons
// wraps the sentinel and carries a message for people naming the problem
// and the fix. The daemon maps them to wire codes.
var (
	// ErrInvalid: a bad name, size, window manager or layout.
	ErrInvalid = errors.New("invalid desktop request")
	// ErrExists: a desktop by that name exists.
	ErrExists = errors.New("desktop exists")
	// ErrNotFound: no desktop by that name.
	ErrNotFound = errors.New("no such desktop")
	// ErrBusy: the cap on desktops is reached, or the display range is
	// exhausted.
	ErrBusy = errors.New("desktops busy")
	// ErrStartFailed: the X server (or a program the desktop needs) is not
	// installed, or did not start.
	ErrStartFailed = errors.New("desktop did not start")
)

// Kinds returns every sentinel, so the translating layer can prove it
// knows each one.
func Kinds() []error {
	return []error{ErrInvalid, ErrExists, ErrNotFound, ErrBusy, ErrStartFailed}
}

// Error is a failure of one of the kinds above: its message is for people,
// its Kind for errors.Is.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
