package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentd/agentd/pkg/wire"
)

func diffVerb() command {
	return verb[*wire.DiffResult]{
		use: "diff NAME", summary: "show a session's changes in its own git worktree since it started", quick: true,
		long: "Show what session NAME changed in its own git worktree (spawn --worktree) since it started:\n" +
			"committed and uncommitted changes to tracked files, as `git diff START` in the worktree shows\n" +
			"them, then the untracked files, one \"untracked: PATH\" line each. Control characters are escaped\n" +
			"for the terminal; --json gives the patch as it is.",
		example: "  agentctl spawn fix --worktree -- claude\n  agentctl diff fix",
		args:    exactArgs(1), complete: completeSession,
		run: func(ctx context.Context, e *env, args []string) (*wire.DiffResult, error) {
			return e.client().Diff(ctx, args[0])
		},
		human: func(w io.Writer, d *wire.DiffResult) error {
			if _, err := io.WriteString(w, safeLines(d.Patch)); err != nil {
				return err
			}
			for _, f := range d.Untracked {
				if _, err := fmt.Fprintf(w, "untracked: %s\n", safeText(f)); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// worktreeOwnBranch is --worktree given without a branch: the session's
// own new branch. Help shows it as the flag's value when none is given, so
// it says what that means; a space keeps it from being a branch's name.
const worktreeOwnBranch = "a new branch NAME"

// worktreeArgs lets `spawn NAME --worktree BRANCH -- CMD` name the branch
// with a space, as the usage line shows: a flag with an optional value
// takes it only after '=', so the branch arrives as a second name.
func worktreeArgs(e *env, args []string, worktree *string) (pos, command []string) {
	pos, command = splitDash(e.cmd, args)
	if *worktree == worktreeOwnBranch && len(pos) == 2 && len(command) > 0 {
		*worktree = pos[1]
		pos = pos[:1]
	}
	return pos, command
}

// worktreeParams puts --worktree and --worktree-dir into p.
func worktreeParams(p *wire.SpawnParams, e *env, worktree, dir string) error {
	if !e.cmd.Flags().Changed("worktree") {
		if dir != "" {
			return usagef("--worktree-dir needs --worktree")
		}
		return nil
	}
	p.Worktree = true
	if worktree != worktreeOwnBranch {
		if worktree == "" {
			return usagef("--worktree= names no branch; give --worktree alone for a new branch named after the session")
		}
		p.WorktreeBranch = worktree
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return usagef("--worktree-dir %q: %v", dir, err)
		}
		p.WorktreeDir = abs
	}
	return nil
}
