package test

// agentctl's command line as people use it (issue 15): help per verb,
// global flags anywhere, --version, one JSON shape. Everything goes
// through the built binary.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

func TestEveryVerbHasItsOwnHelp(t *testing.T) {
	t.Parallel()
	h := newHome(t) // no daemon: help never needs one
	verbs := []string{"spawn", "run", "ask", "list", "status", "stop", "rm", "reconcile", "logs", "send", "snapshot", "wait",
		"resize", "attach", "screen", "screenshot", "act", "version", "hello", "mcp", "serve", "channel",
		"channel listen", "channel push", "channel list", "channel reply", "channel mcp", "completion"}
	for _, v := range verbs {
		words := strings.Fields(v)
		for _, args := range [][]string{append(words, "--help"), append(words, "-h"), append([]string{"help"}, words...)} {
			out, errOut, code := h.agentctl("", args...)
			if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "agentctl "+v) || errOut != "" {
				t.Errorf("agentctl %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the usage of %q", strings.Join(args, " "), code, errOut, out, v)
			}
		}
	}
	// The top-level help still ends with the exit statuses.
	if out, _, code := h.agentctl("", "--help"); code != 0 || !strings.Contains(out, "Exit status:") || !regexp.MustCompile(`69 +unreachable`).MatchString(out) {
		t.Errorf("agentctl --help: exit %d\n%s\nwant the exit table", code, out)
	}
}

func TestUnknownCommandsAndTopicsAreUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, ""}, // the help, on stdout, with the usage status
		{[]string{"spwan", "x"}, "did you mean spawn?"},
		{[]string{"help", "nosuch"}, "no help for \"nosuch\""},
		{[]string{"channel"}, "channel needs a command"},
		{[]string{"channel", "shout"}, `unknown channel command "shout"`},
		{[]string{"list", "--nope"}, "unknown flag: --nope; see agentctl list --help"},
		{[]string{"status"}, "usage: agentctl status NAME"},
		{[]string{"wait", "py"}, "give --until REGEXP, --idle DURATION, --ready, --state STATE or --exit"},
	} {
		_, errOut, code := h.agentctl("", tc.args...)
		if code != wire.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("agentctl %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, errOut, wire.ExitUsage, tc.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	out, errOut, code := h.agentctl("", "--version")
	if code != 0 || !strings.HasPrefix(out, "agentctl ") || errOut != "" {
		t.Errorf("agentctl --version: exit %d, stdout %q, stderr %q; want agentctl VERSION on stdout", code, out, errOut)
	}
}

// envelope is one --json line.
type envelope struct {
	OK        bool            `json:"ok"`
	Command   string          `json:"command"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// envelopes reads stdout as JSON Lines of envelopes, failing the test on
// any line that is not one.
func envelopes(t *testing.T, args []string, stdout string) []envelope {
	t.Helper()
	var out []envelope
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Command == "" || e.Type == "" || e.Timestamp == "" {
			t.Fatalf("agentctl %s: line %q is not an envelope (%v)", strings.Join(args, " "), sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func TestGlobalFlagsGoBeforeOrAfterTheVerb(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	for _, args := range [][]string{
		{"--json", "list"}, {"list", "--json"},
		{"--json", "status", "s1"}, {"status", "s1", "--json"}, {"status", "--json", "s1"},
		{"version", "--json"}, {"hello", "--json"},
		{"status", "s1", "--json", "--socket", h.socket}, {"--timeout", "10s", "list", "--json"},
	} {
		out, errOut, code := h.agentctl("", args...)
		if code != 0 {
			t.Errorf("agentctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			continue
		}
		env := envelopes(t, args, out)
		if len(env) != 1 || !env[0].OK || env[0].Type != "result" || len(env[0].Result) == 0 {
			t.Errorf("agentctl %s: %s, want one result envelope", strings.Join(args, " "), out)
		}
	}
	// A wrong socket after the verb is used, not ignored.
	_, _, code := h.agentctl("", "list", "--socket", h.socket+".none")
	if code != wire.ExitUnreachable {
		t.Errorf("list --socket NOWHERE: exit %d, want %d", code, wire.ExitUnreachable)
	}
}

// agentctlAt runs agentctl in dir with extra environment.
func (h *home) agentctlAt(dir string, extraEnv []string, args ...string) (string, string, int) {
	h.t.Helper()
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env(extraEnv...)
	cmd.Dir = dir
	return h.runCmd(cmd)
}

func TestSpawnRunsInTheCallersDirectory(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	work := t.TempDir()
	sub := filepath.Join(work, "sub")
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"here", []string{"spawn", "here", "--", "pwd"}, work},
		{"dot", []string{"spawn", "dot", "--cwd", ".", "--", "pwd"}, work},
		{"relative", []string{"spawn", "rel", "--cwd", "sub", "--", "pwd"}, sub},
		{"absolute", []string{"spawn", "abs", "--cwd", sub, "--", "pwd"}, sub},
	} {
		if out, errOut, code := h.agentctlAt(work, nil, tc.args...); code != 0 {
			t.Fatalf("%s: agentctl %s: exit %d\n%s%s", tc.name, strings.Join(tc.args, " "), code, out, errOut)
		}
		name := tc.args[1]
		h.ctl(0, "--timeout", "20s", "wait", name, "--exit")
		var st wire.SessionStatus
		json.Unmarshal([]byte(h.ctl(0, "--json", "status", name)), &struct{ Result *wire.SessionStatus }{&st})
		logs := h.ctl(0, "logs", name)
		if st.Cwd != tc.want || !strings.Contains(logs, tc.want) {
			t.Errorf("%s: cwd %q, pwd printed %q; want %s", tc.name, st.Cwd, logs, tc.want)
		}
	}
}

func TestListSortsNaturallyFitsAndFilters(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	for _, n := range []string{"w-10", "w-2", "w-1"} {
		h.ctl(0, "spawn", n, "--", "sh", "-c", "echo 'a long line of text'; exec cat", "--", strings.Repeat("x", 90))
	}
	h.ctl(0, "spawn", "done", "--", "true")
	h.ctl(0, "--timeout", "20s", "wait", "done", "--exit")

	out, _, _ := h.agentctlAt(t.TempDir(), []string{"COLUMNS=80"}, "list")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var names []string
	for _, l := range lines[1:] {
		names = append(names, strings.Fields(l)[0])
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("COLUMNS=80: a line of %d columns: %q", n, l)
		}
	}
	if strings.Join(names, " ") != "done w-1 w-2 w-10" {
		t.Errorf("list order %v, want done w-1 w-2 w-10\n%s", names, out)
	}
	// Piped with no COLUMNS: whole, and quoted as a shell needs it.
	if out := h.ctl(0, "list"); !strings.Contains(out, "sh -c 'echo '\\''a long line of text'\\''; exec cat' -- "+strings.Repeat("x", 90)) {
		t.Errorf("list without COLUMNS does not show the command whole and shell-quoted:\n%s", out)
	}
	for _, l := range strings.Split(h.ctl(0, "list"), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "done" && f[2] != "-" {
			t.Errorf("an ended session shows pid %s: %q", f[2], l)
		}
	}
	// Nor in the JSON: the number may be another process's by now.
	var listed struct {
		Result wire.ListResult `json:"result"`
	}
	json.Unmarshal([]byte(h.ctl(0, "--json", "list")), &listed)
	for _, r := range listed.Result.Sessions {
		if ended := r.Status == wire.StatusExited; ended != (r.PID == 0) {
			t.Errorf("list --json: %s is %s with pid %d; want a pid while it runs and none once it ended", r.Name, r.Status, r.PID)
		}
	}
	if out := h.ctl(0, "list", "-q"); out != "done\nw-1\nw-2\nw-10\n" {
		t.Errorf("list -q = %q, want the names in natural order", out)
	}
	if out := h.ctl(0, "list", "-q", "--status", "exited"); out != "done\n" {
		t.Errorf("list -q --status exited = %q, want done", out)
	}
	if out := h.ctl(0, "list", "-q", "--status", "running,exited"); out != "done\nw-1\nw-2\nw-10\n" {
		t.Errorf("list -q --status running,exited = %q", out)
	}
	// Repeated, the flags add up like the comma form.
	if out := h.ctl(0, "list", "--status", "running", "--status", "exited", "-q"); out != "done\nw-1\nw-2\nw-10\n" {
		t.Errorf("list --status running --status exited -q = %q", out)
	}
	// A narrow terminal: columns go before the table wraps.
	out, _, _ = h.agentctlAt(t.TempDir(), []string{"COLUMNS=40"}, "list")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 40 {
			t.Errorf("COLUMNS=40: a line of %d columns: %q", n, l)
		}
	}
	// Tab after --status offers the statuses, without asking the daemon.
	if out, _, _ := h.agentctl("", "__complete", "list", "--status", "ex"); !strings.HasPrefix(out, "exiting\nexited\n") {
		t.Errorf("completing list --status ex: %q, want exiting and exited", out)
	}
	if _, errOut, code := h.agentctl("", "list", "--status", "runing"); code != wire.ExitUsage || !strings.Contains(errOut, "running") {
		t.Errorf("list --status runing: exit %d, %q; want usage naming the statuses", code, errOut)
	}
}

func TestJSONIsOneEnvelopeShapeEverywhere(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh", "-c", "echo one; echo two; exec cat")
	h.ctl(0, "--timeout", "20s", "wait", "s1", "--until", "two")

	// A stream: one envelope per event, then the result that ends it.
	args := []string{"--json", "logs", "s1"}
	out := h.ctl(0, args...)
	env := envelopes(t, args, out)
	if len(env) < 2 || env[len(env)-1].Type != "result" {
		t.Fatalf("logs --json:\n%s\nwant event envelopes, then a result", out)
	}
	for _, e := range env[:len(env)-1] {
		if e.Type != "event" || e.Command != "logs" || !e.OK {
			t.Errorf("logs --json line %+v, want ok, command logs, type event", e)
		}
	}
	if !strings.Contains(out, `"data":"one\r\n`) {
		t.Errorf("logs --json has not the output:\n%s", out)
	}

	// Sub-commands report their full verb.
	lp := h.startListen("--json", "--id", "c1", "--count", "1")
	h.awaitChannel("c1")
	args = []string{"--json", "channel", "push", "c1", `{"n": 1}`}
	env = envelopes(t, args, h.ctl(0, args...))
	if len(env) != 1 || env[0].Command != "channel push" || env[0].Type != "result" {
		t.Errorf("channel push --json: %+v, want one result of command \"channel push\"", env)
	}
	select {
	case <-lp.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("channel listen --count 1 still running after its message\nstdout: %s\nstderr: %s", lp.stdout, lp.stderr)
	}
	args = []string{"--json", "channel", "listen"}
	env = envelopes(t, args, lp.stdout.String())
	var types []string
	for _, e := range env {
		types = append(types, e.Type)
		if e.Command != "channel listen" {
			t.Errorf("channel listen --json line of command %q", e.Command)
		}
	}
	if strings.Join(types, ",") != "listening,message,result" || !strings.Contains(string(env[1].Result), `"message":{"n":1}`) {
		t.Errorf("channel listen --json:\n%s\nwant listening, message, result", lp.stdout)
	}

	// Errors are envelopes too, with the exit status of their code.
	args = []string{"status", "ghost", "--json"}
	out, _, code := h.agentctl("", args...)
	env = envelopes(t, args, out)
	if code != 13 || len(env) != 1 || env[0].OK || env[0].Type != "error" || env[0].Error == nil || env[0].Error.Code != "agent_not_found" {
		t.Errorf("status ghost --json: exit %d, %s; want 13 and one error envelope", code, out)
	}
	args = []string{"list", "--json", "--nope"}
	out, _, code = h.agentctl("", args...)
	env = envelopes(t, args, out)
	if code != wire.ExitUsage || len(env) != 1 || env[0].Error == nil || env[0].Error.Code != "usage" {
		t.Errorf("list --json --nope: exit %d, %s; want a usage envelope", code, out)
	}
}

func TestATimeoutShowsWhatWasSeenOnStderr(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh", "-c", "echo the-last-thing-printed; exec cat")
	h.ctl(0, "--timeout", "20s", "wait", "s1", "--until", "the-last-thing")
	out, errOut, code := h.agentctl("", "--timeout", "1s", "wait", "s1", "--until", "never-printed")
	if code != 21 || out != "" || !strings.Contains(errOut, "last lines of the screen:\n") || !strings.Contains(errOut, "  the-last-thing-printed") {
		t.Errorf("wait past its timeout: exit %d, stdout %q, stderr:\n%s\nwant 21 and the screen's last lines on stderr", code, out, errOut)
	}
	// Once: not escaped in the message too, no partial answer for a wait
	// (it has none), and no blank rows after the screen's last line.
	if n := strings.Count(errOut, "the-last-thing-printed"); n != 1 || strings.Contains(errOut, "partial answer") ||
		!strings.HasSuffix(errOut, "the-last-thing-printed\n") || !strings.HasPrefix(errOut, "agentctl: wait on session \"s1\" ran past its 1s deadline") {
		t.Errorf("wait past its timeout, stderr:\n%s\nwant a short message, then the screen's last line once and nothing after it", errOut)
	}
}

func TestCLIStatusOfAnEndedSessionSaysItsPidsAreHistory(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "live", "--", "cat")
	t.Cleanup(h.stopAll)
	h.ctl(0, "spawn", "ended", "--", "true")
	h.ctl(0, "--timeout", "20s", "wait", "ended", "--exit")
	if out := h.ctl(0, "status", "ended"); !regexp.MustCompile(`pids: +none running \(were program \d+, worker \d+`).MatchString(out) {
		t.Errorf("status of an ended session:\n%s\nwant its pids said to be those of the ended processes", out)
	}
	if out := h.ctl(0, "status", "live"); !regexp.MustCompile(`pids: +program \d+, worker \d+\n`).MatchString(out) {
		t.Errorf("status of a running session:\n%s\nwant its pids", out)
	}
}

// completionScript is a shell program that loads agentctl's completion
// script for shell and prints what Tab offers after line.
func completionScript(shell, line string) []string {
	words := strings.Fields(line)
	switch shell {
	case "bash":
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		// As bash calls a completion function: the words so far and the
		// index of the one under the cursor.
		prog := fmt.Sprintf(`source <(agentctl completion bash)
COMP_WORDS=(%s)
COMP_CWORD=%d
COMP_LINE=%q
COMP_POINT=${#COMP_LINE}
__start_agentctl
printf '%%s\n' "${COMPREPLY[@]}"
`, strings.Join(quoted, " "), len(words)-1, line)
		return []string{"bash", "--norc", "--noprofile", "-c", prog}
	case "bash-completion":
		// The same, with the bash-completion package loaded first, as on
		// most desktops.
		argv := completionScript("bash", line)
		argv[len(argv)-1] = "source /usr/share/bash-completion/bash_completion\n" + argv[len(argv)-1]
		return argv
	case "fish":
		return []string{"fish", "--no-config", "-c", fmt.Sprintf("agentctl completion fish | source; complete -C %q", line)}
	}
	return nil
}

func TestCompletionOffersSessionNamesFromTheDaemon(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	for _, n := range []string{"web-10", "web-2", "db"} {
		h.ctl(0, "spawn", n, "--", "cat")
	}
	h.startListen("--id", "jobs.1")
	h.awaitChannel("jobs.1")
	shells := []string{"bash"}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err == nil {
		shells = append(shells, "bash-completion")
	}
	if _, err := exec.LookPath("fish"); err == nil {
		shells = append(shells, "fish")
	} else {
		t.Log("fish is not installed: its completion is not tested")
	}
	for _, shell := range shells {
		for _, tc := range []struct {
			line string
			want []string
		}{
			{"agentctl status web", []string{"web-2", "web-10"}},
			{"agentctl --json ask d", []string{"db"}},
			{"agentctl channel push --session w", []string{"web-2", "web-10"}},
			{"agentctl channel push jo", []string{"jobs.1"}},
		} {
			// Tab on a word being typed: the line ends mid-word.
			argv := completionScript(shell, tc.line)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = h.env("PATH=" + bin.dir + ":" + os.Getenv("PATH"))
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("%s: completing %q: %v\n%s", shell, tc.line, err, errb.String())
				continue
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if f := strings.Fields(l); len(f) > 0 {
					got = append(got, f[0]) // fish adds the description after a tab
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("%s: Tab after %q offers %q, want %q\nstderr: %s", shell, tc.line, got, tc.want, errb.String())
			}
		}
	}
}

func TestCompletionWithoutADaemonOffersNothingQuickly(t *testing.T) {
	t.Parallel()
	h := newHome(t) // no daemon
	start := time.Now()
	out, errOut, code := h.agentctl("", "__complete", "status", "w")
	if code != 0 || strings.TrimSpace(out) != ":4" || time.Since(start) > 10*time.Second {
		t.Errorf("completion with no daemon: exit %d after %s, stdout %q, stderr %q; want no candidates and no file names (:4)", code, time.Since(start), out, errOut)
	}
}

// openTestPTY opens a pseudo-terminal pair, for a process whose stderr
// must be a terminal.
func openTestPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	var n int
	sc, _ := master.SyscallConn()
	sc.Control(func(fd uintptr) {
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
		if err == nil {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: 120, Row: 40})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

func TestProgressShowsOnATerminalOnly(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	args := []string{"--timeout", "3s", "wait", "s1", "--until", "never-printed"}

	// stderr on a terminal: the spinner, then the line erased before the error.
	master, slave := openTestPTY(t)
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env()
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	tty := &syncBuffer{}
	copied := make(chan struct{})
	go func() { io.Copy(tty, master); close(copied) }() // ends with EIO once agentctl exits
	cmd.Wait()
	<-copied
	if code := cmd.ProcessState.ExitCode(); code != 21 {
		t.Errorf("wait past its timeout on a terminal: exit %d, want 21\n%q", code, tty.String())
	}
	screen := tty.String()
	if !strings.Contains(screen, "waiting for s1: until never-printed (") || !strings.Contains(screen, "s)") {
		t.Errorf("no spinner on the terminal:\n%q", screen)
	}
	if i, j := strings.LastIndex(screen, "\r\x1b[K"), strings.Index(screen, "agentctl: "); i < 0 || j < i {
		t.Errorf("the spinner's line is not erased before the error:\n%q", screen)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}

	// stderr piped: not a byte of it.
	_, errOut, code := h.agentctl("", args...)
	if code != 21 || strings.ContainsAny(errOut, "\r\x1b") || strings.Contains(errOut, "waiting for") {
		t.Errorf("piped: exit %d, stderr %q; want 21 and no spinner", code, errOut)
	}
}

func TestDoctorReportsEachFailureWithItsFix(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil) // the harness gives it no DISPLAY
	state := filepath.Join(h.state, "agentd")
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(state, 0o700) })
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"other": {"command": "node", "args": ["server.js"]}}}`), 0o600)

	args := []string{"doctor", "--json"}
	out, errOut, code := h.agentctlAt(project, nil, args...)
	env := envelopes(t, args, out)
	if code != 1 || len(env) != 1 || env[0].Type != "result" {
		t.Fatalf("doctor in a broken setup: exit %d\n%s%s\nwant 1 and one result envelope", code, out, errOut)
	}
	var r struct {
		Checks []struct{ Name, Status, Detail, Fix string }
		Failed int
	}
	json.Unmarshal(env[0].Result, &r)
	got := map[string]string{}
	for _, c := range r.Checks {
		got[c.Name] = c.Status
		if c.Status == "fail" && c.Fix == "" {
			t.Errorf("check %s failed without a fix: %s", c.Name, c.Detail)
		}
		if c.Status == "skipped" && c.Detail == "" {
			t.Errorf("check %s skipped without saying why", c.Name)
		}
	}
	for name, want := range map[string]string{
		"daemon": "pass", "socket": "pass", "socket directory": "pass", "state directory": "fail",
		"display": "skipped", "x extensions": "skipped", "consent": "pass", "claude code bridge": "fail",
	} {
		if got[name] != want {
			t.Errorf("check %q: %q, want %q\n%s", name, got[name], want, out)
		}
	}
	if r.Failed < 2 {
		t.Errorf("failed = %d, want at least 2", r.Failed)
	}

	// For a person: each failure and its fix.
	out, _, _ = h.agentctlAt(project, nil, "doctor")
	for _, want := range []string{"fail     state directory", "is 0755", "fix: chmod 700 " + state, "fix: to use a screen: under systemd: systemctl --user import-environment DISPLAY", "agentd --display :0", `fix: add the bridge to .mcp.json: {"mcpServers"`} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, out)
		}
	}

	// Fixed: the state directory and the bridge pass; no display is a
	// setup (sessions only), not a failure, so doctor passes.
	os.Chmod(state, 0o700)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"agentd": {"command": "agentctl", "args": ["channel", "mcp"]}}}`), 0o600)
	out, _, code = h.agentctlAt(project, []string{"PATH=" + bin.dir + ":" + os.Getenv("PATH")}, "doctor")
	if !strings.Contains(out, "pass     state directory") || !strings.Contains(out, "pass     claude code bridge") ||
		!strings.Contains(out, "skipped  display             not configured") || !strings.Contains(out, "pass     config") || code != 0 {
		t.Errorf("doctor after the fixes: exit %d\n%s\nwant 0, the display not configured and the config checked", code, out)
	}
	// A bad config file is a failure of its own, with agentd's words.
	os.MkdirAll(filepath.Join(h.config, "agentd"), 0o700)
	os.WriteFile(filepath.Join(h.config, "agentd", "config.toml"), []byte("ask_idle = 5\n"), 0o600)
	out, _, code = h.agentctlAt(project, []string{"PATH=" + bin.dir + ":" + os.Getenv("PATH")}, "doctor")
	if code != 1 || !strings.Contains(out, "fail     config") || !strings.Contains(out, "ask_idle") {
		t.Errorf("doctor with a bad config: exit %d\n%s\nwant 1 and the config check failing, naming ask_idle", code, out)
	}
}

func TestDoctorWithoutADaemonSkipsWhatNeedsIt(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	out, _, code := h.agentctlAt(t.TempDir(), nil, "doctor")
	if code != 1 || !strings.Contains(out, "fail     daemon") || !strings.Contains(out, "fix: start it") ||
		!strings.Contains(out, "skipped  display             agentd is not reachable") || !strings.Contains(out, "skipped  claude code bridge  no .mcp.json") {
		t.Errorf("doctor with no daemon: exit %d\n%s", code, out)
	}
}

func TestScreenshotFormatFollowsTheFlagAndTheName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHome(t)
	// Refused before any call: no daemon needed, and no file written.
	for _, args := range [][]string{
		{"screenshot", "-o", filepath.Join(dir, "x.jpg"), "--jpeg", "0"},
		{"screenshot", "-o", filepath.Join(dir, "x.jpg"), "--jpeg", "101"},
		{"screenshot", "-o", filepath.Join(dir, "x.png"), "--jpeg", "80"},
		{"screenshot"},
	} {
		_, errOut, code := h.agentctl("", args...)
		if code != wire.ExitUsage || !strings.HasPrefix(errOut, "agentctl: ") {
			t.Errorf("agentctl %s: exit %d, stderr %q; want %d", strings.Join(args, " "), code, errOut, wire.ExitUsage)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) > 0 {
		t.Errorf("refused screenshots wrote %v", files)
	}

	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 640, Height: 480})
	h.startDaemon([]string{"--display", srv.Display})
	for name, magic := range map[string]string{"named.jpg": "\xff\xd8", "named.jpeg": "\xff\xd8", "named.png": "\x89PNG", "q.jpg": "\xff\xd8"} {
		args := []string{"screenshot", "-o", filepath.Join(dir, name)}
		if name == "q.jpg" {
			args = append(args, "--jpeg", "1")
		}
		h.ctl(0, args...)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.HasPrefix(string(b), magic) {
			t.Errorf("agentctl %s: %v, file starts %q, want %q", strings.Join(args, " "), err, b[:min(len(b), 4)], magic)
		}
	}
}

func TestSendTextThenKeysInOneCommand(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	h.ctl(0, "send", "s1", "typed-then-entered", "--keys", "enter")
	// cat echoes the line once Enter ends it: the text came first.
	await(t, 20*time.Second, "cat's echo of the sent line", func() bool {
		return strings.Count(h.ctl(0, "snapshot", "s1"), "typed-then-entered") == 2
	})
	if _, errOut, code := h.agentctl("", "send", "s1"); code != wire.ExitUsage || !strings.Contains(errOut, "give TEXT, --keys or both") {
		t.Errorf("send with neither: exit %d, %q", code, errOut)
	}
}

func TestWaitProgressStreamsEnvelopes(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh", "-c", "echo still-working; read x; echo finished")
	args := []string{"--timeout", "60s", "--json", "wait", "s1", "--exit", "--progress"}
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env()
	out := &syncBuffer{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	await(t, 30*time.Second, "a progress envelope showing the screen", func() bool {
		return strings.Contains(out.String(), `"last_line":"still-working"`)
	})
	h.ctl(0, "send", "s1", "--keys", "enter") // the program ends; so does the wait
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("wait --exit still running after the program ended:\n%s", out)
	}
	env := envelopes(t, args, out.String())
	last := env[len(env)-1]
	if cmd.ProcessState.ExitCode() != 0 || last.Type != "result" || !strings.Contains(string(last.Result), `"reason":"exited"`) {
		t.Errorf("wait --progress: exit %d, last line %+v, want the result", cmd.ProcessState.ExitCode(), last)
	}
	for _, e := range env[:len(env)-1] {
		if e.Type != "progress" || e.Command != "wait" || !strings.Contains(string(e.Result), `"waiting":"its exit"`) {
			t.Errorf("wait --progress line %+v, want progress envelopes of command wait", e)
		}
	}
}
