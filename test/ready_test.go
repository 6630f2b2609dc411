package test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestReadyThroughTheCLI: through the built binaries, list's STATE and
// status's state say whether a program waits for input, wait --ready
// returns once it does, and an ask left incomplete says so on stderr and
// is continued by the next (issue 26).
func TestReadyThroughTheCLI(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "sl", "--", "sleep", "60")
	h.ctl(0, "spawn", "py", "--", "python3", "-q")
	h.ctl(0, "--timeout", "20s", "wait", "py", "--ready")
	// The list comes from the heartbeat: give it a beat to catch up.
	await(t, 10*time.Second, "list to say py is ready and sl busy", func() bool {
		var env struct{ Result wire.ListResult }
		if json.Unmarshal([]byte(h.ctl(0, "list", "--json")), &env) != nil {
			return false
		}
		res := env.Result
		got := map[string]wire.Input{}
		for _, r := range res.Sessions {
			got[r.Name] = r.Input
		}
		return got["py"] == wire.InputReady && got["sl"] == wire.InputBusy
	})
	table := h.ctl(0, "list")
	if !strings.Contains(table, "STATE") || !regexpFind(`(?m)^py\s+running\s+ready\s`, table) || !regexpFind(`(?m)^sl\s+running\s+busy\s`, table) {
		t.Errorf("list does not show the states:\n%s", table)
	}
	if st := h.ctl(0, "status", "sl"); !strings.Contains(st, "state:") || !strings.Contains(st, "busy") {
		t.Errorf("status of a sleeping program:\n%s", st)
	}
	out, errOut, code := h.agentctl("", "ask", "py", "x = (6 *")
	if code != 0 || strings.TrimSpace(out) != "" || !strings.Contains(errOut, "waits for the rest of its input") {
		t.Errorf("an incomplete ask: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out = h.ctl(0, "ask", "py", "7); print(x)")
	if strings.TrimSpace(out) != "42" {
		t.Errorf("the continued ask answered %q, want 42", out)
	}
	var env struct{ Result wire.AskResult }
	if err := json.Unmarshal([]byte(h.ctl(0, "--json", "ask", "py", "print(1)")), &env); err != nil || env.Result.ReadySignal != wire.ReadySignalRead || env.Result.Answer != "1" {
		t.Errorf("ask --json: %+v, %v; want answer 1 by the read signal", env.Result, err)
	}
}

func regexpFind(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
