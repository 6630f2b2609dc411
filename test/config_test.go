package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func (h *home) writeConfig(text string) {
	h.t.Helper()
	dir := filepath.Join(h.config, "agentd")
	os.MkdirAll(dir, 0o700)
	// Replace the file as editors do: write a temporary file, rename it over.
	tmp := filepath.Join(dir, ".config.toml.tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "config.toml")); err != nil {
		h.t.Fatal(err)
	}
}

func TestConfigReloadChangesConsentWithoutRestart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("allow_act = false\n")
	d := h.startDaemon(nil)
	batch := `[{"kind":"move","x":1,"y":1}]`
	if _, errOut, code := h.agentctl("", "act", batch); code != 22 || !strings.Contains(errOut, "allow_act") {
		t.Fatalf("act with consent off: exit %d %q, want 22 saying how to allow it", code, errOut)
	}
	// Consent on: act is no longer refused (there is no display here, so
	// it is screen_unavailable instead).
	h.writeConfig("allow_act = true\n")
	await(t, 5*time.Second, "reload to allow acting", func() bool {
		_, _, code := h.agentctl("", "act", batch)
		return code == 24
	})
	// A broken edit keeps the running settings and says why in the log.
	h.writeConfig("allow_act = maybe\n")
	await(t, 5*time.Second, "the broken edit logged", func() bool {
		return strings.Contains(d.stderr.String(), "config not reloaded")
	})
	if _, _, code := h.agentctl("", "act", batch); code != 24 {
		t.Errorf("after a broken edit act exits %d, want the running consent kept (24)", code)
	}
	// The next good edit is picked up.
	h.writeConfig("allow_act = false\nlog_level = \"warn\"\n")
	await(t, 5*time.Second, "reload to refuse acting", func() bool {
		_, _, code := h.agentctl("", "act", batch)
		return code == 22
	})
	// An edit that empties the file means the defaults: consent stays off
	// even after it was on.
	h.writeConfig("allow_act = true\n")
	await(t, 5*time.Second, "reload to allow acting again", func() bool {
		_, _, code := h.agentctl("", "act", batch)
		return code == 24
	})
	h.writeConfig("")
	await(t, 5*time.Second, "an emptied config to restore the default consent", func() bool {
		_, _, code := h.agentctl("", "act", batch)
		return code == 22
	})
}

func TestCheckAndPrintConfig(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("max_connections = 77\n")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin.agentd, args...)
		cmd.Env = h.env()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	out, code := run("--print-config", "--read-timeout", "3s")
	for _, want := range []string{"max_connections = 77  # file", `read_timeout = "3s"  # flag`, `log_level = "info"  # default`} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("--print-config exited %d", code)
	}
	h.writeConfig("max_connections = -1\n")
	out, code = run("--check-config")
	if code == 0 || !strings.Contains(out, "config.toml:1") || !strings.Contains(out, "max_connections") {
		t.Errorf("--check-config on a negative limit: exit %d %q, want failure naming file, line and key", code, out)
	}
	// The daemon refuses to start on it too, saying the same.
	d := h.spawnDaemon(nil)
	if err := d.wait(5 * time.Second); err == nil || !strings.Contains(d.stderr.String(), "max_connections") {
		t.Errorf("daemon with a bad config: %v %q", err, d.stderr)
	}
}

// TestConfigAskTimeoutReachesChannelAsks: ask_timeout is the deadline of an
// ask that gives none, also when the ask goes through the session's
// channel (which once kept its own 10 minutes), and a reload changes it.
func TestConfigAskTimeoutReachesChannelAsks(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.writeConfig("ask_timeout = \"1s\"\n")
	h.startDaemon(nil)
	h.ctl(0, "spawn", "cs", "--", "sh")
	lp := h.startListenEnv([]string{"AGENTD_SESSION_TOKEN=" + h.sessionToken("cs")}, "--id", "cs.chan", "--session", "cs")
	h.awaitChannel("cs.chan")
	askOnce := func(want string) {
		t.Helper()
		start := time.Now()
		_, errOut, code := h.agentctl("", "ask", "cs", "is anyone there?")
		if code != wire.InfoOf(wire.CodeTimeout).Exit || !strings.Contains(errOut, `no reply through channel "cs.chan" within `+want) {
			t.Errorf("ask through a channel nobody answers: exit %d after %s, stderr %q; want the timeout exit %d within %s", code, time.Since(start).Round(time.Millisecond), errOut, wire.InfoOf(wire.CodeTimeout).Exit, want)
		}
	}
	askOnce("1s")
	h.writeConfig("ask_timeout = \"2s\"\n")
	await(t, 10*time.Second, "ask_timeout reloaded", func() bool {
		_, errOut, _ := h.agentctl("", "ask", "cs", "still there?")
		return strings.Contains(errOut, "within 2s")
	})
	if msgs := lp.messages(t); len(msgs) < 2 {
		t.Errorf("the listener got %d asks, want each of them", len(msgs))
	}
}
