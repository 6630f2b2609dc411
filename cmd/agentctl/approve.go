package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// approveVerb is approve (deny false) or deny: an agent CLI's permission
// prompt answered as a person would. It is a person's act; the MCP servers
// do not offer it to models.
func approveVerb(deny bool) func() command {
	return func() command {
		name, act := "approve", "approve"
		if deny {
			name, act = "deny", "deny"
		}
		var p wire.ApproveParams
		return verb[*wire.ApproveResult]{
			use:     name + " NAME [--prompt ID]",
			summary: act + " the permission prompt an agent CLI shows (Claude Code, Codex, Gemini CLI)",
			long: "Answer the agent's permission prompt on its screen as a person would: the option to " + act + " it,\n" +
				"typed with that CLI's own keys. agentd reads the screen again first: if nothing is asked, or\n" +
				"with --prompt ID (from agentctl status) a different prompt is on the screen now, nothing is\n" +
				"typed and it says what the screen shows (exit 17).",
			example:  "  agentctl status fix      # state: needs_approval ... prompt: 3f9c0a1b2c3d4e5f\n  agentctl " + name + " fix --prompt 3f9c0a1b2c3d4e5f",
			args:     exactArgs(1),
			complete: completeSession,
			flags: func(fs *pflag.FlagSet) {
				fs.StringVar(&p.PromptID, "prompt", "", "only if the prompt on the screen is this one (its id from agentctl status)")
			},
			run: func(ctx context.Context, e *env, args []string) (*wire.ApproveResult, error) {
				p.Name, p.Deny = args[0], deny
				return e.client().Approve(ctx, p)
			},
			human: func(w io.Writer, r *wire.ApproveResult) error {
				what := strings.TrimSpace(r.Tool + " " + r.Subject)
				if what == "" {
					what = r.Kind
				}
				fmt.Fprintf(w, "%s: %s (%s)\n", safeText(r.Name), safeText(r.Choice), safeText(what))
				return nil
			},
		}
	}
}

// stateAsks says in a line what a prompt asks.
func stateAsks(d *wire.StateDetail) string {
	var parts []string
	for _, s := range []string{d.Kind, d.Tool, d.Subject, d.Question, d.Message} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}
