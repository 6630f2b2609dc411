// Package worktree gives an agent session a git worktree of its own, so
// parallel agents on one repository never edit the same checkout. It runs
// the real git binary for every step (git is both the tool and the oracle:
// what git says about a repository is what is true of it) and knows nothing
// of sessions or of agentd's wire contract: pkg/session calls Create at
// spawn, Diff for agentctl diff and Remove at rm, and keeps the Record in
// the session's manifest.
//
// Repositories with submodules are refused rather than handled: a new
// worktree's submodules are empty, and `git submodule update --init` would
// clone each one again from its URL (network, credentials, minutes), so a
// spawn that looks local would reach out, and one that fails half-way
// leaves a worktree whose submodules are missing. The error says so and
// names the way out (spawn without --worktree, or make the worktree by
// hand).
package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrInvalid marks a request that cannot be carried out as given (not a
// repository, a bare one, no commits, submodules, a branch in use); nothing
// was created.
var ErrInvalid = errors.New("invalid worktree request")

// ErrUnmerged marks a Remove refused because the worktree holds work found
// nowhere else; the error names it.
var ErrUnmerged = errors.New("worktree has unmerged work")

// Record is what a session keeps about its worktree.
type Record struct {
	// Repo is the main repository's top-level directory.
	Repo string `json:"repo"`
	// Path is the worktree's directory.
	Path string `json:"path"`
	// Branch is the branch checked out in it (short name).
	Branch string `json:"branch"`
	// Base is the commit the session started from.
	Base string `json:"base"`
	// NewBranch is true when Create made the branch, so a clean Remove
	// deletes it again.
	NewBranch bool `json:"new_branch,omitempty"`
}

// Request says where and how to make a worktree.
type Request struct {
	// Cwd is a directory inside the repository (the spawn's cwd).
	Cwd string
	// Name is the session's name: the default branch and directory name.
	Name string
	// Branch is an existing branch to check out, or a new one to create
	// at HEAD; empty is a new branch named Name.
	Branch string
	// Dir is the worktree's directory; empty is Root/<repo>-<hash>/Name.
	Dir string
	// Root is agentd's own directory of worktrees.
	Root string
}

// git runs git with args in dir and returns its trimmed standard output;
// a failure carries git's own message.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	// No pager, no prompts: agentd has no terminal to ask on.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Create makes the worktree and returns its Record and the directory the
// program should start in (Cwd's place inside the new worktree). On error
// nothing is left behind.
func Create(ctx context.Context, req Request) (*Record, string, error) {
	bare, err := git(ctx, req.Cwd, "rev-parse", "--is-bare-repository")
	if err != nil {
		return nil, "", invalidf("%s is not in a git repository; spawn --worktree from inside one (or give --cwd)", req.Cwd)
	}
	if bare == "true" {
		return nil, "", invalidf("%s is a bare repository, which has no checkout to branch from; spawn --worktree from a clone with a working tree", req.Cwd)
	}
	top, err := git(ctx, req.Cwd, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return nil, "", invalidf("%s is inside a git directory, not a working tree; spawn --worktree from the repository's checkout", req.Cwd)
	}
	// A worktree's own top level is not the main repository: the common
	// directory's parent is.
	common, err := git(ctx, req.Cwd, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, "", err
	}
	repo := top
	if filepath.Base(common) == ".git" {
		repo = filepath.Dir(common)
	}
	head, err := git(ctx, req.Cwd, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil || head == "" {
		return nil, "", invalidf("repository %s has no commits yet, so a worktree has nothing to start from; commit something first", top)
	}
	if _, err := os.Stat(filepath.Join(top, ".gitmodules")); err == nil {
		return nil, "", invalidf("repository %s has submodules, which a new worktree would have to clone again from their URLs; spawn without --worktree, or make the worktree by hand (git worktree add, git submodule update --init) and spawn there", top)
	}
	// git does not lock a branch against two `worktree add` at once (both
	// succeed), so creates in one repository take turns from the check of
	// the branch to its checkout.
	unlock := lockRepo(common)
	defer unlock()
	branch, newBranch := req.Branch, true
	if branch == "" {
		branch = req.Name
	}
	if _, err := git(ctx, req.Cwd, "check-ref-format", "--branch", branch); err != nil {
		return nil, "", invalidf("%q is not a valid branch name; give another with --worktree BRANCH", branch)
	}
	base := head
	if tip, err := git(ctx, req.Cwd, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil && tip != "" {
		if req.Branch == "" {
			return nil, "", invalidf("branch %q exists already; give it with --worktree %s to use it, or pick another session name", branch, branch)
		}
		if where := checkedOut(ctx, req.Cwd, branch); where != "" {
			return nil, "", invalidf("branch %q is checked out in %s; give another branch, or a new name to create one", branch, where)
		}
		base, newBranch = tip, false
	}
	dir := req.Dir
	if dir == "" {
		sum := sha256.Sum256([]byte(repo))
		dir = filepath.Join(req.Root, filepath.Base(repo)+"-"+hex.EncodeToString(sum[:4]), req.Name)
	}
	if !filepath.IsAbs(dir) {
		return nil, "", invalidf("worktree directory %q is relative; give an absolute path", dir)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, "", invalidf("worktree directory %s exists; remove it or give another with --worktree-dir", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, "", fmt.Errorf("create the worktree's parent directory: %w", err)
	}
	args := []string{"worktree", "add", "--quiet"}
	if newBranch {
		args = append(args, "-b", branch, dir, head)
	} else {
		args = append(args, dir, branch)
	}
	if _, err := git(ctx, req.Cwd, args...); err != nil {
		os.RemoveAll(dir)
		git(context.WithoutCancel(ctx), req.Cwd, "worktree", "prune")
		// What git refuses here is the request (a branch another spawn
		// took meanwhile, a directory it cannot make): git says which.
		return nil, "", invalidf("%v", err)
	}
	rec := &Record{Repo: repo, Path: dir, Branch: branch, Base: base, NewBranch: newBranch}
	cwd := dir
	if rel, err := filepath.Rel(top, req.Cwd); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		if st, err := os.Stat(filepath.Join(dir, rel)); err == nil && st.IsDir() {
			cwd = filepath.Join(dir, rel)
		}
	}
	return rec, cwd, nil
}

// repoLocks serialises Create per repository (by its common git
// directory) within this process; one agentd serves a person, so that is
// every create agentd makes. Entries stay: one small mutex per repository
// ever used.
var repoLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func lockRepo(common string) (unlock func()) {
	repoLocks.mu.Lock()
	if repoLocks.m == nil {
		repoLocks.m = map[string]*sync.Mutex{}
	}
	l := repoLocks.m[common]
	if l == nil {
		l = &sync.Mutex{}
		repoLocks.m[common] = l
	}
	repoLocks.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// checkedOut returns the worktree in which branch is checked out, or "".
func checkedOut(ctx context.Context, dir, branch string) string {
	out, err := git(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return ""
	}
	var path string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch refs/heads/"+branch {
			return path
		}
	}
	return ""
}

// Changes are a worktree's changes against the commit it started from.
type Changes struct {
	// Patch is `git diff BASE` in the worktree: committed and uncommitted
	// changes to tracked files.
	Patch string
	// Untracked lists new files git does not track yet (ignored ones
	// left out), relative to the worktree.
	Untracked []string
}

// Diff returns rec's changes since rec.Base.
func Diff(ctx context.Context, rec *Record) (*Changes, error) {
	if _, err := os.Stat(rec.Path); err != nil {
		return nil, invalidf("worktree %s is gone", rec.Path)
	}
	patch, err := git(ctx, rec.Path, "diff", "--no-color", "--no-ext-diff", rec.Base, "--")
	if err != nil {
		return nil, err
	}
	if patch != "" {
		patch += "\n"
	}
	un, err := git(ctx, rec.Path, "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	return &Changes{Patch: patch, Untracked: lines(un)}, nil
}

// Unmerged is work in a worktree found nowhere else.
type Unmerged struct {
	// Dirty are `git status --porcelain` lines: changed, staged and
	// untracked files.
	Dirty []string
	// Commits are the branch's commits on no other branch (local or
	// remote), one "hash subject" each.
	Commits []string
}

// Empty says there is nothing to lose.
func (u *Unmerged) Empty() bool { return len(u.Dirty) == 0 && len(u.Commits) == 0 }

// String names the work, for an error message.
func (u *Unmerged) String() string {
	var parts []string
	if len(u.Dirty) > 0 {
		parts = append(parts, "uncommitted: "+strings.Join(u.Dirty, ", "))
	}
	if len(u.Commits) > 0 {
		parts = append(parts, "commits on no other branch: "+strings.Join(u.Commits, ", "))
	}
	return strings.Join(parts, "; ")
}

// FindUnmerged lists rec's work found nowhere else.
func FindUnmerged(ctx context.Context, rec *Record) (*Unmerged, error) {
	u := &Unmerged{}
	if _, err := os.Stat(rec.Path); err == nil {
		st, err := git(ctx, rec.Path, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			return nil, err
		}
		u.Dirty = lines(st)
	}
	log, err := git(ctx, rec.Repo, "log", "--format=%h %s", "refs/heads/"+rec.Branch,
		"--not", "--exclude="+rec.Branch, "--branches", "--remotes")
	if err != nil {
		if _, verr := git(ctx, rec.Repo, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch); verr != nil {
			return u, nil // the branch is gone: nothing of it to lose
		}
		return nil, err
	}
	u.Commits = lines(log)
	return u, nil
}

// Remove removes rec's worktree. Without force it refuses (ErrUnmerged,
// naming the work) while the worktree has uncommitted changes or its branch
// has commits on no other branch, and deletes a branch Create made; with
// force it removes the directory whatever it holds and keeps the branch.
func Remove(ctx context.Context, rec *Record, force bool) error {
	if !force {
		u, err := FindUnmerged(ctx, rec)
		if err != nil {
			return err
		}
		if !u.Empty() {
			return fmt.Errorf("%w: worktree %s (branch %s) holds %s", ErrUnmerged, rec.Path, rec.Branch, u)
		}
	}
	if _, err := os.Stat(rec.Path); err == nil {
		args := []string{"worktree", "remove"}
		if force {
			args = append(args, "--force", "--force") // twice: also a locked one
		}
		if _, err := git(ctx, rec.Repo, append(args, rec.Path)...); err != nil {
			if !force {
				return err
			}
			if rerr := os.RemoveAll(rec.Path); rerr != nil {
				return fmt.Errorf("%v; and removing the directory: %w", err, rerr)
			}
		}
	}
	git(ctx, rec.Repo, "worktree", "prune")
	if !force && rec.NewBranch {
		// FindUnmerged found none of its commits unique, so -D loses nothing.
		git(ctx, rec.Repo, "branch", "-D", "--quiet", rec.Branch)
	}
	return nil
}

// Discard undoes Create after a spawn that failed: worktree and a branch
// Create made both go.
func Discard(ctx context.Context, rec *Record) {
	git(ctx, rec.Repo, "worktree", "remove", "--force", "--force", rec.Path)
	os.RemoveAll(rec.Path)
	git(ctx, rec.Repo, "worktree", "prune")
	if rec.NewBranch {
		git(ctx, rec.Repo, "branch", "-D", "--quiet", rec.Branch)
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
