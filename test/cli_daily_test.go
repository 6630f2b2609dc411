package test

// What daily use of agentctl tripped over (issue 24), each through the
// built binary.

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/pkg/wire"
)

// ptyOutput runs agentctl with stdout (and stderr) on a 120x40 terminal
// and returns what it printed there.
func (h *home) ptyOutput(args ...string) string {
	h.t.Helper()
	master, slave := openTestPTY(h.t)
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env("COLUMNS=")
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	slave.Close()
	var b strings.Builder
	r := bufio.NewReader(master)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				return // EIO once agentctl has exited and closed the terminal
			}
		}
	}()
	cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.t.Fatalf("agentctl %q: the terminal never closed", args)
	}
	return b.String()
}

func TestWatchOffATerminalPrintsTheTableOnly(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "w1", "--", "sleep", "30")
	out := h.ctl(0, "watch")
	if !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "w1") || strings.Contains(out, "null") {
		t.Errorf("agentctl watch | cat printed %q; want the table and nothing after it", out)
	}
}

// The table fits the terminal it is printed on (its width read through
// the escaping writer), the command cut to fit.
func TestListOnATerminalFitsIt(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "long", "--", "sleep", "30", strings.Repeat("x", 200))
	out := h.ptyOutput("list")
	if !strings.Contains(out, "long") {
		t.Fatalf("list on a terminal: %q", out)
	}
	for _, l := range strings.Split(strings.TrimRight(out, "\r\n"), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, "\r")); n > 120 {
			t.Errorf("a line of %d columns on a 120-column terminal: %q", n, l)
		}
	}
}

func TestAttachNeedsATerminal(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "a1", "--", "cat")
	_, errOut, code := h.agentctl("ls\n", "attach", "a1")
	if code != wire.ExitUsage || !strings.Contains(errOut, "needs a terminal on stdin") {
		t.Errorf("attach with a pipe on stdin: exit %d, %q; want a usage error", code, errOut)
	}
	_, errOut, code = h.agentctl("", "attach", "a1", "--detach-keys", "alt-x")
	if code != wire.ExitUsage || !strings.Contains(errOut, "ctrl-p,ctrl-q") {
		t.Errorf("attach --detach-keys alt-x: exit %d, %q; want a usage error with an example", code, errOut)
	}
}

// --json writes "<>&" as they are, not encoding/json's \u003c; on a
// terminal the envelope is indented for a person, in a pipe one line.
func TestJSONIsReadable(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "j1", "--", "sh", "-c", "sleep 30 # <a> & b")
	out := h.ctl(0, "--json", "status", "j1")
	if !strings.Contains(out, "# <a> & b") || strings.Contains(out, `\u003c`) || strings.Count(out, "\n") != 1 {
		t.Errorf("status --json in a pipe: %q; want one line with <a> & b as they are", out)
	}
	if out := h.ptyOutput("--json", "status", "j1"); !strings.Contains(out, "\n  \"ok\": true,") || !strings.Contains(out, "<a> & b") {
		t.Errorf("status --json on a terminal: %q; want it indented", out)
	}
}
