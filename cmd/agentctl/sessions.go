package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

func spawnVerb() command {
	var o spawnOptions
	return verb[*wire.SessionStatus]{
		use: "spawn NAME " + spawnUsage + " -- COMMAND [ARGS...]", summary: "start a program in a new session",
		long: "Start COMMAND in a new session called NAME, in a pseudo-terminal of its own.\n\n" +
			"The program runs in the current directory, as a shell would run it; --cwd names another,\n" +
			"relative to the current one. Names are [a-z0-9][a-z0-9._-]{0,62}.\n\n" +
			"Under a systemd user manager the session runs as a unit of its own, agentd-session-NAME.service,\n" +
			"with the rights of a program started from your terminal; --memory-max and --cpu-weight bound it.\n\n" +
			"--worktree runs the program in a git worktree of its own, made from the repository the directory\n" +
			"is in, on a new branch named after the session (or BRANCH: an existing branch checked out nowhere\n" +
			"else, or a new one), under agentd's state directory or --worktree-dir. agentctl diff NAME shows its\n" +
			"changes; rm removes it when it holds nothing unmerged.\n\n" +
			"--restart says when agentd starts the program again: no (the default, or the config's\n" +
			"session_restart), on-reboot (when agentd starts after the machine rebooted under the session)\n" +
			"or always (also when the program exits non-zero: 1 s back-off doubling to 60 s, failed as a\n" +
			"restart loop after 5 restarts in 10 minutes). A restart runs the same command in the same\n" +
			"directory with the same environment and size; Claude Code, Codex and Gemini CLI resume their\n" +
			"last conversation. agentctl restart NAME does it by hand.",
		example:      "  agentctl spawn py -- python3 -i\n  agentctl spawn build --cwd ../proj --env CI=1 -- make test\n  agentctl spawn fix --worktree -- claude\n  agentctl spawn fix2 --worktree fix-2 --worktree-dir ~/wt/fix2 -- codex",
		args:         cobra.ArbitraryArgs,
		flags:        o.define,
		complete:     completeCommand,
		flagComplete: spawnFlagsComplete,
		run: func(ctx context.Context, e *env, args []string) (*wire.SessionStatus, error) {
			p, err := o.params(e, args, "spawn")
			if err != nil {
				return nil, err
			}
			defer e.progress("starting " + shellJoin(p.Argv) + " in session " + p.Name)()
			return e.client().Spawn(ctx, p)
		},
		human: func(w io.Writer, s *wire.SessionStatus) error {
			if s.Unit != "" {
				fmt.Fprintf(w, "%s %s (pid %d, unit %s)\n", s.Name, s.Status, s.ProgramPID, s.Unit)
				return nil
			}
			fmt.Fprintf(w, "%s %s (pid %d)\n", s.Name, s.Status, s.ProgramPID)
			return nil
		},
	}
}

// spawnOptions are the flags of spawn and run: where and how the program
// starts.
type spawnOptions struct {
	cwd, size, memoryMax string
	envs                 []string
	cpuWeight            int
	desktop              string
	keepDesktop          bool
	worktree             string
	worktreeDir          string
	agent                string
	restart              string
	hooks                bool
	flags                *pflag.FlagSet // where the flags were defined: was --hooks given?
}

// spawnUsage is spawnOptions' part of the usage line.
const spawnUsage = "[--cwd DIR] [--env K=V]... [--size COLSxROWS] [--memory-max SIZE] [--cpu-weight N] [--desktop NAME|new [--keep-desktop]] [--worktree [BRANCH] [--worktree-dir DIR]] [--restart no|on-reboot|always] [--agent claude|codex|gemini|none] [--hooks=false]"

// spawnFlagsComplete says what spawnOptions' flags name, for completion.
var spawnFlagsComplete = map[string]completeKind{"cwd": completeDirs, "env": completeNone, "size": completeNone, "restart": completeRestart}

// define defines the flags on fs.
func (o *spawnOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.cwd, "cwd", "", "working directory (default: the current one)")
	fs.StringArrayVar(&o.envs, "env", nil, "K=V, repeatable")
	fs.StringVar(&o.size, "size", "", "terminal size COLSxROWS (default 120x40)")
	fs.StringVar(&o.memoryMax, "memory-max", "", "memory the session may use, e.g. 4G or 512M (its unit's MemoryMax; needs a systemd user manager)")
	fs.IntVar(&o.cpuWeight, "cpu-weight", 0, "the session's CPU share, 1 to 10000; 100 is every unit's (needs a systemd user manager)")
	spawnDesktopFlags(fs, &o.desktop, &o.keepDesktop)
	fs.StringVar(&o.worktree, "worktree", "", "run in a git worktree of its own, on a new branch named after the session or on `BRANCH`")
	fs.Lookup("worktree").NoOptDefVal = worktreeOwnBranch
	fs.StringVar(&o.worktreeDir, "worktree-dir", "", "with --worktree: the worktree's directory (default: under agentd's state directory)")
	fs.StringVar(&o.agent, "agent", "", "the agent CLI the program is, for its state: claude, codex, gemini or none (default: from the command)")
	fs.StringVar(&o.restart, "restart", "", "when to start the program again: no, on-reboot or always (default: the config's session_restart, no)")
	o.flags = fs
	fs.BoolVar(&o.hooks, "hooks", true, "wire an agent CLI's hooks to agentd for its state (--hooks=false: the screen alone; default: the config's hooks, true)")
}

// params reads the command line, NAME -- COMMAND and the flags, into a
// spawn's parameters.
func (o *spawnOptions) params(e *env, args []string, verbName string) (wire.SpawnParams, error) {
	pos, command := worktreeArgs(e, args, &o.worktree)
	p, err := spawnParamsOf(e, pos, command, o.cwd, o.size, o.envs, verbName)
	if err != nil {
		return p, err
	}
	if err := worktreeParams(&p, e, o.worktree, o.worktreeDir); err != nil {
		return p, err
	}
	p.CPUWeight, p.Desktop, p.KeepDesktop, p.Agent = o.cpuWeight, o.desktop, o.keepDesktop, o.agent
	// Said only when given: otherwise the config's hooks decides.
	if o.flags != nil && o.flags.Changed("hooks") {
		p.Hooks, p.NoHooks = "on", !o.hooks
		if !o.hooks {
			p.Hooks = "off"
		}
	}
	if o.memoryMax != "" {
		if p.MemoryMax, err = parseBytes(o.memoryMax); err != nil {
			return p, usagef("--memory-max %q: %v", o.memoryMax, err)
		}
	}
	if e.cmd.Flags().Changed("cpu-weight") && (o.cpuWeight < 1 || o.cpuWeight > 10000) {
		return p, usagef("--cpu-weight %d is out of range; give 1 to 10000 (100 is the default share)", o.cpuWeight)
	}
	if o.restart != "" {
		if !slices.Contains(wire.RestartPolicies, wire.RestartPolicy(o.restart)) {
			return p, usagef("--restart %q is not a restart policy; give no, on-reboot or always", o.restart)
		}
		p.Restart = wire.RestartPolicy(o.restart)
	}
	return p, nil
}

// parseBytes reads a size as systemd writes one: a number of bytes with an
// optional K, M, G or T (powers of 1024).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	num := strings.TrimSuffix(strings.ToUpper(s), "B")
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			num = num[:n-1]
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, errors.New("not a size; give a positive number of bytes with K, M, G or T, such as 4G")
	}
	return v * mult, nil
}

// spawnParamsOf reads NAME -- COMMAND, split at --, and the flags every
// spawn has.
func spawnParamsOf(e *env, pos, command []string, cwd, size string, envs []string, verbName string) (wire.SpawnParams, error) {
	if len(command) == 0 && len(pos) > 1 {
		// spawn x sleep 10: the command was meant, without its --.
		return wire.SpawnParams{}, usagef("%s takes its command after --: agentctl %s %s -- %s", verbName, verbName, safeText(pos[0]), safeText(shellJoin(pos[1:])))
	}
	if len(pos) != 1 || len(command) == 0 {
		return wire.SpawnParams{}, usagef("usage: %s; see agentctl %s --help", usageLine(e.cmd), verbName)
	}
	dir, err := spawnDir(cwd)
	if err != nil {
		return wire.SpawnParams{}, err
	}
	p := wire.SpawnParams{Name: pos[0], Argv: command, Cwd: dir}
	if size != "" {
		if p.Cols, p.Rows, err = parseSize(size); err != nil {
			return wire.SpawnParams{}, err
		}
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return wire.SpawnParams{}, usagef("--env %q is not K=V", kv)
		}
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		p.Env[k] = v
	}
	return p, nil
}

// spawnDir is the absolute directory a spawn runs in: the caller's own by
// default, as tmux new-session and docker exec -w do, and a relative --cwd
// taken from there. The daemon's directory means nothing to the caller, so
// the path is resolved here and sent absolute.
func spawnDir(cwd string) (string, error) {
	if cwd != "" && filepath.IsAbs(cwd) {
		return cwd, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		// Most often a directory deleted under the shell: the program
		// could not start there, as spawn_failed says for any cwd.
		return "", wire.Errorf(wire.CodeSpawnFailed, "the current directory is gone (%v): the program cannot start in it; cd to a directory that exists, or give --cwd with an absolute path", err)
	}
	return filepath.Join(wd, cwd), nil
}

func askVerb() command {
	var p wire.AskParams
	var idle, lock time.Duration
	return verb[*wire.AskResult]{
		use:     "ask NAME TEXT|- [--until REGEXP] [--idle DURATION] [--lock-timeout DURATION] [--via auto|pty|channel]",
		summary: "type a question into a session and print the answer (TEXT - reads stdin)",
		long: "Type TEXT into the session's program once it waits for input, and print what it answers: the\n" +
			"screen between the question and the next prompt. Where the kernel can tell (the program is\n" +
			"blocked reading its terminal), the ask types only then and ends the moment the program waits\n" +
			"again, whatever its prompt looks like; elsewhere it goes by the look of the prompt and silence.\n" +
			"A question that leaves the program waiting for the rest of an input (an open bracket or quote)\n" +
			"ends at once with the answer so far and a note on stderr; the next ask is typed as that rest.\n" +
			"A question ending in a line break that leaves a block open gets the empty line that closes it.\n" +
			"--timeout (default 10m) bounds the wait; a timeout prints the partial answer and the last lines\n" +
			"of the screen on stderr.",
		example:       "  agentctl ask py 'print(6*7)'\n  agentctl --timeout 10m ask sh1 'make test'\n  agentctl ask py 'import time; time.sleep(3); print(\"ok\")' --until '^ok'\n\n  --until's ^ and $ match at each line's start and end (agentctl adds (?m)); \\A and \\z anchor the whole text.",
		args:          exactArgs(2),
		complete:      completeSession,
		serverTimeout: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Until, "until", "", "stop collecting when this regular expression matches")
			fs.Func("idle", "also end the ask after this much quiet (default: at the program's prompt)", positiveDuration(&idle))
			durationVar(fs, &lock, "lock-timeout", "wait this long for another ask on the session")
			fs.StringVar((*string)(&p.Via), "via", "", "auto, pty or channel")
		},
		run: func(ctx context.Context, e *env, args []string) (*wire.AskResult, error) {
			var err error
			if p.Text, err = e.stdinText(args[1]); err != nil {
				return nil, err
			}
			p.Name, p.IdleMS, p.LockTimeoutMS = args[0], ms(idle), ms(lock)
			p.Until = lineAnchors(p.Until)
			// The daemon's deadline is --timeout, so it answers timeout with
			// what it saw instead of the client hanging up first.
			p.TimeoutMS = ms(e.timeout)
			// The ask first waits for the prompt, then types, then
			// collects: the spinner says both.
			what := "waiting for " + p.Name + "'s prompt, then its answer"
			if p.Until != "" {
				what += " (until " + p.Until + ")"
			}
			defer e.progress(what)()
			return e.client().Ask(ctx, p)
		},
		human: func(w io.Writer, r *wire.AskResult) error {
			fmt.Fprintln(w, strings.TrimRight(r.Answer, "\n"))
			if r.Reason == wire.AskReasonIncomplete {
				fmt.Fprintf(os.Stderr, "agentctl: %s waits for the rest of its input (at %s); the next ask is typed as that rest, or send ctrl+c to drop it\n",
					safeText(r.Name), safeText(strconv.Quote(r.Prompt)))
			}
			return nil
		},
	}
}

func listVerb() command {
	var status []string
	var quiet bool
	return verb[*wire.ListResult]{
		use: "list [-q] [--status STATUS[,STATUS]]...", summary: "list sessions", quick: true,
		long: "List sessions in natural order of their names (w-2 before w-10). The table fits $COLUMNS (or\n" +
			"the terminal): the command, last, is cut to fit. -q prints only the names, one a line, for\n" +
			"scripts: agentctl list -q --status exited | xargs -r -n1 agentctl rm.\n\n" +
			"Statuses: starting, running, exiting, exited, failed, destroying, destroyed, broken (its record\n" +
			"is damaged), unresponsive (its worker has not answered for the time shown; agentctl stop\n" +
			"--force NAME ends it).",
		flags: func(fs *pflag.FlagSet) {
			// A slice: repeated --status flags add up, like the comma form.
			fs.StringSliceVar(&status, "status", nil, "only these statuses, comma-separated or repeated (running,exited)")
			fs.BoolVarP(&quiet, "quiet", "q", false, "print only the names")
		},
		flagComplete: map[string]completeKind{"status": completeStatus},
		run: func(ctx context.Context, e *env, args []string) (*wire.ListResult, error) {
			var p wire.ListParams
			for _, s := range status {
				st := wire.Status(strings.TrimSpace(s))
				if !slices.Contains(wire.Statuses, st) {
					return nil, usagef("--status %q: not a status; the statuses are %s", s, statusNames())
				}
				if !slices.Contains(p.Status, st) {
					p.Status = append(p.Status, st)
				}
			}
			r, err := e.client().List(ctx, p)
			if err != nil {
				return nil, err
			}
			r.Sessions = naturalSorted(r.Sessions)
			if quiet && !e.json {
				for _, s := range r.Sessions {
					fmt.Fprintln(e.stdout, safeText(s.Name))
				}
				return nil, errPrinted
			}
			return r, nil
		},
		human: func(w io.Writer, r *wire.ListResult) error {
			return printSessions(w, r.Sessions, outputWidth(w), time.Now())
		},
	}
}

// processesLive says whether a session in status st still has its
// program and worker: an ended session's pids are history, and may be
// other programs' by now.
func processesLive(st wire.Status) bool {
	switch st {
	case wire.StatusRunning, wire.StatusStarting, wire.StatusExiting, wire.StatusUnresponsive:
		return true
	}
	return false
}

func statusNames() string {
	var names []string
	for _, s := range wire.Statuses {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// printSessions writes list's table. The command is the last column and the
// one cut to fit width (0: no limit): the other columns are short and say
// which session it is, so they are kept whole, as ps does; below about 60
// columns PID, ACTIVE, AGE and EXIT are left out, in that order. STATE is
// what an agent CLI does (working, waiting, needs_approval,
// needs_attention), or whether any other running program waits for input
// (ready) or not (busy).
func printSessions(w io.Writer, rows []wire.SessionRow, width int, now time.Time) error {
	table := [][]string{{"NAME", "STATUS", "STATE", "PID", "AGE", "ACTIVE", "EXIT", "COMMAND"}}
	for _, s := range rows {
		pid, active := "-", "-"
		// An ended session's pid is history, and may be another
		// program's by now.
		if s.PID > 0 && processesLive(s.Status) {
			pid = fmt.Sprint(s.PID)
		}
		status := string(s.Status)
		if s.Status == wire.StatusUnresponsive {
			// How long it has been silent says whether it is a hiccup or
			// a hang.
			status += " " + ago(time.Duration(s.SilentMS)*time.Millisecond)
		}
		if s.Restarts > 0 {
			status += fmt.Sprintf(" (restarted %d)", s.Restarts)
		}
		if !s.LastActivity.IsZero() {
			active = ago(now.Sub(s.LastActivity)) + " ago"
		}
		// Every cell escaped (safe.go) before the widths are measured.
		state := "-"
		switch {
		case s.State != "":
			state = safeText(s.State)
		case s.Input != "":
			state = safeText(string(s.Input))
		}
		table = append(table, []string{safeText(s.Name), safeText(status), state, pid, ago(time.Duration(s.AgeMS) * time.Millisecond), active,
			safeText(exitText(s.Termination, s.ExitCode, s.Signal)), shellJoin(s.Command)})
	}
	const gap = 2
	last := len(table[0]) - 1
	widths := make([]int, last)
	for _, row := range table {
		for i, cell := range row[:last] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	// On a narrow terminal, the columns a person needs least to tell
	// sessions apart go first, until the command has room to be read:
	// a table wider than the terminal wraps into noise.
	keep := make([]bool, last)
	prefix := 0
	for i, wd := range widths {
		keep[i] = true
		prefix += wd + gap
	}
	const minCommand = 16
	for _, drop := range []int{3, 5, 4, 6} { // PID, ACTIVE, AGE, EXIT
		if width <= 0 || prefix+minCommand <= width {
			break
		}
		keep[drop] = false
		prefix -= widths[drop] + gap
	}
	// Still too wide: a long name is cut too (to no fewer than 16
	// columns), rather than pushing the status and the command out.
	nameWidth := widths[0]
	if over := prefix + minCommand - width; width > 0 && over > 0 && widths[0] > 16 {
		nameWidth = max(16, widths[0]-over)
		prefix -= widths[0] - nameWidth
	}
	var b strings.Builder
	for _, row := range table {
		for i, cell := range row[:last] {
			if !keep[i] {
				continue
			}
			wd := widths[i]
			if i == 0 {
				cell, wd = elide(cell, nameWidth), nameWidth
			}
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", wd-utf8.RuneCountInString(cell)+gap))
		}
		cmd := row[last]
		if width > 0 {
			cmd = elide(cmd, max(width-prefix, len("COMMAND")))
		}
		b.WriteString(cmd)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// elide cuts s to n runes, marking the cut with "…"; n ≤ 0 is no limit.
func elide(s string, n int) string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// outputWidth is how wide a table on w may be: $COLUMNS when set, else the
// terminal's width, else no limit (a pipe keeps every character).
func outputWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := unwrapFile(w); ok {
		if cols, _ := windowSize(f); cols > 0 {
			return cols
		}
	}
	return 0
}

func statusVerb() command {
	var all bool
	return verb[*manyResult[*wire.SessionStatus]]{
		use: "status NAME... [--all]", summary: "everything about a session (several names, or --all, one after another)", quick: true,
		args: cobra.ArbitraryArgs, complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&all, "all", false, "every session")
		},
		run: func(ctx context.Context, e *env, args []string) (*manyResult[*wire.SessionStatus], error) {
			names, err := e.targets(ctx, "status", args, all, func(wire.SessionRow) bool { return true })
			if err != nil {
				return nil, err
			}
			return each(ctx, e, names, all, e.client().Status)
		},
		// Several: a blank line after each block, so they read apart.
		human: printMany(printStatus, func(w io.Writer, s *wire.SessionStatus) error {
			if err := printStatus(w, s); err != nil {
				return err
			}
			_, err := io.WriteString(w, "\n")
			return err
		}),
	}
}

// printStatus prints one session's status as key: value rows.
func printStatus(w io.Writer, s *wire.SessionStatus) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	// Each value on its row, escaped whole (safe.go): a cwd or a
	// reason with a newline cannot forge a row.
	row := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%s\n", k, safeText(fmt.Sprint(v))) }
	row("name", s.Name)
	row("status", s.Status)
	if s.SilentMS > 0 {
		row("silent", fmt.Sprintf("%s (its worker has not answered)", time.Duration(s.SilentMS)*time.Millisecond))
	}
	switch {
	case s.State != "":
		st := s.State
		if !s.StateSince.IsZero() {
			st += " for " + ago(time.Since(s.StateSince))
		}
		row("state", st+" ("+s.Agent+")")
		if d := s.StateDetail; d != nil {
			row("asks", stateAsks(d))
			if len(d.Choices) > 0 {
				var cs []string
				for _, c := range d.Choices {
					cs = append(cs, c.Label)
				}
				row("choices", strings.Join(cs, " / "))
			}
			if d.PromptID != "" {
				row("prompt", d.PromptID+" (agentctl approve "+s.Name+" --prompt "+d.PromptID+", or deny)")
			}
		}
	case s.Input == wire.InputReady:
		row("state", "ready (waiting for input: blocked reading its terminal)")
	case s.Input == wire.InputBusy:
		row("state", "busy (not reading its terminal)")
	}
	if l := s.Lease; l != nil {
		row("keyboard", "taken over by "+l.Holder+" for "+ago(time.Since(l.Since))+": asks, sends and approvals are busy until they hand back")
	}
	if h := hookText(s); h != "" {
		row("hooks", h)
	}
	if s.Conversation != "" {
		row("conversation", s.Conversation+" "+s.Transcript)
	}
	row("allows", strings.Join(s.Allows, ", "))
	if s.Termination != "" {
		row("ended", exitText(s.Termination, s.ExitCode, s.Signal))
	}
	if s.Reason != "" {
		row("reason", s.Reason)
	}
	row("command", shellJoin(s.Argv))
	if len(s.Command) > 0 {
		row("spawned as", shellJoin(s.Command))
	}
	row("cwd", s.Cwd)
	if s.Restart != "" || s.Restarts > 0 {
		policy := string(s.Restart)
		if policy == "" {
			policy = string(wire.RestartNo)
		}
		r := fmt.Sprintf("%s, restarted %d times", policy, s.Restarts)
		if s.ResumeID != "" {
			r += fmt.Sprintf(", resumed %s conversation %s", s.Agent, s.ResumeID)
		}
		row("restart", r)
	}
	if w := s.Worktree; w != nil {
		row("worktree", fmt.Sprintf("%s, branch %s from %.12s, of %s (agentctl diff %s)", w.Path, w.Branch, w.Base, w.Repo, s.Name))
	}
	// The JSON keeps the daemon's pids as it answered them (the
	// result is the daemon's); a person is told they are history.
	pids := fmt.Sprintf("program %d, worker %d", s.ProgramPID, s.WorkerPID)
	if s.ProgramPID == 0 && s.WorkerPID == 0 {
		pids = "none"
	} else if !processesLive(s.Status) {
		pids = "none running (were program " + fmt.Sprint(s.ProgramPID) + ", worker " + fmt.Sprint(s.WorkerPID) + "; the numbers may be other processes' now)"
	}
	row("pids", pids)
	if s.Launcher == "systemd" {
		row("launcher", "systemd unit "+s.Unit+" (systemctl --user status "+s.Unit+")")
	} else if s.Launcher != "" {
		row("launcher", s.Launcher+" (a child of agentd: in its cgroup, with whatever restrictions it runs under)")
	}
	row("size", fmt.Sprintf("%dx%d", s.Cols, s.Rows))
	row("recorded", fmt.Sprintf("%d bytes, %d events, %d asks answered", s.Bytes, s.Events, s.Asks))
	row("created", s.CreatedAt.Local().Format(time.DateTime))
	if !s.EndedAt.IsZero() {
		row("ended at", s.EndedAt.Local().Format(time.DateTime))
	}
	if !s.LastActivity.IsZero() {
		row("last activity", s.LastActivity.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func stopVerb() command {
	var p wire.StopParams
	var grace time.Duration
	var stopAll bool
	return verb[*manyResult[*wire.ExitResult]]{
		use: "stop NAME... [--all] [--signal SIG] [--grace DURATION] [--force]", summary: "stop sessions' programs (TERM, then KILL after the grace period)",
		long: "Send the program SIG (default TERM), wait the grace period for it to exit, then KILL it.\n\n" +
			"A session whose worker does not answer shows as unresponsive (agentctl list); --force kills\n" +
			"its worker and its program with KILL and records the session as failed (host_death).\n\n" +
			"Several names, or --all (every live session), are stopped at once; one that fails does not stop\n" +
			"the others, and the exit status is the first failure's.",
		args: cobra.ArbitraryArgs, complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Signal, "signal", "", "signal to send first (default TERM)")
			durationVar(fs, &grace, "grace", "wait this long before KILL (default 5s)")
			fs.BoolVar(&p.Force, "force", false, "if the session's worker does not answer, kill it and the program")
			fs.BoolVar(&stopAll, "all", false, "every live session")
		},
		flagComplete: map[string]completeKind{"signal": completeSignals, "grace": completeNone},
		run: func(ctx context.Context, e *env, args []string) (*manyResult[*wire.ExitResult], error) {
			names, err := e.targets(ctx, "stop", args, stopAll, func(s wire.SessionRow) bool { return processesLive(s.Status) })
			if err != nil {
				return nil, err
			}
			p.GraceMS = ms(grace)
			c := e.client()
			defer e.progress("stopping " + strings.Join(names, ", ") + ": waiting for the programs to exit, KILL after the grace period")()
			return each(ctx, e, names, stopAll, func(ctx context.Context, name string) (*wire.ExitResult, error) {
				q := p
				q.Name = name
				return c.Stop(ctx, q)
			})
		},
		human: printMany(printStop, printStop),
	}
}

// printStop prints how a stop ended a session.
func printStop(w io.Writer, x *wire.ExitResult) error {
	note := ""
	if x.AlreadyEnded {
		note = " (had already ended)"
	}
	_, err := fmt.Fprintf(w, "%s %s: %s%s\n", safeText(x.Name), x.Status, safeText(exitText(x.Termination, x.ExitCode, x.Signal)), note)
	return err
}

func rmVerb() command {
	var p wire.RmParams
	var rmAll bool
	return verb[*manyResult[*wire.RmResult]]{
		use: "rm NAME... [--all] [--force]", summary: "remove ended sessions and their files (--force stops running ones first)",
		long: "Remove ended sessions and their files; --force stops a running one first. --all removes every\n" +
			"ended session (with --force, every session). One that fails does not stop the others; the exit\n" +
			"status is the first failure's.\n\n" +
			"A session's own git worktree (spawn --worktree) goes with it when it is clean; rm refuses, naming\n" +
			"the files and commits, while it holds uncommitted changes or commits on no other branch.\n" +
			"--force removes the worktree's directory anyway and keeps its branch.",
		args: cobra.ArbitraryArgs, complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&p.Force, "force", false, "stop a running session first")
			fs.BoolVar(&rmAll, "all", false, "every ended session (every session with --force)")
		},
		run: func(ctx context.Context, e *env, args []string) (*manyResult[*wire.RmResult], error) {
			names, err := e.targets(ctx, "rm", args, rmAll, func(s wire.SessionRow) bool { return p.Force || !processesLive(s.Status) })
			if err != nil {
				return nil, err
			}
			c := e.client()
			return each(ctx, e, names, rmAll, func(ctx context.Context, name string) (*wire.RmResult, error) {
				q := p
				q.Name = name
				return c.Rm(ctx, q)
			})
		},
		human: printMany(printRemoved, printRemoved),
	}
}

// printRemoved says a session was removed.
func printRemoved(w io.Writer, r *wire.RmResult) error {
	_, err := fmt.Fprintf(w, "%s removed\n", safeText(r.Name))
	return err
}

func reconcileVerb() command {
	return verb[*wire.ReconcileResult]{
		use: "reconcile", summary: "re-attach to live session workers and mark dead ones failed", quick: true,
		run: func(ctx context.Context, e *env, args []string) (*wire.ReconcileResult, error) {
			return e.client().Reconcile(ctx)
		},
		human: func(w io.Writer, res *wire.ReconcileResult) error {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tACTION\tBEFORE\tAFTER\tDETAIL")
			for _, s := range res.Sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safeText(s.Name), s.Action, s.Before, s.After, safeText(s.Detail))
			}
			tw.Flush()
			fmt.Fprintf(w, "%d sessions in %d ms\n", len(res.Sessions), res.TookMS)
			return nil
		},
	}
}

// sendResult is what `agentctl send` did: the daemon answers only success.
type sendResult struct {
	Name      string   `json:"name"`
	TextBytes int      `json:"text_bytes"`
	Keys      []string `json:"keys"`
}

// resizeResult is the size `agentctl resize` gave the session.
type resizeResult struct {
	Name string `json:"name"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

func sendVerb() command {
	var keys string
	return verb[*sendResult]{
		use: "send NAME [TEXT|-] [--keys KEY[,KEY]...]", summary: "send text and/or keys (enter, esc, tab, up, ctrl+c, ...) to a session without waiting",
		long: "Send TEXT as typed, then the named keys, to the session's program without waiting for it.\n" +
			"With both, the text goes first: `send sh 'ls' --keys enter`.",
		example: "  agentctl send py --keys ctrl+c\n  agentctl send sh 'make test' --keys enter",
		args:    rangeArgs(1, 2), complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&keys, "keys", "", "key names, comma-separated")
		},
		flagComplete: map[string]completeKind{"keys": completeKeys},
		run: func(ctx context.Context, e *env, args []string) (*sendResult, error) {
			if len(args) == 1 && keys == "" {
				return nil, usagef("usage: %s (give TEXT, --keys or both); see agentctl send --help", usageLine(e.cmd))
			}
			// One call: the text and the keys reach the program in one
			// write, or nothing does (a bad key name is refused first).
			p := wire.SendParams{Name: args[0]}
			if len(args) == 2 {
				var err error
				if p.Text, err = e.stdinText(args[1]); err != nil {
					return nil, err
				}
			}
			if keys != "" {
				p.Keys = strings.Split(keys, ",")
			}
			if err := e.client().Send(ctx, p); err != nil {
				return nil, err
			}
			// The daemon answers nothing but success; the result says
			// what was sent, so every envelope has one.
			r := &sendResult{Name: p.Name, TextBytes: len(p.Text), Keys: p.Keys}
			if r.Keys == nil {
				r.Keys = []string{}
			}
			return r, nil
		},
		human: func(io.Writer, *sendResult) error { return nil },
	}
}

func snapshotVerb() command {
	return verb[*wire.SnapshotResult]{
		use: "snapshot NAME", summary: "print a session's screen as a person sees it", quick: true,
		args: exactArgs(1), complete: completeSession,
		run: func(ctx context.Context, e *env, args []string) (*wire.SnapshotResult, error) {
			return e.client().Snapshot(ctx, args[0])
		},
		human: func(w io.Writer, r *wire.SnapshotResult) error {
			// The rows as a person sees them, without the blank rows
			// under the last written one (--json keeps every row).
			lines := r.Lines
			for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
				lines = lines[:len(lines)-1]
			}
			for _, l := range lines {
				fmt.Fprintln(w, strings.TrimRight(l, " "))
			}
			return nil
		},
	}
}

// progressEvery is how often `wait --progress --json` reports.
const progressEvery = time.Second

// waitProgress is one progress envelope of `wait --progress --json`.
type waitProgress struct {
	Name      string `json:"name"`
	Waiting   string `json:"waiting"` // what the wait waits for
	ElapsedMS int64  `json:"elapsed_ms"`
	// LastLine is the screen's last line that is not blank: where a
	// program usually says what it is doing.
	LastLine string `json:"last_line"`
}

func waitVerb() command {
	var p wire.WaitParams
	var idle time.Duration
	var progress bool
	return verb[*waitResult]{
		use: "wait NAME [--until REGEXP] [--idle DURATION] [--exit] [--ready] [--state STATE[,STATE]] [--progress]", summary: "wait until the screen matches, the program is quiet, waits for input, enters a state, or exits",
		long: "Wait until the session's screen or new output matches --until, the program has been quiet for\n" +
			"--idle, it waits for input (--ready: blocked reading its terminal, nothing typed left unread), its\n" +
			"state is one of --state (working, waiting, needs_approval, needs_attention for agent CLIs; ready,\n" +
			"busy for any program), or it exits (--exit); the first to hold wins. --timeout (default 10m) bounds the wait; a timeout\n" +
			"prints the last lines of the screen on stderr.\n\n" +
			"With --json --progress it streams: an envelope of type \"progress\" every second (elapsed time and\n" +
			"the screen's last line), then the result; --progress without --json is refused.\n\n" +
			"When the program's exit ends the wait, agentctl exits with the program's exit status (128+N for\n" +
			"signal N), as a shell would, and says how it ended.\n\n" +
			"--until's ^ and $ match at each line's start and end (agentctl adds (?m)); \\A and \\z anchor the\n" +
			"whole text.",
		example:       "  agentctl wait py --until '(?m)^>>> $'\n  agentctl --timeout 30s wait build --exit\n  agentctl wait build --exit --json --progress",
		args:          exactArgs(1),
		complete:      completeSession,
		serverTimeout: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Until, "until", "", "a regular expression on the screen or new output")
			durationVar(fs, &idle, "idle", "this much quiet")
			fs.BoolVar(&p.Exit, "exit", false, "the program has ended")
			fs.BoolVar(&p.Ready, "ready", false, "the program waits for input")
			fs.StringSliceVar(&p.States, "state", nil, "the session's state is one of these (comma-separated, repeatable)")
			fs.BoolVar(&progress, "progress", false, "with --json, a progress envelope every second before the result")
		},
		run: func(ctx context.Context, e *env, args []string) (*waitResult, error) {
			p.Name, p.IdleMS, p.TimeoutMS = args[0], ms(idle), ms(e.timeout)
			p.Until = lineAnchors(p.Until)
			if progress && !e.json {
				return nil, usagef("--progress streams JSON envelopes: give --json too (on a terminal, wait shows a spinner with the elapsed time on its own)")
			}
			if p.Until == "" && p.IdleMS == 0 && !p.Exit && !p.Ready && len(p.States) == 0 {
				// Said here, in the flags' names; the daemon can only
				// name its parameters.
				return nil, usagef("wait needs a condition: give --until REGEXP, --idle DURATION, --ready, --state STATE or --exit; see agentctl wait --help")
			}
			c := e.client()
			defer e.progress("waiting for " + p.Name + ": " + waitWhat(p))()
			if progress && e.json {
				defer e.reportWait(ctx, c, p)()
			}
			r, err := c.Wait(ctx, p)
			if err != nil {
				return nil, err
			}
			if r.Reason != wire.WaitReasonExited {
				return &waitResult{WaitResult: r}, nil
			}
			// Ended: exit with the program's own status, as a shell
			// would (docker wait prints it), and say it.
			st, err := endedStatus(ctx, c, p.Name)
			if err != nil {
				return nil, err
			}
			e.status = programExit(st)
			return &waitResult{WaitResult: r, ended: exitNote(st)}, nil
		},
		human: func(w io.Writer, r *waitResult) error {
			if r.ended != "" {
				fmt.Fprintf(w, "%s: %s\n", r.Reason, r.ended)
				return nil
			}
			fmt.Fprintln(w, r.Reason)
			return nil
		},
	}
}

// waitResult is what wait returns: the daemon's result (its JSON
// unchanged) and, when the program's end ended the wait, how it ended,
// for a person.
type waitResult struct {
	*wire.WaitResult
	ended string
}

// reportWait prints a progress envelope every progressEvery while a wait
// runs, from a snapshot on the same connection. The returned stop ends it
// before the result is printed, so the result is the stream's last line.
func (e *env) reportWait(ctx context.Context, c *wire.Client, p wire.WaitParams) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pr := waitProgress{Name: p.Name, Waiting: waitWhat(p), ElapsedMS: time.Since(start).Milliseconds()}
			if s, err := c.Snapshot(ctx, p.Name); err == nil {
				for i := len(s.Lines) - 1; i >= 0; i-- {
					if l := strings.TrimSpace(s.Lines[i]); l != "" {
						pr.LastLine = l
						break
					}
				}
			}
			if ctx.Err() != nil {
				return
			}
			e.emit(typeProgress, pr)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitWhat says what a wait waits for, for the spinner.
func waitWhat(p wire.WaitParams) string {
	var what []string
	if p.Until != "" {
		what = append(what, "until "+p.Until)
	}
	if p.IdleMS > 0 {
		what = append(what, fmt.Sprintf("%s of quiet", time.Duration(p.IdleMS)*time.Millisecond))
	}
	if p.Ready {
		what = append(what, "it to wait for input")
	}
	if len(p.States) > 0 {
		what = append(what, "state "+strings.Join(p.States, " or "))
	}
	if p.Exit {
		what = append(what, "its exit")
	}
	if len(what) == 0 {
		return "its condition"
	}
	return strings.Join(what, " or ")
}

func resizeVerb() command {
	return verb[*resizeResult]{
		use: "resize NAME COLSxROWS", summary: "change a session's terminal size", quick: true,
		args: exactArgs(2), complete: completeSession,
		run: func(ctx context.Context, e *env, args []string) (*resizeResult, error) {
			p := wire.ResizeParams{Name: args[0]}
			var err error
			if p.Cols, p.Rows, err = parseSize(args[1]); err != nil {
				return nil, err
			}
			if err := e.client().Resize(ctx, p); err != nil {
				return nil, err
			}
			return &resizeResult{Name: p.Name, Cols: p.Cols, Rows: p.Rows}, nil
		},
		human: func(io.Writer, *resizeResult) error { return nil },
	}
}

// errPrinted is returned by verbs that printed their own output; it is not
// a failure.
var errPrinted = errors.New("printed")

// exitText says how a program ended, for people.
func exitText(term wire.Termination, code *int, sig string) string {
	switch {
	case term == "":
		return "-"
	case sig != "":
		return string(term) + " (" + sig + ")"
	case code != nil:
		return fmt.Sprintf("%s (%d)", term, *code)
	}
	return string(term)
}

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shorten cuts s to n runes.
func shorten(s string, n int) string { return elide(s, n) }
