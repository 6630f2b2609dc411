package errkind

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfFindsTheWrappedKind(t *testing.T) {
	errBusy := New(Busy, "queue full")
	err := fmt.Errorf("push: %w", fmt.Errorf("channel c1: %w", errBusy))
	if k, ok := Of(err); !ok || k != Busy {
		t.Errorf("Of(%v) = %v, %v; want Busy, true", err, k, ok)
	}
	if !errors.Is(err, errBusy) || err.Error() != "push: channel c1: queue full" {
		t.Errorf("a wrapped sentinel: errors.Is %v, text %q", errors.Is(err, errBusy), err)
	}
	if k, ok := Of(errors.New("plain")); ok {
		t.Errorf("Of(a plain error) = %v, true; want false", k)
	}
	if errors.Is(errBusy, New(Busy, "queue full")) {
		t.Error("two sentinels of one kind and text are one error; want them apart")
	}
}

func TestErrorCarriesItsKindAndMessage(t *testing.T) {
	errInvalid := New(Invalid, "invalid request")
	err := fmt.Errorf("spawn: %w", Errorf(errInvalid, "name %q has a space; use letters, digits, - and _", "a b"))
	if want := `spawn: name "a b" has a space; use letters, digits, - and _`; err.Error() != want {
		t.Errorf("text %q; want %q (the sentinel's text is not added)", err, want)
	}
	if !errors.Is(err, errInvalid) {
		t.Error("errors.Is(an Errorf of errInvalid, errInvalid) = false")
	}
	if k, ok := Of(err); !ok || k != Invalid {
		t.Errorf("Of = %v, %v; want Invalid, true", k, ok)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != errInvalid {
		t.Fatalf("errors.As(*Error) = %v (%+v); want the Errorf", errors.As(err, &e), e)
	}
	lit := &Error{Kind: errInvalid, Msg: e.Msg}
	if *lit != *e {
		t.Errorf("a literal %+v differs from Errorf's %+v", lit, e)
	}
}
