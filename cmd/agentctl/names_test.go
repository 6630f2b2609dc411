package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func TestNaturalOrderCountsLikePeople(t *testing.T) {
	got := []string{"w-10", "w-2", "w-1", "w-19", "a", "w-02", "w-1b", "w-1a", "b2", "b10", "w-"}
	slices.SortFunc(got, naturalCompare)
	want := []string{"a", "b2", "b10", "w-", "w-1", "w-1a", "w-1b", "w-2", "w-02", "w-10", "w-19"}
	if !slices.Equal(got, want) {
		t.Errorf("natural order = %v, want %v", got, want)
	}
}

func TestShellJoinCanBePastedBack(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"python3", "-i"}, "python3 -i"},
		{[]string{"sh", "-c", "echo hi; sleep 1"}, "sh -c 'echo hi; sleep 1'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"printf", ""}, "printf ''"},
		{[]string{"ls", "--color=auto", "/tmp/a.b"}, "ls --color=auto /tmp/a.b"},
		{[]string{"echo", "$HOME", "*"}, "echo '$HOME' '*'"},
	} {
		if got := shellJoin(tc.argv); got != tc.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

func TestListFitsTheWidthCuttingTheCommand(t *testing.T) {
	now := time.Now()
	code := 0
	rows := []wire.SessionRow{
		{Name: "w-1", Status: wire.StatusRunning, PID: 4242, Command: []string{"sh", "-c", strings.Repeat("echo long; ", 20)}, AgeMS: 5000},
		{Name: "w-2", Status: wire.StatusExited, PID: 4343, Command: []string{"true"}, Termination: wire.TermCleanExit, ExitCode: &code},
	}
	var b strings.Builder
	if err := printSessions(&b, rows, 80, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d columns at width 80: %q", n, l)
		}
	}
	if !strings.HasSuffix(lines[1], "…") || !strings.Contains(lines[1], "4242") {
		t.Errorf("running row %q: want its pid and the command cut with …", lines[1])
	}
	if strings.Contains(lines[2], "4343") || !strings.Contains(lines[2], "clean_exit (0)") {
		t.Errorf("ended row %q: want no pid and its exit", lines[2])
	}
	b.Reset()
	printSessions(&b, rows, 0, now)
	if !strings.Contains(b.String(), "'"+strings.Repeat("echo long; ", 20)+"'") {
		t.Errorf("with no width the command is whole and quoted:\n%s", b.String())
	}
}

func TestListOnANarrowTerminalLeavesOutColumns(t *testing.T) {
	now := time.Now()
	rows := []wire.SessionRow{
		{Name: "build-frontend", Status: wire.StatusRunning, PID: 424242, Command: []string{"npm", "run", "build", "--", "--watch"}, AgeMS: 5000,
			LastActivity: now.Add(-3 * time.Second), Input: wire.InputReady},
	}
	for _, tc := range []struct {
		width   int
		without []string
		with    []string
	}{
		{48, []string{"PID", "ACTIVE", "AGE", "EXIT", "424242"}, []string{"NAME", "STATUS", "STATE", "ready", "COMMAND", "build-frontend", "running", "npm run", "…"}},
		{68, []string{"PID"}, []string{"STATE", "AGE", "ACTIVE", "EXIT", "…"}},
		{108, nil, []string{"STATE", "PID", "ACTIVE", "AGE", "EXIT", "424242", "npm run build -- --watch"}},
	} {
		var b strings.Builder
		printSessions(&b, rows, tc.width, now)
		for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if n := len([]rune(l)); n > tc.width {
				t.Errorf("width %d: a line of %d columns: %q", tc.width, n, l)
			}
		}
		for _, w := range tc.without {
			if strings.Contains(b.String(), w) {
				t.Errorf("width %d: the table has %q:\n%s", tc.width, w, b.String())
			}
		}
		for _, w := range tc.with {
			if !strings.Contains(b.String(), w) {
				t.Errorf("width %d: the table lacks %q:\n%s", tc.width, w, b.String())
			}
		}
	}
}

func TestVerbNameSkipsGlobalFlagsAndTheirValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "list"},
		{[]string{"--socket", "/s", "--timeout", "5s", "status", "x"}, "status"},
		{[]string{"--socket=/s", "--json", "ask", "py", "q"}, "ask"},
		{[]string{"--json"}, ""},
		{[]string{"--", "list"}, ""},
		{[]string{"-h"}, ""},
	} {
		if got := verbName(tc.args); got != tc.want {
			t.Errorf("verbName(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
