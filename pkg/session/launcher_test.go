package session

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDescribeIsOneBoundedLine(t *testing.T) {
	if got := Describe("w1", []string{"claude", "--resume", "x"}); got != "agentd session w1: claude --resume x" {
		t.Errorf("Describe: %q", got)
	}
	long := Describe("w1", []string{strings.Repeat("é", 300)})
	if len(long) > MaxDescription || !utf8.ValidString(long) || !strings.HasSuffix(long, "...") {
		t.Errorf("a long command is described as %d bytes (valid UTF-8 %v): %q", len(long), utf8.ValidString(long), long)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		l  Limits
		ok bool
	}{
		{Limits{}, true}, {Limits{MemoryMax: 4 << 30, CPUWeight: 50}, true}, {Limits{CPUWeight: MaxCPUWeight}, true},
		{Limits{MemoryMax: -1}, false}, {Limits{CPUWeight: MaxCPUWeight + 1}, false}, {Limits{CPUWeight: -1}, false},
	} {
		err := c.l.Validate()
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%+v) = %v, want ok %v (or ErrInvalid)", c.l, err, c.ok)
		}
	}
}

func TestForkLauncherRefusesLimits(t *testing.T) {
	_, err := ForkLauncher{}.Launch(t.Context(), LaunchSpec{Argv: []string{"/bin/true"}, Limits: Limits{CPUWeight: 50}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "systemd user manager") {
		t.Errorf("fork with limits: %v, want ErrInvalid naming the user manager", err)
	}
}

func TestUnitOfReadsTheCgroup(t *testing.T) {
	// Whatever this process runs in, UnitOf answers from its cgroup file:
	// a unit name ends in .service or .scope, or there is none.
	u := UnitOf(os.Getpid())
	if u != "" && !strings.HasSuffix(u, ".service") && !strings.HasSuffix(u, ".scope") {
		t.Errorf("UnitOf(self) = %q", u)
	}
	if UnitOf(0) != "" || UnitOf(-1) != "" {
		t.Error("UnitOf of no process names a unit")
	}
}
