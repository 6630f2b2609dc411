package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The ask oracle: every question is asked of the same program twice, once
// through a session and once in tmux with the same keys, and the answer must
// be what tmux shows a person: the rows between the question's echo and the
// program's next prompt (capture-pane, trailing spaces and blank rows
// removed). Nobody writes an expected answer by hand.

// oracleProgram is a real interactive program and the questions asked of it.
type oracleProgram struct {
	name string
	argv []string
	// prompt is the prompt at the cursor, as a regexp on the cursor's row
	// up to the cursor; "" for none (bc). A group named p marks where the
	// prompt starts when output without a final newline may stand before
	// it on its row: what precedes the group is part of the answer.
	prompt string
	// cont is the program's continuation prompt, as a regexp ("" when it
	// shows none): a person types the next line of a question once the
	// program shows it (or its prompt).
	cont string
	// promptRows is how many rows the prompt takes (0 is 1).
	promptRows int
	paste      bool // the program enables bracketed paste
	// env and files are the program's own settings (a shell's prompt):
	// extra environment, and files written in its home before it starts
	// (HOME is the home's path in them).
	env   []string
	files map[string]string
	asks  []oracleAsk
}

type oracleAsk struct {
	kind, text string
	// pause marks a question whose output pauses for seconds in the middle:
	// the program sleeps (never "this is slow enough", which a fast machine
	// disproves).
	pause bool
	// closeBlock: the question ends with a line break that leaves the
	// program at a continuation prompt, and a person closes the block with
	// an empty line (as pexpect's replwrap does).
	closeBlock bool
	// incomplete: the question leaves the program waiting for the rest of
	// its input; the answer is the rows above the continuation prompt, and
	// the next question (continued) is typed as the rest.
	incomplete, continued bool
}

// oracleCols and oracleRows are the terminal size both sides use.
const oracleCols, oracleRows = 100, 30

func oraclePrograms() []oracleProgram {
	return []oracleProgram{
		{name: "python3", argv: []string{"/usr/bin/python3", "-i", "-q"}, prompt: `^(?:.*[^>])?(?P<p>>>> )$`, cont: `^\.\.\. $`, asks: []oracleAsk{
			{kind: "one line", text: "print(6*7)"},
			{kind: "multi-line answer", text: `print("line 1\nline 2\nline 3")`},
			{kind: "pause", text: "print('a'); import time; time.sleep(3); print('b')", pause: true},
			{kind: "error", text: "1/0"},
			{kind: "multi-line question", text: "x = 6\nprint(x*7)"},
			{kind: "a block", text: "for i in range(3):\n    print('i =', i)\n\n"},
			{kind: "punctuation", text: "print('$')"},
			{kind: "leading blank line", text: `print("\nafter a blank line")`},
			{kind: "in a row 1", text: "print(1)"}, {kind: "in a row 2", text: "print(2)"}, {kind: "in a row 3", text: "print(3)"},
			{kind: "a block, one line break", text: "for i in range(3):\n    print(i)\n", closeBlock: true},
			{kind: "incomplete", text: "x = (1 +", incomplete: true},
			{kind: "continued", text: "2); print(x)", continued: true},
			{kind: "slow first line", text: "import time; time.sleep(2)\nprint('after')", pause: true},
			{kind: "no final newline", text: "print('x', end='')"},
		}},
		{name: "bash", argv: []string{"/bin/bash", "--norc", "--noprofile", "-i"}, prompt: `^(?:.*?)(?P<p>bash-[0-9.]+[$#] )$`, paste: true, asks: []oracleAsk{
			{kind: "no final newline", text: `printf abc`},
			{kind: "one line", text: "echo $((6*7))"},
			{kind: "multi-line answer", text: `printf 'a\nb\nc\n'`},
			{kind: "pause", text: `printf 'a\nb\n'; sleep 3; echo c`, pause: true},
			{kind: "error", text: "ls /nonexistent-dir"},
			{kind: "multi-line question", text: "X=héllo\necho \"$X wörld\""},
			{kind: "punctuation", text: "echo '$'"},
			{kind: "leading blank line", text: `printf '\nafter a blank line\n'`},
			{kind: "in a row 1", text: "echo 1"}, {kind: "in a row 2", text: "echo 2"}, {kind: "in a row 3", text: "echo 3"},
		}},
		{name: "node", argv: []string{"/usr/bin/node"}, prompt: `^> $`, asks: []oracleAsk{
			{kind: "one line", text: "6*7"},
			{kind: "multi-line answer", text: `console.log("a\nb\nc")`},
			{kind: "pause", text: "console.log('a'); await new Promise(r => setTimeout(r, 3500)); console.log('b')", pause: true},
			{kind: "error", text: "null.x"},
			{kind: "multi-line question", text: "const x = 6\nx*7"},
			{kind: "punctuation", text: "'$'"},
			{kind: "leading blank line", text: `console.log("\nafter a blank line")`},
			{kind: "in a row 1", text: "1+0"}, {kind: "in a row 2", text: "1+1"}, {kind: "in a row 3", text: "1+2"},
		}},
		{name: "sqlite3", argv: []string{"/usr/bin/sqlite3"}, prompt: `^sqlite> $`, paste: true, asks: []oracleAsk{
			{kind: "one line", text: "select 6*7;"},
			{kind: "multi-line answer", text: "select 1 union all select 2 union all select 3;"},
			// sqlite3 has no sleep, but its shell's edit() runs an
			// editor and waits for it: the editor here sleeps 3 s.
			{kind: "pause", text: `select 'a'; select length(edit('x', 'sh -c "sleep 3"')); select 'b';`, pause: true},
			{kind: "error", text: "select * from nosuchtable;"},
			{kind: "multi-line question", text: "create table t(x);\ninsert into t values (42);\nselect x from t;"},
			{kind: "punctuation", text: "select '$';"},
			{kind: "leading blank line", text: "select char(10) || 'after a blank line';"},
			{kind: "in a row 1", text: "select 1;"}, {kind: "in a row 2", text: "select 2;"}, {kind: "in a row 3", text: "select 3;"},
		}},
		{name: "ipython3", argv: []string{"/usr/bin/ipython3", "--no-banner", "--colors=NoColor", "--no-confirm-exit", "--HistoryManager.enabled=False", "--no-autoindent"},
			prompt: `^In \[\d+\]: $`, paste: true, asks: []oracleAsk{
				{kind: "one line", text: "6*7"},
				{kind: "multi-line answer", text: `print("a\nb\nc")`},
				{kind: "pause", text: "print('a'); import time; time.sleep(3); print('b')", pause: true},
				{kind: "error", text: "1/0"},
				{kind: "multi-line question", text: "x = 6\nx*7"},
				{kind: "punctuation", text: "print('$')"},
				{kind: "leading blank line", text: `print("\nafter a blank line")`},
				{kind: "in a row 1", text: "1+0"}, {kind: "in a row 2", text: "1+1"}, {kind: "in a row 3", text: "1+2"},
			}},
		{name: "tclsh", argv: []string{"/usr/bin/tclsh"}, prompt: `^% $`, asks: []oracleAsk{
			{kind: "one line", text: "expr 6*7"},
			{kind: "multi-line answer", text: `puts "a\nb\nc"`},
			{kind: "pause", text: "puts a; flush stdout; after 3000; puts b", pause: true},
			{kind: "error", text: "nosuchcommand"},
			{kind: "multi-line question", text: "set x 6\nexpr $x*7"},
			{kind: "punctuation", text: "puts {$}"},
			{kind: "leading blank line", text: `puts "\nafter a blank line"`},
			{kind: "in a row 1", text: "expr 1"}, {kind: "in a row 2", text: "expr 2"}, {kind: "in a row 3", text: "expr 3"},
		}},
		{name: "bc", argv: []string{"/usr/bin/bc", "-q"}, paste: true, asks: []oracleAsk{
			{kind: "one line", text: "6*7"},
			{kind: "multi-line answer", text: `print "a\nb\nc\n"`},
			{kind: "error", text: "1/0"},
			{kind: "multi-line question", text: "scale=3\n10/4"},
			{kind: "punctuation", text: `print "$\n"`},
			{kind: "leading blank line", text: `print "\nafter a blank line\n"`},
		}},
		{name: "irb-simple", argv: []string{"/usr/bin/irb", "--simple-prompt", "--nocolorize"}, prompt: `^(?:.*[^>?])?(?P<p>>> )$`, cont: `^\?> +$`, asks: []oracleAsk{
			{kind: "one line", text: "6*7"},
			{kind: "multi-line answer", text: `puts "a\nb\nc"`},
			{kind: "pause", text: "puts 'a'; sleep 3; puts 'b'", pause: true},
			{kind: "error", text: "nil.x"},
			{kind: "multi-line question", text: "x = 6\nx*7"},
			{kind: "punctuation", text: "'$'"},
			{kind: "in a row 1", text: "1+0"}, {kind: "in a row 2", text: "1+1"},
			{kind: "incomplete", text: "(1 +", incomplete: true},
			{kind: "continued", text: "2)", continued: true},
			{kind: "no final newline", text: `print "..."`},
		}},
		{name: "irb", argv: []string{"/usr/bin/irb", "--nocolorize"}, prompt: `^irb\(main\):\d+:\d+> $`, asks: []oracleAsk{
			{kind: "one line", text: "6*7"},
			{kind: "multi-line answer", text: `puts "a\nb\nc"`},
			{kind: "pause", text: "puts 'a'; sleep 3; puts 'b'", pause: true},
			{kind: "in a row 1", text: "1+0"}, {kind: "in a row 2", text: "1+1"},
		}},
		{name: "lua", argv: []string{"/usr/bin/lua5.4"}, prompt: `^(?:.*[^>])?(?P<p>> )$`, cont: `^>> $`, asks: []oracleAsk{
			{kind: "one line", text: "print(6*7)"},
			{kind: "multi-line answer", text: `print("a\nb\nc")`},
			{kind: "pause", text: "print('a') os.execute('sleep 3') print('b')", pause: true},
			{kind: "error", text: "error('boom')"},
			{kind: "in a row 1", text: "print(1)"}, {kind: "in a row 2", text: "print(2)"},
			{kind: "no final newline", text: `do io.write("...") end`},
			{kind: "incomplete", text: "x = 1 +", incomplete: true},
			{kind: "continued", text: "2 print(x)", continued: true},
		}},
		{name: "guile", argv: []string{"/usr/bin/guile", "--no-auto-compile"}, prompt: `^scheme@\(guile-user\)(?: \[\d+\])?> $`, asks: []oracleAsk{
			{kind: "one line", text: "(* 6 7)"},
			{kind: "multi-line answer", text: `(display "a\nb\nc\n")`},
			{kind: "pause", text: `(begin (display "a\n") (sleep 3) (display "b\n"))`, pause: true},
			{kind: "in a row 1", text: "(+ 1 0)"}, {kind: "in a row 2", text: "(+ 1 1)"},
			{kind: "incomplete", text: "(+ 1", incomplete: true},
			{kind: "continued", text: "2)", continued: true},
		}},
		{name: "ocaml", argv: []string{"/usr/bin/ocaml"}, prompt: `^# $`, asks: []oracleAsk{
			{kind: "one line", text: "6*7;;"},
			{kind: "multi-line answer", text: `print_string "a\nb\nc\n";;`},
			{kind: "pause", text: `print_endline "a"; ignore (Sys.command "sleep 3"); print_endline "b";;`, pause: true},
			{kind: "error", text: "1/0;;"},
			{kind: "slow first line", text: "ignore (Sys.command \"sleep 2\");;\n1;;", pause: true},
			{kind: "in a row 1", text: "1;;"}, {kind: "in a row 2", text: "2;;"},
			{kind: "incomplete", text: "(1 +", incomplete: true},
			{kind: "continued", text: "2);;", continued: true},
		}},
		{name: "zsh-rprompt", argv: []string{"/usr/bin/zsh"}, prompt: `^[%#] $`, paste: true,
			env:   []string{"ZDOTDIR=HOME"},
			files: map[string]string{".zshrc": "PS1='%# '\nRPROMPT='[%*]'\n"}, asks: []oracleAsk{
				{kind: "one line", text: "echo $((6*7))"},
				{kind: "multi-line answer", text: `printf 'a\nb\nc\n'`},
				{kind: "pause", text: `echo a; sleep 3; echo b`, pause: true},
				{kind: "error", text: "ls /nonexistent-dir"},
				{kind: "in a row 1", text: "echo 1"}, {kind: "in a row 2", text: "echo 2"},
			}},
		{name: "fish", argv: []string{"/usr/bin/fish", "--no-config"}, prompt: `[#>] $`, paste: true, asks: []oracleAsk{
			{kind: "one line", text: "math 6 \\* 7"},
			{kind: "multi-line answer", text: `printf 'a\nb\nc\n'`},
			{kind: "pause", text: `echo a; sleep 3; echo b`, pause: true},
			{kind: "in a row 1", text: "echo 1"}, {kind: "in a row 2", text: "echo 2"},
		}},
		{name: "bash-2line", argv: []string{"/bin/bash", "--norc", "--noprofile", "-i"}, prompt: `^[$#] $`, promptRows: 2, paste: true,
			env: []string{"PS1=\\w\\n\\$ "}, asks: []oracleAsk{
				{kind: "one line", text: "echo $((6*7))"},
				{kind: "multi-line answer", text: `printf 'a\nb\nc\n'`},
				{kind: "pause", text: `echo a; sleep 3; echo b`, pause: true},
				{kind: "empty answer", text: "true"},
				{kind: "in a row 1", text: "echo 1"}, {kind: "in a row 2", text: "echo 2"},
				{kind: "incomplete", text: "echo 'a", incomplete: true},
				{kind: "continued", text: "b'", continued: true},
			}},
		{name: "gdb", argv: []string{"/usr/bin/gdb", "-q", "-nx"}, prompt: `^\(gdb\) $`, paste: true, asks: []oracleAsk{
			{kind: "one line", text: "print 6*7"},
			{kind: "multi-line answer", text: `printf "a\nb\nc\n"`},
			{kind: "error", text: "print nosuchsymbol"},
			{kind: "punctuation", text: `echo $\n`},
			{kind: "leading blank line", text: `echo \nafter a blank line\n`},
		}},
	}
}

func TestAskOracle(t *testing.T) {
	if raceEnabled {
		t.Skip("slow under the race detector; make test runs it without")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed; .ci/run installs it")
	}
	t.Parallel()
	env := newTestEnv(t)
	m := env.manager(t)
	for _, prog := range oraclePrograms() {
		t.Run(prog.name, func(t *testing.T) {
			if _, err := os.Stat(prog.argv[0]); err != nil {
				t.Skipf("%s is not installed; .ci/run installs it", prog.argv[0])
			}
			t.Parallel()
			// Each side has a home of its own: the programs keep files there.
			progEnv := func(home string) []string {
				env := []string{"HOME=" + home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "IPYTHONDIR=" + filepath.Join(home, ".ipython"),
					"PATH=/usr/local/bin:/usr/bin:/bin", "NODE_NO_WARNINGS=1", "TERM=xterm-256color"}
				for _, kv := range prog.env {
					env = append(env, strings.ReplaceAll(kv, "=HOME", "="+home))
				}
				return env
			}
			home, tmuxHome := t.TempDir(), t.TempDir()
			for _, h := range []string{home, tmuxHome} {
				for f, text := range prog.files {
					if err := os.WriteFile(filepath.Join(h, f), []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			ctx := testCtx(t, 5*time.Minute)
			name := "o-" + strings.ReplaceAll(prog.name, "3", "")
			if _, err := m.Spawn(ctx, SpawnRequest{Name: name, Argv: prog.argv, Cwd: home, Env: progEnv(home), Cols: oracleCols, Rows: oracleRows}); err != nil {
				t.Fatal(err)
			}
			tm := startTmux(t, prog, progEnv(tmuxHome), tmuxHome)
			var promptRE *regexp.Regexp
			if prog.prompt != "" {
				promptRE = regexp.MustCompile(prog.prompt)
				// The first question waits, as a person would, until the
				// program has shown its prompt: sixteen programs and their
				// tmux twins start at once on two cores, and judging a
				// program still starting by its look (a guess) is what
				// issue 26 replaces with knowing it reads its terminal.
				gate := "(?m)" + strings.TrimSuffix(strings.TrimSuffix(prog.prompt, ")$"), " $")
				if strings.Contains(prog.prompt, "(?P<p>") {
					gate = "(?m)" + prog.prompt[strings.Index(prog.prompt, "(?P<p>")+6:len(prog.prompt)-3]
				}
				if _, err := m.Wait(ctx, WaitRequest{Name: name, Until: gate, Timeout: 60 * time.Second}); err != nil {
					t.Fatalf("%s never showed its prompt: %v", prog.name, err)
				}
			}
			for _, q := range prog.asks {
				var wg sync.WaitGroup
				var want string
				var oerr error
				wg.Add(1)
				go func() {
					defer wg.Done()
					want, oerr = tm.ask(q, promptRE, prog)
				}()
				res, err := m.Ask(ctx, AskRequest{Name: name, Text: q.text, Timeout: 60 * time.Second, FallbackIdle: 1500 * time.Millisecond})
				wg.Wait()
				if oerr != nil {
					t.Fatalf("%s: tmux: %v", q.kind, oerr)
				}
				if err != nil {
					t.Fatalf("%s: ask %q: %v", q.kind, q.text, err)
				}
				if res.Answer != want {
					t.Errorf("%s: ask %q:\n got %q (%s)\nwant %q (tmux)", q.kind, q.text, res.Answer, res.Reason, want)
				}
				t.Logf("%s: %q -> %q (%s, %s)", q.kind, q.text, res.Answer, res.Reason, res.Elapsed.Round(time.Millisecond))
				wantReason := ReasonPrompt
				switch {
				case q.incomplete:
					wantReason = ReasonIncomplete
				case promptRE == nil && res.ReadySignal != SignalRead:
					wantReason = ReasonIdle
				}
				if res.Continued != q.continued {
					t.Errorf("%s: ask %q says continued %v, want %v", q.kind, q.text, res.Continued, q.continued)
				}
				if res.Reason != wantReason {
					t.Errorf("%s: ask %q ended by %s, want %s", q.kind, q.text, res.Reason, wantReason)
				}
				if q.pause && res.Elapsed < 2*time.Second {
					t.Errorf("%s: ask %q returned after %s, before the pause ended", q.kind, q.text, res.Elapsed)
				}
			}
		})
	}
}

// tmuxPane is one program run by its own tmux server.
type tmuxPane struct {
	t    testing.TB
	sock string
	// tty is the pane's terminal (its slave side), whose modes say
	// whether the program edits its own lines; editsLines is set once it
	// was seen out of canonical mode.
	tty        string
	editsLines bool
}

func startTmux(t testing.TB, prog oracleProgram, env []string, dir string) *tmuxPane {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "tm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	conf := filepath.Join(sockDir, "conf")
	os.WriteFile(conf, []byte("set -g default-terminal xterm-256color\nset -g history-limit 50000\nset -g status off\n"), 0o600)
	p := &tmuxPane{t: t, sock: filepath.Join(sockDir, "s")}
	args := []string{"new-session", "-d", "-x", strconv.Itoa(oracleCols), "-y", strconv.Itoa(oracleRows), "-c", dir}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "--")
	args = append(args, prog.argv...)
	cmd := exec.Command("tmux", append([]string{"-u", "-S", p.sock, "-f", conf}, args...)...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	tty, err := p.run("display-message", "-p", "#{pane_tty}")
	if err != nil {
		t.Fatal(err)
	}
	p.tty = strings.TrimSpace(tty)
	return p
}

// modes reads the pane terminal's line discipline: whether it is canonical
// and echoes, and how many typed bytes the program has not read.
func (p *tmuxPane) modes() (canonical, echo bool, unread int, err error) {
	f, err := os.OpenFile(p.tty, os.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, false, 0, err
	}
	defer f.Close()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return false, false, 0, err
	}
	unread, err = unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		return false, false, 0, err
	}
	return tio.Lflag&unix.ICANON != 0, tio.Lflag&unix.ECHO != 0, unread, nil
}

// enter presses Enter the way a person does: once the program has taken
// what was typed. A program with a line editor of its own (irb's reline,
// readline) leaves raw mode while it works on a key and goes back to it
// to read the next; an Enter that arrives in between is echoed by the
// kernel as well as by the editor, and the question shows twice (issue
// 26, cause 1), which no person sees. So for such a program (seen out of
// canonical mode at least once) Enter waits until the terminal is raw
// again with nothing unread: the editor waits in its read. A program that
// leaves line editing to the kernel gets Enter at once.
func (p *tmuxPane) enter() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		canonical, echo, unread, err := p.modes()
		if err != nil {
			return err
		}
		if !canonical {
			p.editsLines = true
		}
		if !p.editsLines || !canonical && !echo && unread == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the program did not go back to reading its terminal in 30 s (canonical %v, echo %v, %d bytes unread)", canonical, echo, unread)
		}
		time.Sleep(5 * time.Millisecond) // polling the terminal's modes, with a deadline
	}
	_, err := p.run("send-keys", "Enter")
	return err
}

func (p *tmuxPane) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-u", "-S", p.sock}, args...)...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, ee.Stderr)
		}
		return "", err
	}
	return string(out), nil
}

// paneState is what tmux shows: every row (history, then the screen) and
// the cursor's absolute row and its row's text up to the cursor.
type paneState struct {
	rows   []string
	cursor int
	before string
}

func (p *tmuxPane) state() (paneState, error) {
	info, err := p.run("display-message", "-p", "#{history_size} #{cursor_x} #{cursor_y}")
	if err != nil {
		return paneState{}, err
	}
	var hist, cx, cy int
	fmt.Sscan(info, &hist, &cx, &cy)
	out, err := p.run("capture-pane", "-p", "-S", "-", "-E", "-")
	if err != nil {
		return paneState{}, err
	}
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	st := paneState{rows: rows, cursor: hist + cy}
	// The cursor's row with its spaces: capture-pane -N keeps them.
	line, err := p.run("capture-pane", "-p", "-N", "-S", strconv.Itoa(cy), "-E", strconv.Itoa(cy))
	if err != nil {
		return paneState{}, err
	}
	// Cells never written read as nothing: pad to the cursor.
	r := []rune(strings.TrimSuffix(line, "\n"))
	for len(r) < cx {
		r = append(r, ' ')
	}
	st.before = string(r[:cx])
	return st, nil
}

// settled waits until the pane has not changed for quiet and cond holds.
func (p *tmuxPane) settled(quiet, limit time.Duration, cond func(paneState) bool) (paneState, error) {
	deadline := time.Now().Add(limit)
	var last string
	since := time.Now()
	for {
		st, err := p.state()
		if err != nil {
			return st, err
		}
		if canonical, _, _, err := p.modes(); err == nil && !canonical {
			p.editsLines = true
		}
		key := strings.Join(st.rows, "\n") + "\x00" + strconv.Itoa(st.cursor) + st.before
		if key != last {
			last, since = key, time.Now()
		}
		if time.Since(since) >= quiet && (cond == nil || cond(st)) {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("the pane did not settle in %s; it shows %q with %q at the cursor", limit, st.rows[max(0, len(st.rows)-5):], st.before)
		}
		time.Sleep(20 * time.Millisecond) // polling tmux, with a deadline
	}
}

// promptAt reports whether the cursor's row (up to the cursor) shows the
// prompt, and the text before the prompt on that row (output that did not
// end its line), which is part of the answer.
func promptAt(prompt *regexp.Regexp, before string) (prefix string, ok bool) {
	if prompt == nil {
		return "", true
	}
	m := prompt.FindStringSubmatchIndex(before)
	if m == nil {
		return "", false
	}
	if g := prompt.SubexpIndex("p"); g > 0 && m[2*g] > 0 {
		return before[:m[2*g]], true
	}
	return "", true
}

// ask types text as a person would (one bracketed paste, or line by line
// with Enter, each line once the program shows its prompt or continuation
// prompt again) and returns the rows between the echo and the next prompt
// (the prompt's rows left out, text before it on its row kept); for an
// incomplete question, the rows above the continuation prompt.
func (p *tmuxPane) ask(q oracleAsk, prompt *regexp.Regexp, prog oracleProgram) (string, error) {
	atPrompt := func(st paneState) bool { _, ok := promptAt(prompt, st.before); return ok }
	var cont *regexp.Regexp
	if prog.cont != "" {
		cont = regexp.MustCompile(prog.cont)
	}
	ready := func(st paneState) bool { return atPrompt(st) || cont != nil && cont.MatchString(st.before) }
	before := atPrompt
	if q.continued {
		before = nil // the program waits for the rest of the last input
	}
	if _, err := p.settled(300*time.Millisecond, 30*time.Second, before); err != nil {
		return "", fmt.Errorf("before the question: %w", err)
	}
	text := strings.TrimSuffix(q.text, "\n")
	last := text
	if prog.paste {
		cmd := exec.Command("tmux", "-u", "-S", p.sock, "load-buffer", "-b", "q", "-")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("load-buffer: %v: %s", err, out)
		}
		if _, err := p.run("paste-buffer", "-p", "-d", "-b", "q"); err != nil {
			return "", err
		}
	} else {
		lines := strings.Split(text, "\n")
		for _, l := range lines[:len(lines)-1] {
			if err := p.keys(l, true); err != nil {
				return "", err
			}
			if _, err := p.settled(300*time.Millisecond, 30*time.Second, ready); err != nil {
				return "", err
			}
		}
		last = lines[len(lines)-1]
		if err := p.keys(last, false); err != nil {
			return "", err
		}
	}
	st, err := p.settled(300*time.Millisecond, 30*time.Second, nil)
	if err != nil {
		return "", fmt.Errorf("echo: %w", err)
	}
	echoEnd := st.cursor
	if err := p.enter(); err != nil {
		return "", err
	}
	if q.closeBlock {
		if _, err := p.settled(300*time.Millisecond, 30*time.Second, func(st paneState) bool { return st.cursor > echoEnd }); err != nil {
			return "", err
		}
		if err := p.enter(); err != nil {
			return "", err
		}
	}
	quiet := 500 * time.Millisecond
	if prompt == nil || q.incomplete {
		quiet = 2 * time.Second
	}
	done := func(st paneState) bool { return st.cursor > echoEnd && (q.incomplete || atPrompt(st)) }
	st, err = p.settled(quiet, 60*time.Second, done)
	if err != nil {
		return "", fmt.Errorf("answer: %w", err)
	}
	end := st.cursor
	prefix := ""
	switch {
	case q.incomplete:
	case prompt == nil && strings.TrimSpace(st.before) == "":
		end = len(st.rows)
	default:
		prefix, _ = promptAt(prompt, st.before)
		end -= max(prog.promptRows, 1) - 1
	}
	var ans []string
	if echoEnd+1 < end && end <= len(st.rows) {
		ans = append(ans, st.rows[echoEnd+1:end]...)
	}
	if prefix != "" {
		ans = append(ans, prefix)
	}
	for len(ans) > 0 && strings.TrimSpace(ans[len(ans)-1]) == "" {
		ans = ans[:len(ans)-1]
	}
	return strings.Join(ans, "\n"), nil
}

func (p *tmuxPane) keys(text string, enter bool) error {
	if strings.HasSuffix(text, ";") {
		// tmux ends a command at an argument ending in ";" unless escaped.
		text = text[:len(text)-1] + `\;`
	}
	if text != "" {
		if _, err := p.run("send-keys", "-l", "--", text); err != nil {
			return err
		}
	}
	if enter {
		return p.enter()
	}
	return nil
}
