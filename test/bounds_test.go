package test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestMaxSessionsIsConfiguredAndNamed: max_sessions in the config bounds
// the live sessions, and the spawn past it is refused busy with an error
// naming the limit and the key.
func TestMaxSessionsIsConfiguredAndNamed(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("max_sessions = 2\n")
	h.startDaemon(nil)
	h.ctl(0, "spawn", "one", "--", "sleep", "60")
	h.ctl(0, "spawn", "two", "--", "sleep", "60")
	_, errOut, code := h.agentctl("", "spawn", "three", "--", "sleep", "60")
	if code == 0 {
		t.Fatalf("a third spawn past max_sessions = 2 succeeded")
	}
	if !strings.Contains(errOut, "busy") && !strings.Contains(errOut, "2 sessions") {
		t.Errorf("the refusal %q is not busy", errOut)
	}
	if !strings.Contains(errOut, "max_sessions") || !strings.Contains(errOut, "2 sessions") {
		t.Errorf("the refusal %q does not name the limit (2) and the key (max_sessions)", errOut)
	}
	// The daemon stays up and the sessions are untouched.
	if out := h.ctl(0, "list"); !strings.Contains(out, "one") || !strings.Contains(out, "two") || strings.Contains(out, "three") {
		t.Errorf("list after the refusal:\n%s", out)
	}
}

// TestSpawnRefusesHugeArgvAndListCutsLongCommands: a spawn whose command
// (14 arguments of 100,000 bytes, issue 21's D3) or environment passes
// session.MaxSpawnBytes is refused as invalid, naming the limit, and no
// session is made; a command under the limit but long is cut in list
// rows, which say so, while status has it whole.
func TestSpawnRefusesHugeArgvAndListCutsLongCommands(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	big := strings.Repeat("x", 100_000)
	args := []string{"spawn", "huge", "--", "true"}
	for range 14 {
		args = append(args, big)
	}
	_, errOut, code := h.agentctl("", args...)
	if code != 2 || !strings.Contains(errOut, "256 KiB") {
		t.Errorf("spawn with a 1.4 MB command: exit %d, %q; want 2 (invalid) naming the 256 KiB limit", code, errOut)
	}
	_, errOut, code = h.agentctl("", "spawn", "hugeenv", "--env", "A="+big, "--env", "B="+big, "--env", "C="+big, "--", "true")
	if code != 2 || !strings.Contains(errOut, "environment") || !strings.Contains(errOut, "256 KiB") {
		t.Errorf("spawn with a 300 KB environment: exit %d, %q; want 2 naming the environment and the limit", code, errOut)
	}
	h.ctl(0, "spawn", "long", "--", "sleep", "60", big)
	c := h.client()
	res, err := c.List(context.Background(), wire.ListParams{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(res.Sessions) != 1 || res.Sessions[0].Name != "long" {
		t.Fatalf("list shows %d sessions, want only long (the refused spawns made none)", len(res.Sessions))
	}
	row := res.Sessions[0]
	n := 0
	for _, a := range row.Command {
		n += len(a)
	}
	if !row.CommandCut || n > wire.ListCommandBytes || len(row.Command) < 2 || row.Command[0] != "sleep" {
		t.Errorf("list row of a 100 KB command: cut %v, %d bytes, %d args; want cut, at most %d bytes, starting with sleep 60", row.CommandCut, n, len(row.Command), wire.ListCommandBytes)
	}
	st, err := c.Status(context.Background(), "long")
	if err != nil || len(st.Argv) != 3 || st.Argv[2] != big {
		t.Errorf("status of long does not carry its whole command (%v)", err)
	}
	// A human list prints the row too.
	if out := h.ctl(0, "list"); !strings.Contains(out, "long") {
		t.Errorf("list:\n%s", out)
	}
}

// TestCombiningFloodLeavesSnapshotsSmall: a program printing rows of
// letters and then 150,000 combining accents (issue 21's D10) leaves
// snapshot, wait and ask working, with a screen's worth of answer.
func TestCombiningFloodLeavesSnapshotsSmall(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	prog := `for i in $(seq 45); do echo aaaaaaaaaaaaaaaaaaaaaaaa; done; python3 -c 'import sys; sys.stdout.write("a" + "\u0301"*150000); sys.stdout.flush()'; echo; echo the-end; exec cat`
	h.ctl(0, "spawn", "zalgo", "--", "sh", "-c", prog)
	h.ctl(0, "wait", "zalgo", "--until", "the-end", "--timeout", "60s")
	c := h.client()
	snap, err := c.Snapshot(context.Background(), "zalgo")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	b, _ := json.Marshal(snap)
	if len(b) > 64<<10 {
		t.Errorf("snapshot is %d bytes, want a screen's worth", len(b))
	}
	if out := h.ctl(0, "ask", "zalgo", "hello", "--timeout", "30s"); !strings.Contains(out, "hello") {
		t.Errorf("ask on the session: %q", out)
	}
}
