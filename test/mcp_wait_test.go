package test

import (
	"strings"
	"testing"
)

// TestMCPWait: the wait tool ends on each thing it takes (a regular
// expression, literal text, the program waiting for input, a state, the
// program's exit, quiet), says which in reason, and answers with the
// screen; what it cannot wait for is a tool error.
func TestMCPWait(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "w1", "--", "sh")
	m := h.startMCP(t, true)
	wait := func(args map[string]any, reason string) map[string]any {
		t.Helper()
		args["name"] = "w1"
		args["timeout_ms"] = 20000
		sc, _ := m.ok("wait", args)
		if sc["reason"] != reason {
			t.Errorf("wait %v: reason %v, want %s (%v)", args, sc["reason"], reason, sc)
		}
		return sc
	}
	m.ok("send", map[string]any{"name": "w1", "text": "sleep 0.5; echo done-$((2*3))\n"})
	sc := wait(map[string]any{"until": `done-[0-9]+`}, "matched")
	if !strings.Contains(strings.Join(strs(sc["screen"]), "\n"), "done-6") {
		t.Errorf("wait until: screen %v, want done-6 on it", sc["screen"])
	}
	m.ok("send", map[string]any{"name": "w1", "text": "echo 'a.b*c'\n"})
	wait(map[string]any{"text": "a.b*c"}, "matched")
	m.ok("send", map[string]any{"name": "w1", "text": "sleep 0.5\n"})
	wait(map[string]any{"ready": true}, "ready")
	wait(map[string]any{"states": []string{"ready"}}, "state")
	wait(map[string]any{"idle_ms": 200}, "idle")
	m.ok("send", map[string]any{"name": "w1", "text": "exit 3\n"})
	wait(map[string]any{"exit": true}, "exited")

	m.badArgs("wait", map[string]any{"name": "w1", "text": "x", "until": "x"}, "not both")
	m.badArgs("wait", map[string]any{"name": "w1", "states": []string{"asleep"}}, "states[]", "needs_approval")
	m.badArgs("wait", map[string]any{"name": "w1", "until": "x", "timeout_ms": 0}, "timeout_ms")
}

// strs is a decoded JSON array's strings.
func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
