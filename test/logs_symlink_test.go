package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestLogsRefuseASymlinkedEventLogClearly: an events.jsonl replaced by a
// symbolic link is not read through (the file it points to stays
// unread), and logs, a tail, a follow and --json say so with
// invalid_status naming the file and the fix, never internal; the daemon
// keeps serving.
func TestLogsRefuseASymlinkedEventLogClearly(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "sl", "--", "sleep", "3600")
	log := filepath.Join(h.state, "agentd", "sessions", "sl", "events.jsonl")
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"output","data":"not the session's"}`+"\n"), 0o600)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, log); err != nil {
		t.Fatal(err)
	}
	want := wire.InfoOf(wire.CodeInvalidStatus).Exit
	for _, args := range [][]string{{"logs", "sl"}, {"logs", "sl", "--tail", "5"}, {"logs", "-f", "sl"}, {"--json", "logs", "sl"}} {
		out, errOut, code := h.agentctl("", args...)
		if code != want || strings.Contains(out+errOut, "internal") || strings.Contains(out+errOut, "not the session's") {
			t.Errorf("agentctl %s: exit %d, stdout %q, stderr %q; want %d, no internal, nothing read through the link", strings.Join(args, " "), code, out, errOut, want)
		}
		if msg := out + errOut; !strings.Contains(msg, "is a symbolic link") || !strings.Contains(msg, "rm "+log) {
			t.Errorf("agentctl %s: %q does not name the link and the fix", strings.Join(args, " "), msg)
		}
	}
	h.ctl(0, "status", "sl")
}
