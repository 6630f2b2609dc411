package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// agentdBin is the binary built once for these tests: they check what a
// person sees from the command, not the library.
var agentdBin string

func TestMain(m *testing.M) {
	// A private home for the whole run, the binary built inside it; all of
	// it removed after, and checked to leave nothing in the real one.
	os.Exit(testhome.Run(func() int {
		dir, err := os.MkdirTemp("", "agentd-cmd-test")
		if err != nil {
			panic(err)
		}
		agentdBin = filepath.Join(dir, "agentd")
		if out, err := exec.Command("go", "build", "-o", agentdBin, ".").CombinedOutput(); err != nil {
			panic("building agentd: " + err.Error() + "\n" + string(out))
		}
		return m.Run()
	}))
}

// agentd runs the binary with args and extra environment and returns its
// stdout, stderr and exit status.
func agentd(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(agentdBin, args...)
	home := t.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + home + "/config"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func TestHelpAndVersionGoToStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errOut, code := agentd(t, nil, args...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "-check-config") || errOut != "" {
			t.Errorf("agentd %v: exit %d, stdout %q, stderr %q; want the usage with its flags on stdout and exit 0", args, code, out, errOut)
		}
		// Each flag with its type and default, and nothing else.
		for _, want := range []string{"-ask-idle duration", "(default 1.5s)", "-ask-timeout duration", "(default 10m0s)"} {
			if !strings.Contains(out, want) {
				t.Errorf("agentd %v: the usage lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "panic") {
			t.Errorf("agentd %v: the usage reports a panic:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := agentd(t, nil, args...)
		if code != 0 || !strings.HasPrefix(out, "agentd ") || !strings.Contains(out, "(build ") || errOut != "" {
			t.Errorf("agentd %v: exit %d, stdout %q, stderr %q; want the version on stdout", args, code, out, errOut)
		}
	}
}

func TestConfigTraps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type trap struct {
		name string
		env  []string
		args []string
		code int
		want []string // in stderr, or in stdout when code is 0
	}
	cases := []trap{
		{"missing named config", nil, []string{"--config", filepath.Join(dir, "no-such.toml"), "--check-config"}, 2,
			[]string{"no-such.toml does not exist", "--config"}},
		{"bare number for a duration", nil, []string{"--config", write("bare.toml", "log_level = \"info\"\nask_idle = 5\n"), "--check-config"}, 2,
			[]string{":2:", `"ask_idle"`, `ask_idle = "1.5s"`, "no unit"}},
		{"bare float for a duration", nil, []string{"--config", write("float.toml", "lock_timeout = 1.5\n"), "--check-config"}, 2,
			[]string{":1:", `"lock_timeout"`, "unit"}},
		{"quoted number for a duration", nil, []string{"--config", write("quoted.toml", "ask_idle = \"5\"\n"), "--check-config"}, 2,
			[]string{":1:", `"ask_idle"`, `"5" has no unit`}},
		{"a space in a duration", nil, []string{"--config", write("space.toml", "ask_timeout = \"10 m\"\n"), "--check-config"}, 2,
			[]string{":1:", `"ask_timeout"`, `"10 m" has a space`}},
		{"a key set twice", nil, []string{"--config", write("twice.toml", "ask_timeout = \"2s\"\nlog_level = \"info\"\nask_timeout = \"3s\"\n"), "--check-config"}, 2,
			[]string{":3:", `"ask_timeout" is set twice (first on line 1)`}},
		{"duration with its unit", nil, []string{"--config", write("ok.toml", "ask_idle = \"5s\"\n"), "--check-config"}, 0,
			[]string{"config ok", "ok.toml"}},
		{"display none", nil, []string{"--display", "none", "--check-config"}, 0, []string{"config ok"}},
		{"socket too long", nil, []string{"--socket", "/" + strings.Repeat("s", 120), "--check-config"}, 2,
			[]string{"socket path is 121 bytes", "--socket", "AGENTD_SOCKET"}},
	}
	long := "/tmp/" + strings.Repeat("d", 120)
	cases = append(cases, []trap{
		{"AGENTD_SOCKET too long", []string{"AGENTD_SOCKET=" + long + "/agentd.sock"}, []string{"--check-config"}, 2,
			[]string{"is 137 bytes", "over the 107", "$AGENTD_SOCKET", "--socket"}},
		{"XDG_RUNTIME_DIR too long", []string{"XDG_RUNTIME_DIR=" + long}, []string{"--check-config"}, 2,
			[]string{"is 144 bytes", "from $XDG_RUNTIME_DIR", "shorter $XDG_RUNTIME_DIR", "socket in the config", "$AGENTD_SOCKET", "--socket"}},
		// The daemon itself refuses it the same way, before it starts.
		{"XDG_RUNTIME_DIR too long, running", []string{"XDG_RUNTIME_DIR=" + long}, nil, 2, []string{"from $XDG_RUNTIME_DIR"}},
		{"--socket overrides a long XDG_RUNTIME_DIR", []string{"XDG_RUNTIME_DIR=" + long}, []string{"--socket", "/tmp/short.sock", "--check-config"}, 0,
			[]string{"config ok"}},
		{"duration flag without a unit", nil, []string{"--ask-idle", "5"}, 2, []string{"agentd: ", "-ask-idle", "not a duration", "1.5s", "see agentd --help"}},
		{"unknown flag", nil, []string{"--bogus"}, 2, []string{"agentd: ", "-bogus", "see agentd --help"}},
		{"version with an argument", nil, []string{"version", "extra"}, 2, []string{"agentd: version takes no arguments"}},
	}...)
	for _, tc := range cases {
		out, errOut, code := agentd(t, tc.env, tc.args...)
		text := errOut
		if tc.code == 0 {
			text = out
		}
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (stdout %q, stderr %q)", tc.name, code, tc.code, out, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q does not say %q", tc.name, text, w)
			}
		}
		// One line, not the usage after it.
		if tc.code == 2 && strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: stderr is %d lines, want one:\n%s", tc.name, strings.Count(errOut, "\n"), errOut)
		}
	}
}

func TestPrintConfigShowsValuesInUse(t *testing.T) {
	t.Parallel()
	run, state := t.TempDir(), t.TempDir()
	out, errOut, code := agentd(t, []string{"XDG_RUNTIME_DIR=" + run, "XDG_STATE_HOME=" + state, "DISPLAY=:57"}, "--print-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`socket = "` + run + `/agentd/agentd.sock"  # default, from $XDG_RUNTIME_DIR`,
		`state_dir = "` + state + `/agentd"  # default, from $XDG_STATE_HOME`,
		`display = ":57"  # default, from $DISPLAY`,
		`log_format = "json"  # default, from stderr is not a terminal`,
		`ask_idle = "1.5s"  # default`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = agentd(t, []string{"AGENTD_SOCKET=/tmp/given.sock"}, "--print-config", "--display", ":3")
	for _, want := range []string{`socket = "/tmp/given.sock"  # default, from $AGENTD_SOCKET`, `display = ":3"  # flag`} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
}

func TestInstallPlacesUnitsBesidePrefix(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, tc := range []struct{ args, want string }{
		{"PREFIX=/opt/agentd", "/opt/agentd/lib/systemd/user/agentd.service"},
		{"PREFIX=/opt/agentd UNITDIR=/etc/units", "/etc/units/agentd.service"},
	} {
		cmd := exec.Command("make", append([]string{"-n", "-C", "../..", "install"}, strings.Fields(tc.args)...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n install %s: %v\n%s", tc.args, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("make install %s does not write %s:\n%s", tc.args, tc.want, out)
		}
	}
}
