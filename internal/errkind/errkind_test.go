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
