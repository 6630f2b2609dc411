package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func sessionVerbs() []verb {
	return []verb{spawnVerb(), askVerb(), listVerb(), statusVerb(), stopVerb(), rmVerb(), reconcileVerb(),
		logsVerb(), sendVerb(), snapshotVerb(), waitVerb(), resizeVerb(), attachVerb()}
}

func spawnVerb() verb {
	const usage = "NAME [--cwd DIR] [--env K=V]... [--size COLSxROWS] -- COMMAND [ARGS...]"
	return verb{
		name: "spawn", args: usage, summary: "start a program in a new session",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var cwd, size string
			var envs multiFlag
			pos, command, err := verbFlags("spawn", args, func(fs *flag.FlagSet) {
				fs.StringVar(&cwd, "cwd", "", "working directory")
				fs.Var(&envs, "env", "K=V, repeatable")
				fs.StringVar(&size, "size", "", "terminal size COLSxROWS (default 120x40)")
			})
			if err != nil {
				return nil, err
			}
			if len(pos) != 1 || len(command) == 0 {
				return nil, usagef("usage: agentctl spawn %s", usage)
			}
			p := wire.SpawnParams{Name: pos[0], Argv: command, Cwd: cwd}
			if size != "" {
				if p.Cols, p.Rows, err = parseSize(size); err != nil {
					return nil, err
				}
			}
			for _, kv := range envs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, usagef("--env %q is not K=V", kv)
				}
				if p.Env == nil {
					p.Env = map[string]string{}
				}
				p.Env[k] = v
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Spawn(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			s := r.(*wire.SessionStatus)
			fmt.Fprintf(w, "%s %s (pid %d)\n", s.Name, s.Status, s.ProgramPID)
			return nil
		},
	}
}

// positiveDuration parses a flag that must be a duration above zero.
func positiveDuration(d *time.Duration) func(string) error {
	return func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration; use a number with a unit, such as 2s or 500ms")
		}
		if v <= 0 {
			return fmt.Errorf("must be above zero, such as 2s; leave the flag out for the default")
		}
		*d = v
		return nil
	}
}

func askVerb() verb {
	const usage = "NAME TEXT|- [--until REGEXP] [--idle DURATION] [--lock-timeout DURATION] [--via auto|pty|channel]"
	return verb{
		name: "ask", args: usage, summary: "type a question into a session and print the answer (TEXT - reads stdin)",
		serverTimeout: true,
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var p wire.AskParams
			var idle, lock time.Duration
			pos, after, err := verbFlags("ask", args, func(fs *flag.FlagSet) {
				fs.StringVar(&p.Until, "until", "", "stop collecting when this regular expression matches")
				fs.Func("idle", "also end the ask after this much quiet (default: at the program's prompt)", positiveDuration(&idle))
				fs.DurationVar(&lock, "lock-timeout", 0, "wait this long for another ask on the session")
				fs.StringVar(&p.Via, "via", "", "auto, pty or channel")
			})
			if err != nil {
				return nil, err
			}
			pos = append(pos, after...)
			if err := wantArgs("ask", usage, pos, 2); err != nil {
				return nil, err
			}
			if p.Text, err = e.stdinText(pos[1]); err != nil {
				return nil, err
			}
			p.Name, p.IdleMS, p.LockTimeoutMS = pos[0], ms(idle), ms(lock)
			// The daemon's deadline is --timeout, so it answers timeout with
			// what it saw instead of the client hanging up first.
			p.TimeoutMS = ms(e.timeout)
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Ask(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			fmt.Fprintln(w, strings.TrimRight(r.(*wire.AskResult).Answer, "\n"))
			return nil
		},
	}
}

func listVerb() verb {
	return verb{
		name: "list", args: "[--status STATUS[,STATUS]]", summary: "list sessions",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var status string
			pos, _, err := verbFlags("list", args, func(fs *flag.FlagSet) {
				fs.StringVar(&status, "status", "", "only these statuses, comma-separated")
			})
			if err != nil {
				return nil, err
			}
			if len(pos) > 0 {
				return nil, usagef("usage: agentctl list [--status STATUS]")
			}
			var p wire.ListParams
			if status != "" {
				for _, s := range strings.Split(status, ",") {
					p.Status = append(p.Status, wire.Status(s))
				}
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.List(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATUS\tPID\tCOMMAND\tAGE\tACTIVE\tEXIT")
			now := time.Now()
			for _, s := range r.(*wire.ListResult).Sessions {
				pid, active := "-", "-"
				if s.PID > 0 {
					pid = fmt.Sprint(s.PID)
				}
				if !s.LastActivity.IsZero() {
					active = ago(now.Sub(s.LastActivity)) + " ago"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Status, pid, shorten(strings.Join(s.Command, " "), 40),
					ago(time.Duration(s.AgeMS)*time.Millisecond), active, exitText(s.Termination, s.ExitCode, s.Signal))
			}
			return tw.Flush()
		},
	}
}

func statusVerb() verb {
	return verb{
		name: "status", args: "NAME", summary: "everything about one session",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			pos, _, err := verbFlags("status", args, func(*flag.FlagSet) {})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("status", "NAME", pos, 1); err != nil {
				return nil, err
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Status(ctx, pos[0])
		},
		human: func(w io.Writer, r any) error {
			s := r.(*wire.SessionStatus)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			row := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", k, v) }
			row("name", s.Name)
			row("status", s.Status)
			row("allows", strings.Join(s.Allows, ", "))
			if s.Termination != "" {
				row("ended", exitText(s.Termination, s.ExitCode, s.Signal))
			}
			if s.Reason != "" {
				row("reason", s.Reason)
			}
			row("command", strings.Join(s.Argv, " "))
			row("cwd", s.Cwd)
			row("pids", fmt.Sprintf("program %d, worker %d", s.ProgramPID, s.WorkerPID))
			row("size", fmt.Sprintf("%dx%d", s.Cols, s.Rows))
			row("recorded", fmt.Sprintf("%d bytes, %d events, %d asks answered", s.Bytes, s.Events, s.Asks))
			row("created", s.CreatedAt.Local().Format(time.DateTime))
			if !s.LastActivity.IsZero() {
				row("last activity", s.LastActivity.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
}

func stopVerb() verb {
	return verb{
		name: "stop", args: "NAME [--signal SIG] [--grace DURATION]", summary: "stop a session's program (TERM, then KILL after the grace period)",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var p wire.StopParams
			var grace time.Duration
			pos, _, err := verbFlags("stop", args, func(fs *flag.FlagSet) {
				fs.StringVar(&p.Signal, "signal", "", "signal to send first (default TERM)")
				fs.DurationVar(&grace, "grace", 0, "wait this long before KILL (default 5s)")
			})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("stop", "NAME [--signal SIG] [--grace DURATION]", pos, 1); err != nil {
				return nil, err
			}
			p.Name, p.GraceMS = pos[0], ms(grace)
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Stop(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			x := r.(*wire.ExitResult)
			note := ""
			if x.AlreadyEnded {
				note = " (had already ended)"
			}
			fmt.Fprintf(w, "%s %s: %s%s\n", x.Name, x.Status, exitText(x.Termination, x.ExitCode, x.Signal), note)
			return nil
		},
	}
}

func rmVerb() verb {
	return verb{
		name: "rm", args: "NAME [--force]", summary: "remove an ended session and its files (--force stops a running one first)",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var p wire.RmParams
			pos, _, err := verbFlags("rm", args, func(fs *flag.FlagSet) {
				fs.BoolVar(&p.Force, "force", false, "stop a running session first")
			})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("rm", "NAME [--force]", pos, 1); err != nil {
				return nil, err
			}
			p.Name = pos[0]
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Rm(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			fmt.Fprintf(w, "%s removed\n", r.(*wire.RmResult).Name)
			return nil
		},
	}
}

func reconcileVerb() verb {
	return verb{
		name: "reconcile", summary: "re-attach to live session workers and mark dead ones failed",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			if len(args) > 0 {
				return nil, usagef("reconcile takes no arguments")
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Reconcile(ctx)
		},
		human: func(w io.Writer, r any) error {
			res := r.(*wire.ReconcileResult)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tACTION\tBEFORE\tAFTER\tDETAIL")
			for _, s := range res.Sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Action, s.Before, s.After, s.Detail)
			}
			tw.Flush()
			fmt.Fprintf(w, "%d sessions in %d ms\n", len(res.Sessions), res.TookMS)
			return nil
		},
	}
}

func logsVerb() verb {
	return verb{
		name: "logs", args: "NAME [-f] [--from SEQ] [--events]", summary: "print a session's recorded output (-f follows; --events prints every event as JSON)",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var p wire.LogsParams
			var events bool
			pos, _, err := verbFlags("logs", args, func(fs *flag.FlagSet) {
				fs.BoolVar(&p.Follow, "f", false, "follow new events until the session ends")
				fs.BoolVar(&p.Follow, "follow", false, "follow new events until the session ends")
				fs.Uint64Var(&p.FromSeq, "from", 0, "first event seq")
				fs.BoolVar(&events, "events", false, "print events as JSON lines, not just the output")
			})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("logs", "NAME [-f] [--from SEQ]", pos, 1); err != nil {
				return nil, err
			}
			p.Name = pos[0]
			print := func(ev wire.LogEvent) {
				switch {
				case events || e.json:
					b, _ := json.Marshal(ev)
					fmt.Fprintf(e.stdout, "%s\n", b)
				case ev.Type == "output":
					io.WriteString(e.stdout, ev.Data)
				}
			}
			if !p.Follow {
				c, err := e.dial(ctx)
				if err != nil {
					return nil, err
				}
				for {
					r, err := c.Logs(ctx, p)
					if err != nil {
						return nil, err
					}
					for _, ev := range r.Events {
						print(ev)
					}
					if len(r.Events) == 0 || r.NextSeq <= p.FromSeq {
						return nil, errPrinted
					}
					p.FromSeq = r.NextSeq
				}
			}
			// Following: events come as notifications, in order, on this
			// connection's reader; the call returns when the session ends.
			c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
				if n.Method != wire.NotifyLogEvent {
					return
				}
				var ev wire.LogEvent
				if json.Unmarshal(n.Params, &ev) == nil {
					print(ev)
				}
			}})
			if err != nil {
				return nil, err
			}
			defer c.Close()
			if _, err := c.Logs(ctx, p); err != nil && !errors.Is(err, context.Canceled) {
				return nil, err
			}
			return nil, errPrinted
		},
	}
}

func sendVerb() verb {
	const usage = "NAME [TEXT|-] [--keys KEY[,KEY]...]"
	return verb{
		name: "send", args: usage, summary: "send text or keys (enter, esc, tab, up, ctrl+c, ...) to a session without waiting",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var keys string
			pos, after, err := verbFlags("send", args, func(fs *flag.FlagSet) {
				fs.StringVar(&keys, "keys", "", "key names, comma-separated")
			})
			if err != nil {
				return nil, err
			}
			pos = append(pos, after...)
			if len(pos) < 1 || len(pos) > 2 || (len(pos) == 2) == (keys != "") {
				return nil, usagef("usage: agentctl send %s (give TEXT or --keys, not both)", usage)
			}
			p := wire.SendParams{Name: pos[0]}
			if keys != "" {
				p.Keys = strings.Split(keys, ",")
			} else if p.Text, err = e.stdinText(pos[1]); err != nil {
				return nil, err
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return nil, c.Send(ctx, p)
		},
		human: func(io.Writer, any) error { return nil },
	}
}

func snapshotVerb() verb {
	return verb{
		name: "snapshot", args: "NAME", summary: "print a session's screen as a person sees it",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			pos, _, err := verbFlags("snapshot", args, func(*flag.FlagSet) {})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("snapshot", "NAME", pos, 1); err != nil {
				return nil, err
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Snapshot(ctx, pos[0])
		},
		human: func(w io.Writer, r any) error {
			for _, l := range r.(*wire.SnapshotResult).Lines {
				fmt.Fprintln(w, l)
			}
			return nil
		},
	}
}

func waitVerb() verb {
	const usage = "NAME [--until REGEXP] [--idle DURATION] [--exit]"
	return verb{
		name: "wait", args: usage, summary: "wait until the screen matches, the program is quiet, or it exits",
		serverTimeout: true,
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			var p wire.WaitParams
			var idle time.Duration
			pos, _, err := verbFlags("wait", args, func(fs *flag.FlagSet) {
				fs.StringVar(&p.Until, "until", "", "a regular expression on the screen or new output")
				fs.DurationVar(&idle, "idle", 0, "this much quiet")
				fs.BoolVar(&p.Exit, "exit", false, "the program has ended")
			})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("wait", usage, pos, 1); err != nil {
				return nil, err
			}
			p.Name, p.IdleMS, p.TimeoutMS = pos[0], ms(idle), ms(e.timeout)
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return c.Wait(ctx, p)
		},
		human: func(w io.Writer, r any) error {
			fmt.Fprintln(w, r.(*wire.WaitResult).Reason)
			return nil
		},
	}
}

func resizeVerb() verb {
	return verb{
		name: "resize", args: "NAME COLSxROWS", summary: "change a session's terminal size",
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			pos, _, err := verbFlags("resize", args, func(*flag.FlagSet) {})
			if err != nil {
				return nil, err
			}
			if err := wantArgs("resize", "NAME COLSxROWS", pos, 2); err != nil {
				return nil, err
			}
			p := wire.ResizeParams{Name: pos[0]}
			if p.Cols, p.Rows, err = parseSize(pos[1]); err != nil {
				return nil, err
			}
			c, err := e.dial(ctx)
			if err != nil {
				return nil, err
			}
			return nil, c.Resize(ctx, p)
		},
		human: func(io.Writer, any) error { return nil },
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

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
