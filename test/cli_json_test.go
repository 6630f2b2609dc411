package test

// --json as a script relies on it (issue "A CLI that fits people's
// habits"): an envelope whatever went wrong and wherever --json stands, a
// result in every result envelope, its own code for an interrupt, and ok
// false whenever the exit status says a failure.

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// oneEnvelope reads stdout as exactly one envelope.
func oneEnvelope(t *testing.T, args []string, stdout string) envelope {
	t.Helper()
	env := envelopes(t, args, stdout)
	if len(env) != 1 {
		t.Fatalf("agentctl %s: %d envelopes, want 1:\n%s", strings.Join(args, " "), len(env), stdout)
	}
	return env[0]
}

func TestCLIJSONAnywhereGivesAnEnvelopeForUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHome(t) // no daemon: none of these reaches it
	for _, args := range [][]string{
		{"list", "--bogus", "--json"},
		{"frob", "--json"},
		{"--json"},
		{"list", "--status", "runing", "--json"},
		// Interactive verbs write a terminal's bytes; --json is refused.
		{"attach", "py", "--json"},
		{"--json", "watch", "py"},
		{"watch", "--json"},
	} {
		out, errOut, code := h.agentctl("", args...)
		e := oneEnvelope(t, args, out)
		if code != wire.ExitUsage || e.OK || e.Type != "error" || e.Error == nil || e.Error.Code != "usage" || errOut != "" {
			t.Errorf("agentctl %s: exit %d, stderr %q, envelope %s; want %d, one usage envelope and nothing on stderr",
				strings.Join(args, " "), code, errOut, out, wire.ExitUsage)
		}
		if strings.HasPrefix(strings.Join(args, " "), "attach") && (e.Error == nil || !strings.Contains(e.Error.Message, "leave out --json")) {
			t.Errorf("agentctl %s: %s; want the fix named", strings.Join(args, " "), out)
		}
	}
}

func TestCLIVersionJSONAlwaysHasTheClientVersion(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	var r struct {
		Client string `json:"client"`
	}
	args := []string{"--version", "--json"}
	out, _, code := h.agentctl("", args...)
	e := oneEnvelope(t, args, out)
	if json.Unmarshal(e.Result, &r); code != 0 || !e.OK || e.Command != "version" || r.Client == "" {
		t.Errorf("agentctl --version --json: exit %d, %s; want a version envelope with the client's version", code, out)
	}
	// No daemon: the envelope is the error, and still says the client's version.
	args = []string{"version", "--json"}
	out, _, code = h.agentctl("", args...)
	e = oneEnvelope(t, args, out)
	r.Client = ""
	if code != wire.ExitUnreachable || e.Error == nil || e.Error.Code != "unreachable" || json.Unmarshal(e.Error.Details, &r) != nil || r.Client == "" {
		t.Errorf("agentctl version --json without a daemon: exit %d, %s; want %d, unreachable, and the client's version in details", code, out, wire.ExitUnreachable)
	}
}

func TestCLIEveryResultEnvelopeHasAResult(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	t.Cleanup(h.stopAll)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "s1", "--json", "x", "--keys", "backspace"}, `{"name":"s1","text_bytes":1,"keys":["backspace"]}`},
		{[]string{"send", "s1", "--keys", "enter", "--json"}, `{"name":"s1","text_bytes":0,"keys":["enter"]}`},
		{[]string{"resize", "s1", "100x30", "--json"}, `{"name":"s1","cols":100,"rows":30}`},
	} {
		out, errOut, code := h.agentctl("", tc.args...)
		e := oneEnvelope(t, tc.args, out)
		if code != 0 || !e.OK || string(e.Result) != tc.want {
			t.Errorf("agentctl %s: exit %d, stderr %q, result %s; want %s", strings.Join(tc.args, " "), code, errOut, e.Result, tc.want)
		}
	}
}

// TestCLIInterruptInJSONModeIsInterrupted: Ctrl-C on a wait or an ask is
// not the daemon's fault; its envelope says interrupted, exit 130.
func TestCLIInterruptInJSONModeIsInterrupted(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	h.ctl(0, "spawn", "sh1", "--", "sh")
	t.Cleanup(h.stopAll)

	interrupt := func(args []string, started func(stdout *bufio.Reader) bool) {
		t.Helper()
		cmd := exec.Command(bin.agentctl, args...)
		cmd.Env = h.env()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		if !started(r) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("agentctl %s did not start its call", strings.Join(args, " "))
		}
		cmd.Process.Signal(syscall.SIGINT)
		var last string
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				last = line
			}
			if err != nil {
				break
			}
		}
		cmd.Wait()
		e := oneEnvelope(t, args, last)
		if code := cmd.ProcessState.ExitCode(); code != 130 || e.Error == nil || e.Error.Code != "interrupted" {
			t.Errorf("agentctl %s, then SIGINT: exit %d, last line %s; want 130 and code interrupted", strings.Join(args, " "), code, last)
		}
	}

	// wait --progress prints a line a second: once one is out, the wait runs.
	interrupt([]string{"--json", "wait", "s1", "--until", "NEVER", "--progress"}, func(r *bufio.Reader) bool {
		line, err := r.ReadString('\n')
		return err == nil && strings.Contains(line, `"type":"progress"`)
	})
	// An ask is under way once the session's log records it.
	interrupt([]string{"--json", "ask", "sh1", "sleep 30"}, func(*bufio.Reader) bool {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			out, _, _ := h.agentctl("", "logs", "sh1", "--json")
			if strings.Contains(out, `"type":"ask"`) {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	})
}

func TestCLIDoctorJSONIsNotOKWhenACheckFailed(t *testing.T) {
	t.Parallel()
	h := newHome(t) // no daemon: the daemon check fails
	args := []string{"doctor", "--json"}
	out, _, code := h.agentctlAt(t.TempDir(), nil, args...)
	e := oneEnvelope(t, args, out)
	if code != 1 || e.OK || e.Type != "result" || len(e.Result) == 0 {
		t.Errorf("doctor --json with a failed check: exit %d, %s; want 1, ok false and the checks as the result", code, out)
	}
}
