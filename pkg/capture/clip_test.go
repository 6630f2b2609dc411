package capture

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestClipboardOnItsOwnConnection: a Screen with no ClipOwner owns the
// display's clipboard itself; its own read converts the selection through
// the X server like any program's paste, and the audit log holds lengths,
// never the text.
func TestClipboardOnItsOwnConnection(t *testing.T) {
	t.Parallel()
	s := newScreen(t, startX(t), true)
	ctx := ctxT(t)
	if got, err := s.ClipGet(ctx, Caller{}, 1024); err != nil || got != "" {
		t.Fatalf("clip get before any set: %q, %v; want \"\" (nobody copied)", got, err)
	}
	text := "secret ünïcödé 漢字"
	if err := s.ClipSet(ctx, Caller{}, text); err != nil {
		t.Fatalf("clip set: %v", err)
	}
	if got, err := s.ClipGet(ctx, Caller{}, 1024); err != nil || got != text {
		t.Errorf("clip get: %q, %v; want %q", got, err, text)
	}
	if _, err := s.ClipGet(ctx, Caller{}, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("clip get of %d bytes with a 4-byte limit: %v, want ErrTooLarge", len(text), err)
	}
	audit, err := os.ReadFile(s.opts.AuditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(audit), "secret") || strings.Count(string(audit), `"kind":"clipboard_`) != 4 {
		t.Errorf("audit log: want four clipboard records without the text:\n%s", audit)
	}
}
