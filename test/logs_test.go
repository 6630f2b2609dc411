package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestLogsPlainIsWhatTmuxShows runs the same programs with the same keys in
// a session and in tmux (the oracle): `agentctl logs --plain` must print
// what `tmux capture-pane -p -S - -E -` shows, scrolled-off lines and all.
func TestLogsPlainIsWhatTmuxShows(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	tmux := tmuxFor(t, h)
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	os.WriteFile(conf, []byte("set -g default-terminal xterm-256color\nset -g history-limit 100000\nset -g status off\n"), 0o600)

	// Each step: text typed, then keys (tmux's names, agentctl's names).
	type step struct {
		text     string
		tmuxKeys []string
		ourKeys  string
		until    string // on the screen once the step is done
	}
	programs := []struct {
		name  string
		argv  []string
		ready string
		steps []step
	}{
		{"sh", []string{"env", "PS1=$ ", "bash", "--norc", "--noprofile", "-i"}, "$ ", []step{
			{`printf 'a\tb\033[1mc\033[0m\n'; seq 1 60; echo d""one1`, []string{"Enter"}, "enter", "done1"},
			{"echo hellp", []string{"BSpace"}, "backspace", ""},
			{"o", []string{"Enter"}, "enter", "hello"},
			{`printf '%0100d\n' 7; echo d""one2`, []string{"Enter"}, "enter", "done2"},
		}},
		{"py", []string{"python3", "-q", "-i"}, ">>> ", []step{
			{"for i in range(40): print('row', i)", []string{"Enter", "Enter"}, "enter,enter", "row 39"},
			{"print('x' * 130 + 'end')", []string{"Enter"}, "enter", "xend"},
		}},
	}
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			h.ctl(0, append([]string{"spawn", p.name, "--size", "80x24", "--"}, p.argv...)...)
			tmux(append([]string{"-f", conf, "new-session", "-d", "-s", p.name, "-x", "80", "-y", "24"}, p.argv...)...)
			pane := func() string { return tmux("capture-pane", "-p", "-t", p.name) }
			await(t, 20*time.Second, p.name+" ready in tmux", func() bool { return strings.Contains(pane(), strings.TrimSpace(p.ready)) })
			h.ctl(0, "wait", p.name, "--until", regexp.QuoteMeta(strings.TrimSpace(p.ready)), "--timeout", "20s")
			for _, s := range p.steps {
				h.ctl(0, "send", p.name, s.text, "--keys", s.ourKeys)
				tmux(append([]string{"send-keys", "-t", p.name, "-l", s.text}, ";")...)
				tmux(append([]string{"send-keys", "-t", p.name}, s.tmuxKeys...)...)
				if s.until == "" {
					continue
				}
				h.ctl(0, "wait", p.name, "--until", s.until, "--timeout", "20s")
				await(t, 20*time.Second, s.until+" in tmux", func() bool { return strings.Contains(pane(), s.until) })
				// Both back at the prompt before the next step.
				await(t, 20*time.Second, "the prompt in tmux", func() bool {
					return strings.HasSuffix(strings.TrimRight(pane(), "\n "), strings.TrimSpace(p.ready))
				})
				h.ctl(0, "wait", p.name, "--idle", "300ms", "--timeout", "20s")
			}
			want := strings.TrimRight(tmux("capture-pane", "-p", "-S", "-", "-E", "-", "-t", p.name), "\n") + "\n"
			if n := strings.Count(want, "\n"); n <= 24 {
				t.Fatalf("tmux shows %d lines; the test needs lines scrolled past one screen", n)
			}
			got := h.ctl(0, "logs", p.name, "--plain")
			if got != want {
				t.Errorf("logs --plain differs from tmux's capture-pane:\n--- ours\n%s--- tmux\n%s", got, want)
			}
			// The last lines, as `tail -n 3` of the same text.
			lines := strings.SplitAfter(strings.TrimSuffix(want, "\n"), "\n")
			if tail := h.ctl(0, "logs", p.name, "--plain", "--tail", "3"); tail != strings.Join(lines[len(lines)-3:], "")+"\n" {
				t.Errorf("--plain --tail 3 printed %q, want the last three lines of %q", tail, want)
			}
		})
	}
}

// TestLogsOfAnyLength: a log far over the frame cap prints whole, paging
// and streaming alike, and the pages stay under their byte bound.
func TestLogsOfAnyLength(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	// 24 MiB of output: over the 16 MiB frame cap as one answer.
	h.ctl(0, "spawn", "big", "--", "sh", "-c", "head -c 25165824 /dev/zero | tr '\\0' 'y'; echo; echo the-end; exec sleep 3600")
	h.ctl(0, "wait", "big", "--until", "the-end", "--timeout", "120s")
	out := h.ctl(0, "logs", "big")
	if n := strings.Count(out, "y"); n != 24<<20 || !strings.Contains(out, "the-end") {
		t.Fatalf("logs printed %d y's (want %d) and the end: %v", n, 24<<20, strings.Contains(out, "the-end"))
	}
	// Pages through the wire: each under the page bound, all of them the log.
	c := h.client()
	p := wire.LogsParams{Name: "big"}
	total, pages := 0, 0
	for {
		r, err := c.Logs(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if len(b) > 1<<20+64<<10 {
			t.Fatalf("page %d is %d bytes, over the page bound", pages, len(b))
		}
		pages++
		for _, ev := range r.Events {
			total += strings.Count(ev.Data, "y")
		}
		if !r.More {
			break
		}
		p.FromSeq = r.NextSeq
	}
	if total != 24<<20 || pages < 24 {
		t.Fatalf("%d pages held %d y's; want %d in at least 24 pages", pages, total, 24<<20)
	}
	// --tail counts lines; --limit events.
	if got := h.ctl(0, "logs", "big", "--tail", "1"); got != "the-end\r\n" {
		t.Errorf("--tail 1 printed %q", got)
	}
	ev := h.ctl(0, "logs", "big", "--events", "--limit", "2")
	if n := strings.Count(ev, "\n"); n != 2 {
		t.Errorf("--events --limit 2 printed %d lines", n)
	}
}

// TestLogsBadInput: each mistake gets its own clear error.
func TestLogsBadInput(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "quiet", "--", "sleep", "3600")
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--since", "last tuesday"}, 2, "not a seq, a duration or a time"},
		{[]string{"--since", "-5m"}, 2, "negative"},
		{[]string{"--tail", "-1"}, 2, "negative"},
		{[]string{"--limit", "-1"}, 2, "negative"},
		{[]string{"--from", "999"}, 2, "past the end"},
		{[]string{"--from", "1", "--since", "5m"}, 2, "give one"},
	} {
		_, errOut, code := h.agentctl("", append([]string{"logs", "quiet"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("logs %v: exit %d %q; want %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
	// A time in the future: nothing yet, and success, as journalctl and
	// docker logs answer it (clock skew must not break a poller).
	for _, args := range [][]string{{"logs", "quiet", "--since", "2999-01-01"}, {"logs", "quiet", "--events", "--since", "2999-01-01T00:00:00Z"}} {
		if out, errOut, code := h.agentctl("", args...); code != 0 || out != "" || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want nothing and exit 0", args, code, out, errOut)
		}
	}
	if out := h.ctl(0, "--json", "logs", "quiet", "--since", "2999-01-01"); !strings.Contains(out, `"events":0`) {
		t.Errorf("--json logs --since the future: %q; want a result of 0 events", out)
	}
	if _, errOut, code := h.agentctl("", "logs", "nobody"); code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("logs of no session: exit %d %q", code, errOut)
	}
	// Since a time and a duration: the marker of the start is in both.
	for _, since := range []string{"1h", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "1"} {
		if out := h.ctl(0, "logs", "quiet", "--events", "--since", since); !strings.Contains(out, `"marker"`) {
			t.Errorf("--since %s printed %q, want the start marker", since, out)
		}
	}
	if out := h.ctl(0, "logs", "quiet", "--events", "--since", "1"); strings.Count(out, "\n") < 1 {
		t.Errorf("--since 1: %q", out)
	}
}
