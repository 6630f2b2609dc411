package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/pkg/wire"
)

// runVerb is `agentctl run`: spawn, print the program's output as it
// comes, wait for its end and exit with its status, for scripts (docker
// run's shape). The session stays, to read again with logs or status,
// unless --rm removes it.
func runVerb() command {
	var o spawnOptions
	var rm bool
	return verb[*wire.SessionStatus]{
		use:     "run NAME " + spawnUsage + " [--rm] -- COMMAND [ARGS...]",
		summary: "start a program in a new session, print its output, and exit with its exit status",
		long: "Start COMMAND in a new session called NAME (as spawn does, with the same flags), print its output\n" +
			"as it comes, wait for it to end and exit with its exit status (128+N for a signal N), for scripts.\n" +
			"The session stays for logs and status; --rm removes it after. With --json the output is not\n" +
			"printed: the result is the session's status when it ended. --timeout bounds the whole run.\n\n" +
			"With --worktree the program runs in a git worktree of its own (see agentctl spawn --help). --rm\n" +
			"then removes the worktree too, unless it holds changes or commits on no other branch: those stay,\n" +
			"with the session, and run says so on stderr and still exits with the program's status.",
		example: "  agentctl run t1 -- make test && echo passed\n  agentctl run --rm q -- sh -c 'exit 3'; echo $?\n" +
			"  agentctl run --rm --worktree t2 -- make test",
		args: cobra.ArbitraryArgs,
		flags: func(fs *pflag.FlagSet) {
			o.define(fs)
			fs.BoolVar(&rm, "rm", false, "remove the session once it ended")
		},
		complete:     completeCommand,
		flagComplete: spawnFlagsComplete,
		run: func(ctx context.Context, e *env, args []string) (*wire.SessionStatus, error) {
			p, err := o.params(e, args, "run")
			if err != nil {
				return nil, err
			}
			if p.Restart != "" && p.Restart != wire.RestartNo {
				return nil, usagef("run waits for the program's end and exits with its status, so --restart %s does not apply; use agentctl spawn --restart %s", p.Restart, p.Restart)
			}
			p.Restart = wire.RestartNo // whatever the config's session_restart says
			c := e.client()
			if _, err := c.Spawn(ctx, p); err != nil {
				return nil, err
			}
			if e.json {
				if _, err := c.Wait(ctx, wire.WaitParams{Name: p.Name, Exit: true, TimeoutMS: ms(e.timeout)}); err != nil {
					return nil, err
				}
			} else if _, err := e.logs(ctx, logsOptions{p: wire.LogsParams{Name: p.Name, Follow: true}}); err != nil && err != errPrinted {
				return nil, err
			}
			st, err := endedStatus(ctx, c, p.Name)
			if err != nil {
				return nil, err
			}
			if rm {
				_, err := c.Rm(ctx, wire.RmParams{Name: p.Name})
				switch {
				case p.Worktree && errors.Is(err, wire.ErrInvalidStatus):
					// The worktree holds work: kept, as rm keeps it; the
					// program's status is still what a script asked for.
					fmt.Fprintf(e.stderr, "agentctl: run --rm: session %s stays: %s\n", safeText(p.Name), safeText(err.Error()))
				case err != nil:
					return nil, err
				}
			}
			e.status = programExit(st)
			if e.json {
				return st, nil
			}
			return nil, exitStatus(e.status)
		},
	}
}

// endedStatus is the status of a session whose output stream ended: the
// exit is recorded a moment after the last output, so it asks until the
// session says it ended.
func endedStatus(ctx context.Context, c *wire.Client, name string) (*wire.SessionStatus, error) {
	for {
		st, err := c.Status(ctx, name)
		if err != nil || !processesLive(st.Status) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling the daemon, bounded by ctx
		}
	}
}

// programExit is the exit status a shell gives for how the program ended:
// its code, or 128+N for signal N; 1 when it never ran (spawn failed, or
// its end is unknown).
func programExit(st *wire.SessionStatus) int {
	switch {
	case st.ExitCode != nil:
		return *st.ExitCode
	case st.Signal != "":
		name := strings.ToUpper(st.Signal)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if n := unix.SignalNum(name); n != 0 {
			return 128 + int(n)
		}
	}
	return 1
}

// exitNote says how the program ended, for wait --exit's line.
func exitNote(st *wire.SessionStatus) string {
	return fmt.Sprintf("%s, exit status %d", exitText(st.Termination, st.ExitCode, st.Signal), programExit(st))
}
