package test

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestCLIScreenshotRefusesANameOfAnotherFormat: the image is PNG or JPEG,
// and a file named for another format would be PNG bytes under a lie.
// Refused before the daemon is asked, so none runs here.
func TestCLIScreenshotRefusesANameOfAnotherFormat(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	for _, args := range [][]string{
		{"screenshot", "-o", "shot.gif"},
		{"screenshot", "-o", "shot.webp", "--jpeg", "80"},
		{"screenshot", "-o", "shot.png", "--jpeg", "80"},
	} {
		_, errOut, code := h.agentctlAt(t.TempDir(), nil, args...)
		if code != wire.ExitUsage || !strings.Contains(errOut, ".jpg") {
			t.Errorf("agentctl %s: exit %d, stderr %q; want %d naming the formats", strings.Join(args, " "), code, errOut, wire.ExitUsage)
		}
	}
	// The names that fit go on to the daemon (none here: unreachable).
	for _, args := range [][]string{
		{"screenshot", "-o", "shot.PNG"}, {"screenshot", "-o", "shot.jpeg"}, {"screenshot", "-o", "shot"}, {"screenshot", "-o", "-", "--jpeg", "80"},
	} {
		if _, errOut, code := h.agentctlAt(t.TempDir(), nil, args...); code != wire.ExitUnreachable {
			t.Errorf("agentctl %s: exit %d, stderr %q; want %d (accepted, then no daemon)", strings.Join(args, " "), code, errOut, wire.ExitUnreachable)
		}
	}
}
