// Package errkind is the one vocabulary of error kinds the domains share:
// what went wrong, in the domain's own terms (invalid, busy, timed out...),
// with no wire codes. A domain declares its sentinels with New, each of a
// kind; the daemon maps a kind to a wire code in one table (pkg/daemon's
// kindCodes) instead of one branch per sentinel per domain. It is a leaf:
// it imports nothing of agentd, so every domain may use it.
//
// pkg/channel and pkg/capture declare their sentinels here; pkg/session and
// pkg/desktop keep their own errors.New sentinels until they move (the
// daemon's translator still names those one by one).
package errkind

import "errors"

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
