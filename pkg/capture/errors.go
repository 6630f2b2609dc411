package capture

import "github.com/agentd/agentd/internal/errkind"

// Sentinel errors. Every error the package returns for one of these reasons
// wraps the sentinel (test with errors.Is) and carries a message for people
// that names the problem and the fix. The daemon maps them to wire codes:
//
//	ErrInvalid     invalid_params
//	ErrTooLarge    invalid_params
//	ErrRefused     refused
//	ErrLockTimeout lock_timeout
//	ErrBusy        busy
//	ErrUnavailable screen_unavailable
//	ErrTimeout     timeout
//
// Anything else is the package's own fault (internal).
var (
	// ErrInvalid: the request is wrong (bad region, monitor, size, path,
	// format, quality, or an action the batch validator refuses).
	ErrInvalid = errkind.New(errkind.Invalid, "invalid request")
	// ErrTooLarge: the encoded image is over the request's MaxInlineBytes.
	ErrTooLarge = errkind.New(errkind.Invalid, "image too large to send inline")
	// ErrRefused: acting is disabled, or the kill switch stopped the batch.
	ErrRefused = errkind.New(errkind.Refused, "refused")
	// ErrLockTimeout: another batch held the screen for the whole wait.
	ErrLockTimeout = errkind.New(errkind.LockTimeout, "screen lock timeout")
	// ErrBusy: too many batches are already queued for the screen.
	ErrBusy = errkind.New(errkind.Busy, "screen busy")
	// ErrUnavailable: there is no X display, or it went away.
	ErrUnavailable = errkind.New(errkind.Unavailable, "screen unavailable")
	// ErrTimeout: a batch ran past its time budget and was stopped.
	ErrTimeout = errkind.New(errkind.Timeout, "batch time budget exceeded")
)

// Kinds returns every sentinel, so the translating layer can prove it
// knows each one.
func Kinds() []error {
	return []error{ErrInvalid, ErrTooLarge, ErrRefused, ErrLockTimeout, ErrBusy, ErrUnavailable, ErrTimeout}
}
