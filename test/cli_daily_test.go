package test

// What daily use of agentctl tripped over (issue 24), each through the
// built binary.

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/xvfbtest"
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
	if _, errOut, code := h.agentctl("", "watch", "a1"); code != wire.ExitUsage || !strings.Contains(errOut, "logs -f") {
		t.Errorf("watch NAME with a pipe on stdin: exit %d, %q; want a usage error naming logs -f", code, errOut)
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

// Small things that were rough (issue 24 items 7 and 14), one command each.
func TestDailyRoughEdges(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)

	// spawn x sleep 10 meant the command: say where the -- goes.
	if _, errOut, code := h.agentctl("", "spawn", "x", "sleep", "10"); code != wire.ExitUsage || !strings.Contains(errOut, "agentctl spawn x -- sleep 10") {
		t.Errorf("spawn without --: exit %d, %q; want a usage error showing the --", code, errOut)
	}
	// A current directory deleted under the shell: spawn_failed, not internal.
	gone := t.TempDir() + "/gone"
	os.Mkdir(gone, 0o755)
	cmd := exec.Command("sh", "-c", `cd "$1" && rmdir "$1" && exec "$2" spawn d -- true`, "sh", gone, bin.agentctl)
	cmd.Env = h.env()
	_, errOut, code := h.runCmd(cmd)
	if code != wire.InfoOf(wire.CodeSpawnFailed).Exit || !strings.Contains(errOut, "current directory is gone") {
		t.Errorf("spawn in a deleted directory: exit %d, %q; want spawn_failed naming the directory", code, errOut)
	}

	// --until '^FIN' matches a line of the output at once: ^ and $ are
	// line-wise, not the whole screen's ends.
	h.ctl(0, "spawn", "fin", "--", "sh", "-c", "echo start; echo FIN; exec sleep 30")
	start := time.Now()
	if out := h.ctl(0, "--timeout", "20s", "wait", "fin", "--until", "^FIN$"); !strings.Contains(out, "matched") {
		t.Errorf("wait --until '^FIN$': %q; want matched", out)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("wait --until '^FIN$' took %s", d)
	}
	// --progress is for --json; alone it is refused, not silently nothing.
	if _, errOut, code := h.agentctl("", "wait", "fin", "--exit", "--progress"); code != wire.ExitUsage || !strings.Contains(errOut, "--json") {
		t.Errorf("wait --progress without --json: exit %d, %q; want a usage error", code, errOut)
	}
	// snapshot ends at the last written row.
	if out := h.ctl(0, "snapshot", "fin"); !strings.HasSuffix(out, "FIN\n") {
		t.Errorf("snapshot ends %q; want no blank rows after FIN", out[max(0, len(out)-20):])
	}
	// The wire's parameter names do not reach a person.
	if _, errOut, _ := h.agentctl("", "logs", "fin", "--from", "999"); strings.Contains(errOut, "from_seq") || !strings.Contains(errOut, "--from 999") {
		t.Errorf("logs --from 999: %q; want it in the flag's words", errOut)
	}
	// status of an ended session says when it ended.
	h.ctl(0, "spawn", "end", "--", "true")
	h.ctl(0, "--timeout", "20s", "wait", "end", "--exit")
	if out := h.ctl(0, "status", "end"); !strings.Contains(out, "ended at:") {
		t.Errorf("status of an ended session:\n%s\nwant its end time", out)
	}
	// At 80 columns a 59-character name is cut, not the other columns.
	long := strings.Repeat("n", 59)
	h.ctl(0, "spawn", long, "--", "sleep", "30")
	out, _, _ := h.agentctlAt(t.TempDir(), []string{"COLUMNS=80"}, "list")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("COLUMNS=80: a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
		if strings.HasPrefix(l, "nnnn") && (!strings.Contains(l, "…") || !strings.Contains(l, "running") || !strings.Contains(l, "sleep 30")) {
			t.Errorf("COLUMNS=80: the long name's row %q; want the name cut and its status and command shown", l)
		}
	}
	// channel listen ends at --timeout, not 2 s after it.
	start = time.Now()
	if _, errOut, code := h.agentctl("", "--timeout", "1s", "channel", "listen"); code != 0 || !strings.Contains(errOut, "listening on channel") {
		t.Errorf("channel listen --timeout 1s: exit %d, %q", code, errOut)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("channel listen --timeout 1s ran %s", d)
	}
	// record --since takes what logs --since takes.
	if _, errOut, code := h.agentctl("", "record", "fin", "--since", time.Now().Add(-time.Minute).Format("2006-01-02 15:04"), "-o", t.TempDir()+"/f.cast"); code != 0 {
		t.Errorf("record --since \"YYYY-MM-DD HH:MM\": exit %d, %q", code, errOut)
	}
}

// run spawns, prints the output, and exits with the program's status;
// wait --exit exits with it too (issue 24 item 13).
func TestRunAndWaitExitWithTheProgramsStatus(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	out, errOut, code := h.agentctl("", "--timeout", "20s", "run", "r1", "--", "sh", "-c", "echo hello from run; exit 3")
	if code != 3 || !strings.Contains(out, "hello from run") {
		t.Errorf("run: exit %d, stdout %q, stderr %q; want 3 and the output", code, out, errOut)
	}
	if out := h.ctl(0, "list", "-q"); !strings.Contains(out, "r1") {
		t.Errorf("run without --rm removed the session: %q", out)
	}
	if _, _, code := h.agentctl("", "--timeout", "20s", "run", "--rm", "r2", "--", "true"); code != 0 {
		t.Errorf("run --rm true: exit %d", code)
	}
	if out := h.ctl(0, "list", "-q"); strings.Contains(out, "r2") {
		t.Errorf("run --rm left the session: %q", out)
	}
	if _, _, code := h.agentctl("", "--timeout", "20s", "run", "r3", "--", "sh", "-c", "kill -TERM $$"); code != 128+15 {
		t.Errorf("run of a program killed by TERM: exit %d, want %d", code, 128+15)
	}
	h.ctl(0, "spawn", "w3", "--", "sh", "-c", "sleep 0.2; exit 7")
	out, _, code = h.agentctl("", "--timeout", "20s", "wait", "w3", "--exit")
	if code != 7 || !strings.Contains(out, "exit status 7") {
		t.Errorf("wait --exit: exit %d, %q; want 7, saying so", code, out)
	}
	if _, _, code := h.agentctl("", "run", "r4", "sleep", "1"); code != wire.ExitUsage {
		t.Errorf("run without --: exit %d, want usage", code)
	}
}

// Tab offers what fits: key names after --keys, signals after --signal,
// directories after --cwd, a command after spawn's --, then files
// (cobra's directives: 4 no files, 16 directories only, 0 the shell's files).
func TestCompletionOffersWhatFits(t *testing.T) {
	t.Parallel()
	h := newHome(t) // none of these asks the daemon
	for _, tc := range []struct {
		words []string
		want  string // a candidate, or the directive line
	}{
		{[]string{"send", "x", "--keys", "ctrl+"}, "ctrl+c\n"},
		{[]string{"send", "x", "--keys", "enter,ta"}, "enter,tab\n"},
		{[]string{"stop", "x", "--signal", "KI"}, "KILL\n"},
		{[]string{"spawn", "x", "--cwd", ""}, ":16\n"},
		{[]string{"spawn", "x", "--", "s"}, "\nsh\n"},
		{[]string{"spawn", "x", "--", "sh", ""}, ":0\n"},
		{[]string{"spawn", ""}, ":4\n"},
		{[]string{"run", "x", "--", "tr"}, "\ntrue\n"},
	} {
		out, _, _ := h.agentctl("", append([]string{"__complete"}, tc.words...)...)
		if !strings.Contains("\n"+out, tc.want) {
			t.Errorf("completing %q: %q; want %q among it", tc.words, out, tc.want)
		}
	}
}

// agentd --check-config reports every problem of the file at once, in line
// order, with the known key a typo was near (issue 24 item 6); the
// config reload keeps the same words.
func TestCheckConfigReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	path := h.config + "/bad.toml"
	os.MkdirAll(h.config, 0o700)
	os.WriteFile(path, []byte("max_conections = 5\nlog_level = \"loud\"\nask_idle = 5\n"), 0o600)
	cmd := exec.Command(bin.agentd, "--config", path, "--check-config")
	cmd.Env = h.env()
	_, errOut, code := h.runCmd(cmd)
	i1 := strings.Index(errOut, path+`:1: unknown key "max_conections"; did you mean "max_connections"?`)
	i2 := strings.Index(errOut, path+`:2: key "log_level"`)
	i3 := strings.Index(errOut, path+`:3: key "ask_idle" must be a duration`)
	if code == 0 || !strings.Contains(errOut, "3 problems") || i1 < 0 || i2 < i1 || i3 < i2 {
		t.Errorf("agentd --check-config: exit %d\n%s\nwant the three problems in line order, the typo with its suggestion", code, errOut)
	}
}

// screenshot: agentctl writes the file from the image in the answer (so a
// forwarded socket's screenshot lands here), refuses an existing file
// without --force and a link always, and refuses -o - on a terminal
// (issue 24 item 3).
func TestScreenshotIsWrittenByTheClient(t *testing.T) {
	t.Parallel()
	if !xvfbtest.Installed() {
		t.Skip("Xvfb is not installed; .ci/run installs it")
	}
	h := newHome(t)
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 320, Height: 200})
	h.startDaemon([]string{"--display", srv.Display})
	dir := t.TempDir()
	// Relative to agentctl's directory, not the daemon's.
	out, errOut, code := h.agentctlAt(dir, nil, "screenshot", "-o", "rel.png")
	b, err := os.ReadFile(dir + "/rel.png")
	if code != 0 || err != nil || !strings.HasPrefix(string(b), "\x89PNG") || !strings.Contains(out, dir+"/rel.png: 320x200 png") {
		t.Fatalf("screenshot -o rel.png: exit %d, %q %q, file %v; want a PNG written here", code, out, errOut, err)
	}
	if st, _ := os.Stat(dir + "/rel.png"); st.Mode().Perm() != 0o600 {
		t.Errorf("the screenshot is %04o, want 0600", st.Mode().Perm())
	}
	if _, errOut, code := h.agentctlAt(dir, nil, "screenshot", "-o", "rel.png"); code != wire.ExitUsage || !strings.Contains(errOut, "--force") {
		t.Errorf("screenshot over an existing file: exit %d, %q; want usage naming --force", code, errOut)
	}
	h.ctl(0, "screenshot", "-o", dir+"/rel.png", "--force")
	os.Symlink(dir+"/rel.png", dir+"/link.png")
	if _, errOut, code := h.agentctlAt(dir, nil, "screenshot", "-o", "link.png", "--force"); code != wire.ExitUsage || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("screenshot through a link: exit %d, %q; want refused", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want rel.png and link.png (no temporary files)", len(entries))
	}
	if out := h.ptyOutput("screenshot", "-o", "-"); !strings.Contains(out, "stdout is a terminal") || strings.Contains(out, "PNG") {
		t.Errorf("screenshot -o - on a terminal: %q; want it refused", out)
	}
	if out := h.ctl(0, "screenshot", "-o", "-"); !strings.HasPrefix(out, "\x89PNG") {
		t.Errorf("screenshot -o - to a pipe: %.20q; want PNG bytes", out)
	}
}

// record's header has the size the recording starts at, not the
// session's size now (an attach resized it), and the resize follows as
// an event (issue 24 item 4).
func TestRecordHeaderHasTheStartSize(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "rs", "--size", "120x40", "--", "sh", "-c", "echo one; read x; echo two; sleep 30")
	h.ctl(0, "--timeout", "20s", "wait", "rs", "--until", "one")
	h.ctl(0, "resize", "rs", "160x22")
	h.ctl(0, "send", "rs", "go", "--keys", "enter")
	h.ctl(0, "--timeout", "20s", "wait", "rs", "--until", "two")
	file := t.TempDir() + "/rs.cast"
	h.ctl(0, "record", "rs", "-o", file)
	b, _ := os.ReadFile(file)
	lines := strings.Split(string(b), "\n")
	if !strings.Contains(lines[0], `"width":120`) || !strings.Contains(lines[0], `"height":40`) {
		t.Errorf("the header %s; want the start size 120x40", lines[0])
	}
	if !strings.Contains(string(b), `"r", "160x22"`) && !strings.Contains(string(b), `"r","160x22"`) {
		t.Errorf("the recording has no resize to 160x22:\n%s", b)
	}
}

// stop, rm and status take several names or --all; one that fails does
// not stop the others, and the exit status is the first failure's (issue
// 24 item 13).
func TestStopRmStatusOfSeveralSessions(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	for _, n := range []string{"m1", "m2", "m3"} {
		h.ctl(0, "spawn", n, "--", "sleep", "60")
	}
	out, errOut, code := h.agentctl("", "status", "m1", "nosuch", "m2")
	if code != wire.InfoOf(wire.CodeAgentNotFound).Exit || !regexp.MustCompile(`name: +m1\n`).MatchString(out) || !regexp.MustCompile(`name: +m2\n`).MatchString(out) || !strings.Contains(errOut, "nosuch") {
		t.Errorf("status m1 nosuch m2: exit %d\n%s%s\nwant both statuses, the missing one on stderr, exit not_found", code, out, errOut)
	}
	if out := h.ctl(0, "stop", "m1", "m2", "--grace", "1s"); !strings.Contains(out, "m1 exited") || !strings.Contains(out, "m2 exited") {
		t.Errorf("stop m1 m2: %q", out)
	}
	if out := h.ctl(0, "list", "-q", "--status", "running"); out != "m3\n" {
		t.Errorf("running after stop m1 m2: %q, want m3", out)
	}
	// rm --all removes the ended ones only; stop --all stops the rest.
	if out := h.ctl(0, "rm", "--all"); !strings.Contains(out, "m1 removed") || !strings.Contains(out, "m2 removed") || strings.Contains(out, "m3") {
		t.Errorf("rm --all: %q; want m1 and m2 removed, m3 kept", out)
	}
	if out := h.ctl(0, "--json", "stop", "--all"); !strings.Contains(out, `"results":[{`) || !strings.Contains(out, `"name":"m3"`) {
		t.Errorf("stop --all --json: %q", out)
	}
	if _, errOut, code := h.agentctl("", "stop", "m3", "--all"); code != wire.ExitUsage || !strings.Contains(errOut, "not both") {
		t.Errorf("stop NAME --all: exit %d, %q; want a usage error", code, errOut)
	}
	if _, errOut, code := h.agentctl("", "stop"); code != wire.ExitUsage || !strings.Contains(errOut, "--all") {
		t.Errorf("stop with no name: exit %d, %q", code, errOut)
	}
}
