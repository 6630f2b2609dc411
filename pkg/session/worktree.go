package session

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/internal/worktree"
)

// WorktreeRequest asks Spawn for a git worktree of the session's own (see
// internal/worktree): the program runs there instead of in Cwd, which must
// be inside a git repository.
type WorktreeRequest struct {
	// Branch is an existing branch to check out (not checked out anywhere
	// else), or a new one to create at HEAD; empty is a new branch named
	// after the session.
	Branch string
	// Dir is the worktree's directory, which must not exist; empty is
	// StateDir/worktrees/<repo>-<hash>/<name>.
	Dir string
}

// Worktree is what a session's manifest records about its worktree.
type Worktree = worktree.Record

// WorktreeDiff is a session's changes since it started (Manager.Diff).
type WorktreeDiff struct {
	Worktree
	// Patch is `git diff BASE` in the worktree (committed and uncommitted
	// changes to tracked files); Untracked lists new files git does not
	// track yet.
	Patch     string
	Untracked []string
}

// worktreeError gives a worktree failure its session kind.
func worktreeError(op, name string, err error) error {
	switch {
	case errors.Is(err, worktree.ErrInvalid):
		return errorf(ErrInvalid, "%s of %q: %s", op, name, trimKind(err, worktree.ErrInvalid))
	case errors.Is(err, worktree.ErrUnmerged):
		return errorf(ErrInvalidStatus, "session %q: %s; merge or commit it to another branch first, or agentctl rm --force %s removes the directory and keeps the branch",
			name, trimKind(err, worktree.ErrUnmerged), name)
	}
	return err
}

// trimKind drops the sentinel's own text from a wrapped message.
func trimKind(err, kind error) string {
	s := err.Error()
	if p := kind.Error() + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// createWorktree makes req's worktree for a spawn and returns its record
// and the program's directory inside it.
func (m *Manager) createWorktree(ctx context.Context, req SpawnRequest) (*Worktree, string, error) {
	rec, cwd, err := worktree.Create(ctx, worktree.Request{Cwd: req.Cwd, Name: req.Name,
		Branch: req.Worktree.Branch, Dir: req.Worktree.Dir, Root: filepath.Join(m.opts.StateDir, "worktrees")})
	if err != nil {
		return nil, "", worktreeError("spawn", req.Name, err)
	}
	return rec, cwd, nil
}

// Diff returns the changes in name's worktree since the session started.
// A session spawned without one is ErrInvalid.
func (m *Manager) Diff(ctx context.Context, name string) (*WorktreeDiff, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	man, err := m.readState(name)
	if err != nil {
		return nil, err
	}
	if man.Worktree == nil {
		return nil, errorf(ErrInvalid, "session %q has no worktree; spawn it with --worktree to get one", name)
	}
	ch, err := worktree.Diff(ctx, man.Worktree)
	if err != nil {
		return nil, worktreeError("diff", name, err)
	}
	return &WorktreeDiff{Worktree: *man.Worktree, Patch: ch.Patch, Untracked: ch.Untracked}, nil
}

// removeWorktree removes name's worktree, if it has one, before its files
// go: refused (ErrInvalidStatus naming the work) while it holds work found
// nowhere else, unless force.
func (m *Manager) removeWorktree(ctx context.Context, name string, force bool) error {
	man, err := readManifest(m.dir(name))
	if err != nil || man.Worktree == nil {
		return nil
	}
	if err := worktree.Remove(ctx, man.Worktree, force); err != nil {
		return worktreeError("rm", name, err)
	}
	return nil
}

// discardWorktree undoes createWorktree after a spawn that failed, so a
// failed spawn leaves neither directory nor branch.
func discardWorktree(rec *Worktree) {
	// Its own context: a caller that gave up stops the spawn, not the
	// cleanup.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	worktree.Discard(ctx, rec)
}
