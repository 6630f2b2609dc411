package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

func restartVerb() command {
	var force bool
	return verb[*wire.SessionStatus]{
		use: "restart NAME [--force]", summary: "start an ended session's program again",
		long: "Start the program of session NAME again, as agentd does by itself for spawn --restart: the\n" +
			"same command, directory, environment and size, the event log going on after a \"restarted\"\n" +
			"record. Claude Code, Codex and Gemini CLI are started on their last conversation (claude\n" +
			"--resume ID, codex resume ID, gemini --resume ID), found in their own store under the session's\n" +
			"HOME; with none there they start fresh, and the record says so.\n\n" +
			"A running session is refused unless --force, which stops it first (as stop --force).",
		example: "  agentctl restart w1\n  agentctl restart --force w1",
		args:    exactArgs(1), complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&force, "force", false, "stop a running session first")
		},
		run: func(ctx context.Context, e *env, args []string) (*wire.SessionStatus, error) {
			defer e.progress("restarting session " + args[0])()
			return e.client().Restart(ctx, wire.RestartParams{Name: args[0], Force: force})
		},
		human: func(w io.Writer, s *wire.SessionStatus) error {
			how := ""
			if s.ResumeID != "" {
				how = fmt.Sprintf(", resumed %s conversation %s", s.Agent, s.ResumeID)
			}
			_, err := fmt.Fprintf(w, "%s %s (pid %d, restart %d%s)\n", safeText(s.Name), s.Status, s.ProgramPID, s.Restarts, safeText(how))
			return err
		},
	}
}
