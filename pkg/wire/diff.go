package wire

import "context"

// MethodDiff shows a session's changes in its own git worktree (spawn
// with Worktree) against the commit it started from.
const MethodDiff = "agent.diff"

// DiffParams name the session whose worktree to compare.
type DiffParams struct {
	Name string `json:"name"`
}

// Worktree is a session's own git worktree: the main repository's top
// directory, the worktree's, its branch and the commit the session
// started from.
type Worktree struct {
	Repo   string `json:"repo"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
}

// DiffResult is a session's worktree and its changes since the session
// started: Patch is `git diff BASE` in the worktree (committed and
// uncommitted changes to tracked files), Untracked the new files git does
// not track yet, relative to the worktree. A session without a worktree
// is invalid_params.
type DiffResult struct {
	Name      string   `json:"name"`
	Repo      string   `json:"repo"`
	Path      string   `json:"path"`
	Branch    string   `json:"branch"`
	Base      string   `json:"base"`
	Patch     string   `json:"patch"`
	Untracked []string `json:"untracked,omitempty"`
}

// Diff shows a session's worktree changes.
func (c *Client) Diff(ctx context.Context, name string) (*DiffResult, error) {
	return call[DiffResult](ctx, c, MethodDiff, DiffParams{Name: name})
}
