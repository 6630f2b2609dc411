package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/pkg/wire"
)

// runCtl drives agentctl in-process.
func runCtl(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// exitRows reads "exit, code" pairs from text by re.
func exitRows(text string, re *regexp.Regexp) map[string]int {
	rows := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		rows[m[2]] = n
	}
	return rows
}

func wantRows() map[string]int {
	want := map[string]int{"success": wire.ExitOK, "usage": wire.ExitUsage, "unreachable": wire.ExitUnreachable, "interrupted": 130}
	for _, ci := range wire.Codes {
		want[string(ci.Code)] = ci.Exit
	}
	return want
}

func TestExitTableAgreesWithHelpAndReadme(t *testing.T) {
	want := wantRows()
	help, _, code := runCtl(t, "", "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	gotHelp := exitRows(help, regexp.MustCompile(`(?m)^\s+(\d+)\s+([a-z_]+)`))
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	gotReadme := exitRows(string(readme), regexp.MustCompile("(?m)^\\| (\\d+) \\| `?\\(?([a-z_]+)\\)?`? \\|"))
	for name, got := range map[string]map[string]int{"agentctl --help": gotHelp, "README": gotReadme} {
		for code, exit := range want {
			if g, ok := got[code]; !ok || g != exit {
				t.Errorf("%s: %s exits %d (listed: %v), want %d", name, code, g, ok, exit)
			}
		}
		for code := range got {
			if _, ok := want[code]; !ok {
				t.Errorf("%s lists %q, which the code does not know", name, code)
			}
		}
	}
	// exitCode, the one function agentctl uses, agrees with the table.
	for _, ci := range wire.Codes {
		if got := exitCode(wire.Errorf(ci.Code, "x")); got != ci.Exit {
			t.Errorf("exitCode(%s) = %d, want %d", ci.Code, got, ci.Exit)
		}
	}
	if got := exitCode(fmt.Errorf("call: %w", &wire.UnreachableError{Socket: "s", Err: errors.New("no")})); got != wire.ExitUnreachable {
		t.Errorf("exitCode(unreachable) = %d, want %d", got, wire.ExitUnreachable)
	}
}

func TestUnreachableDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	_, stderr, code := runCtl(t, "", "--socket", sock, "hello")
	if code != wire.ExitUnreachable || !strings.Contains(stderr, "is agentd running?") {
		t.Errorf("got exit %d, stderr %q; want %d and a hint on starting agentd", code, stderr, wire.ExitUnreachable)
	}
	out, _, code := runCtl(t, "", "--socket", sock, "--json", "hello")
	var env struct {
		OK        bool   `json:"ok"`
		Command   string `json:"command"`
		Timestamp string `json:"timestamp"`
		Error     struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if env.OK || env.Command != "hello" || env.Timestamp == "" || env.Error.Code != "unreachable" || code != wire.ExitUnreachable {
		t.Errorf("envelope %+v exit %d, want ok false, command hello, code unreachable, exit 69", env, code)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"--nope"}, {"version", "extra"}} {
		_, stderr, code := runCtl(t, "", args...)
		if code != wire.ExitUsage {
			t.Errorf("agentctl %q exited %d, want %d (stderr %q)", args, code, wire.ExitUsage, stderr)
		}
	}
	_, stderr, _ := runCtl(t, "", "frobnicate")
	if !strings.Contains(stderr, "agentctl --help") {
		t.Errorf("unknown command message %q does not point at --help", stderr)
	}
	// An idle of zero would end every ask at once: refused before any call.
	for _, idle := range []string{"0", "-1s", "soon"} {
		_, stderr, code := runCtl(t, "", "ask", "py", "1", "--idle", idle)
		if code != wire.ExitUsage || !strings.Contains(stderr, "-idle") {
			t.Errorf("ask --idle %s: exit %d, stderr %q; want %d naming --idle", idle, code, stderr, wire.ExitUsage)
		}
	}
}

// TestClientLinksNothingOfTheDaemon keeps agentctl thin: it speaks the wire
// and nothing else.
func TestClientLinksNothingOfTheDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"BurntSushi/xgb", "fsnotify", "agentd/pkg/session", "agentd/pkg/capture", "agentd/pkg/daemon", "creack/pty", "zerolog",
			// The MCP SDK costs every command its start-up; agentctl-mcp has it.
			"modelcontextprotocol/go-sdk", "jsonschema-go",
			// The man page generator is only in `make man`'s build.
			"go-md2man", "blackfriday", "yaml"} {
			if strings.Contains(dep, banned) {
				t.Errorf("agentctl depends on %s", dep)
			}
		}
	}
}

func TestJSONWantedTakesEverySpellingTheFlagDoes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"list", "--bogus", "--json"}, true},
		{[]string{"list", "--bogus", "--json=1"}, true},
		{[]string{"list", "--bogus", "--json=True"}, true},
		{[]string{"list", "--bogus", "--json=t"}, true},
		{[]string{"list", "--bogus", "--json=false"}, false},
		{[]string{"list", "--bogus", "--json=0"}, false},
		{[]string{"list", "--bogus", "--json=maybe"}, false},
		{[]string{"spawn", "x", "--", "prog", "--json"}, false}, // the program's, not agentctl's
		{[]string{"list"}, false},
	} {
		if got := jsonWanted(tc.args); got != tc.want {
			t.Errorf("jsonWanted(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestAFlagErrorSaysAgentctlOnce(t *testing.T) {
	for _, args := range [][]string{{"--bogus", "list"}, {"-q", "list"}, {"list", "--bogus"}} {
		_, errOut, code := runCtl(t, "", args...)
		if code != wire.ExitUsage || strings.Count(errOut, "agentctl:") != 1 || !strings.Contains(errOut, "--help") {
			t.Errorf("agentctl %v: exit %d, stderr %q; want one \"agentctl:\" prefix, the help pointer and exit %d", args, code, errOut, wire.ExitUsage)
		}
	}
}

func TestDurationFlagsRefuseNegativeAndUnitless(t *testing.T) {
	for _, args := range [][]string{
		{"--timeout", "-1s", "list"}, {"--timeout", "5", "list"}, {"wait", "py", "--idle", "-1s"},
		{"stop", "g1", "--grace", "5"}, {"ask", "py", "x", "--lock-timeout", "-1s"}, {"record", "x", "--idle-limit", "5"},
	} {
		_, errOut, code := runCtl(t, "", args...)
		if code != wire.ExitUsage || !strings.Contains(errOut, "such as 2s") {
			t.Errorf("agentctl %v: exit %d, stderr %q; want a usage error that shows a duration", args, code, errOut)
		}
	}
}

func TestRecordJSONNeedsAFile(t *testing.T) {
	out, _, code := runCtl(t, "", "--json", "record", "x")
	if code != wire.ExitUsage || !strings.Contains(out, `"code":"usage"`) || !strings.Contains(out, "-o FILE") {
		t.Errorf("record --json to stdout: exit %d, %q; want a usage envelope asking for -o FILE", code, out)
	}
}

func TestCountSaysOneWithoutAnS(t *testing.T) {
	for n, want := range map[int]string{0: "0 actions", 1: "1 action", 2: "2 actions"} {
		if got := count(n, "action"); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestHelpHasNoControlCharacters: every command's help is text a terminal
// shows as it is; a flag's value when none is given (NoOptDefVal) once
// printed a NUL there.
func TestHelpHasNoControlCharacters(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, s := range c.Commands() {
			walk(s, append(append([]string(nil), path...), s.Name()))
		}
	}
	walk(newRoot(&env{stdout: io.Discard, stderr: io.Discard}, nil), nil)
	if len(paths) < 30 {
		t.Fatalf("walked %d commands; want every one of agentctl's", len(paths))
	}
	for _, path := range paths {
		args := append(append([]string(nil), path...), "--help")
		out, _, code := runCtl(t, "", args...)
		if code != 0 || out == "" {
			t.Errorf("agentctl %s: exit %d, stdout %q", strings.Join(args, " "), code, out)
		}
		for i, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || r == utf8.RuneError {
				t.Errorf("agentctl %s: character %U at byte %d: %q", strings.Join(args, " "), r, i, out[max(0, i-40):min(len(out), i+20)])
				break
			}
		}
	}
	if out, _, _ := runCtl(t, "", "spawn", "--help"); !strings.Contains(out, `--worktree BRANCH[="a new branch NAME"]`) {
		t.Errorf("spawn --help does not say what --worktree alone does:\n%s", out)
	}
}
