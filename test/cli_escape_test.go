package test

// Human output never passes a session's control characters through (issue
// 21): whatever a session controls (its argv, its cwd, its screen, its
// output, its exit) is printed escaped, as ls and ps do, while --json and
// the raw streams (logs without --plain) keep the bytes as they are.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// controlIn names the first terminal control in s: a C0 control other
// than newline and tab, DEL, a C1 control (as UTF-8 or as a bare byte),
// or "" when there is none.
func controlIn(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
		case c < 0x20 || c == 0x7f:
			return s[max(0, i-10):min(len(s), i+10)]
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return s[max(0, i-10):min(len(s), i+10)]
		case c >= 0x80 && c <= 0x9f && (i == 0 || s[i-1] < 0xc0):
			// A bare C1 byte, not a continuation byte of a sequence.
			if i == 0 || s[i-1] < 0x80 {
				return s[max(0, i-10):min(len(s), i+10)]
			}
		}
	}
	return ""
}

func TestHumanOutputEscapesWhatASessionControls(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	// The cwd, the argv (a comment bash ignores) and the output carry an
	// OSC title, CSI colours, an OSC 8 link and C1 controls.
	cwd := filepath.Join(t.TempDir(), "d\x1b]2;cwd\a\u009b")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `printf '\033]2;pwned\007\033[31mred\033[0m \302\233 c1 \377 \033]8;;http://x\033\\link\033]8;;\033\\ done\n'; ` +
		`while read l; do printf 'got \033]2;%s\007\302\2332J\n' "$l"; done` +
		" #\x1b]2;pwned\a\u009b"
	h.ctl(0, "spawn", "e", "--cwd", cwd, "--", "bash", "-c", script)
	h.ctl(0, "--timeout", "20s", "wait", "e", "--until", "done")

	human := [][]string{
		{"list"}, {"list", "-q"}, {"status", "e"}, {"snapshot", "e"},
		{"logs", "e", "--plain"}, {"logs", "e", "--plain", "--tail", "2"},
		{"--timeout", "20s", "ask", "e", "hi\x1b]2;q\a", "--idle", "300ms"},
		{"--timeout", "20s", "wait", "e", "--until", "got"},
		{"watch"}, {"reconcile"},
		{"stop", "e"}, {"status", "e"}, {"list"},
	}
	for _, args := range human {
		out, errOut, _ := h.agentctl("", args...)
		if c := controlIn(out); c != "" {
			t.Errorf("agentctl %q: stdout carries a control in %q:\n%q", args, c, out)
		}
		if c := controlIn(errOut); c != "" {
			t.Errorf("agentctl %q: stderr carries a control in %q:\n%q", args, c, errOut)
		}
	}
	// What was escaped is still there to read.
	if out := h.ctl(0, "status", "e"); !strings.Contains(out, `\e]2;cwd\a\u009b`) || !strings.Contains(out, `#\e]2;pwned\a\u009b`) {
		t.Errorf("status does not show the cwd and command escaped:\n%s", out)
	}
	// An error quoting what the caller gave (a cwd that is gone).
	_, errOut, code := h.agentctl("", "spawn", "f", "--cwd", filepath.Join(cwd, "gone\x1b[2J"), "--", "true")
	if code == 0 || controlIn(errOut) != "" {
		t.Errorf("spawn in a missing cwd: exit %d, stderr %q; want a failure with the path escaped", code, errOut)
	}
	// JSON keeps the bytes: a script gets the argv as it was.
	var st struct{ Result wire.SessionStatus }
	json.Unmarshal([]byte(h.ctl(0, "--json", "status", "e")), &st)
	if len(st.Result.Argv) != 3 || st.Result.Argv[2] != script || st.Result.Cwd != cwd {
		t.Errorf("status --json: argv %q, cwd %q; want them as given", st.Result.Argv, st.Result.Cwd)
	}
	// The raw log is the program's bytes, by design.
	if out := h.ctl(0, "logs", "e"); !strings.Contains(out, "\x1b]2;pwned\a") {
		t.Errorf("logs without --plain does not keep the program's bytes: %q", out)
	}
}
