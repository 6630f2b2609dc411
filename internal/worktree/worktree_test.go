package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// Every test here runs in a private home and temp directory (testhome), as
// in every other package: a t.TempDir in the real /tmp while other
// packages' tests run beside is, to their checks, something left behind.
func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }

// hermetic makes git read no global or system configuration and commit as
// a fixed person, so the tests see only what they set up.
func hermetic(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"AUTHOR", "COMMITTER"} {
		t.Setenv("GIT_"+k+"_NAME", "Test")
		t.Setenv("GIT_"+k+"_EMAIL", "test@example.invalid")
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newRepo makes a repository with one commit of a.txt.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	if err := exec.Command("git", "init", "-q", "-b", "main", dir).Run(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.txt"), "one\n")
	run(t, dir, "add", "a.txt")
	run(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTwoWorktreesOwnChanges(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	repo := newRepo(t)
	root := t.TempDir()
	head := run(t, repo, "rev-parse", "HEAD")
	a, cwdA, err := Create(ctx, Request{Cwd: repo, Name: "alpha", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Create(ctx, Request{Cwd: repo, Name: "beta", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if cwdA != a.Path || a.Path == b.Path || !strings.HasPrefix(a.Path, root) {
		t.Fatalf("paths: %s %s %s", cwdA, a.Path, b.Path)
	}
	if a.Base != head || a.Branch != "alpha" || !a.NewBranch || a.Repo != repo {
		t.Fatalf("record %+v, head %s", a, head)
	}
	write(t, filepath.Join(a.Path, "a.txt"), "alpha was here\n")
	write(t, filepath.Join(b.Path, "a.txt"), "beta was here\n")
	write(t, filepath.Join(b.Path, "new.txt"), "x\n")
	da, err := Diff(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Diff(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(da.Patch, "+alpha was here") || strings.Contains(da.Patch, "beta") || len(da.Untracked) != 0 {
		t.Fatalf("alpha's diff: %q %v", da.Patch, da.Untracked)
	}
	if !strings.Contains(db.Patch, "+beta was here") || !slices.Equal(db.Untracked, []string{"new.txt"}) {
		t.Fatalf("beta's diff: %q %v", db.Patch, db.Untracked)
	}
	// A commit in the worktree still shows against the base.
	run(t, a.Path, "commit", "-q", "-am", "alpha's change")
	if da, _ = Diff(ctx, a); !strings.Contains(da.Patch, "+alpha was here") {
		t.Fatalf("committed change missing: %q", da.Patch)
	}
	if got := run(t, repo, "show", "HEAD:a.txt"); got != "one" {
		t.Fatalf("main checkout changed: %q", got)
	}

	err = Remove(ctx, b, false)
	if !errors.Is(err, ErrUnmerged) || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "new.txt") {
		t.Fatalf("dirty remove: %v", err)
	}
	err = Remove(ctx, a, false)
	if !errors.Is(err, ErrUnmerged) || !strings.Contains(err.Error(), "alpha's change") {
		t.Fatalf("unmerged commit remove: %v", err)
	}
	if err := Remove(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Path); !os.IsNotExist(err) {
		t.Fatalf("forced remove left %s: %v", b.Path, err)
	}
	run(t, repo, "rev-parse", "--verify", "refs/heads/beta") // kept
	if strings.Contains(run(t, repo, "worktree", "list"), b.Path) {
		t.Fatal("git still lists the removed worktree")
	}

	// Clean: removed, and the branch agentd made goes too.
	c, _, err := Create(ctx, Request{Cwd: repo, Name: "gamma", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, c, false); err != nil {
		t.Fatal(err)
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "-q", "refs/heads/gamma"); err == nil {
		t.Fatal("clean remove kept the new branch")
	}
}

func TestCreateKeepsSubdirAndExistingBranch(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	repo := newRepo(t)
	os.Mkdir(filepath.Join(repo, "sub"), 0o755)
	write(t, filepath.Join(repo, "sub", "f"), "f\n")
	run(t, repo, "add", ".")
	run(t, repo, "commit", "-q", "-m", "sub")
	run(t, repo, "branch", "feature")
	dir := filepath.Join(t.TempDir(), "wt")
	rec, cwd, err := Create(ctx, Request{Cwd: filepath.Join(repo, "sub"), Name: "s", Branch: "feature", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Path != dir || cwd != filepath.Join(dir, "sub") || rec.Branch != "feature" || rec.NewBranch {
		t.Fatalf("record %+v cwd %s", rec, cwd)
	}
	// Clean, existing branch: the directory goes, the branch stays.
	if err := Remove(ctx, rec, false); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "rev-parse", "--verify", "refs/heads/feature")
}

func TestCreateRefuses(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	repo := newRepo(t)
	empty := filepath.Join(t.TempDir(), "empty")
	exec.Command("git", "init", "-q", empty).Run()
	bare := filepath.Join(t.TempDir(), "bare.git")
	exec.Command("git", "clone", "-q", "--bare", repo, bare).Run()
	withSub := newRepo(t)
	write(t, filepath.Join(withSub, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib\n")
	run(t, withSub, "add", ".gitmodules")
	run(t, withSub, "commit", "-q", "-m", "sub")
	other := t.TempDir()
	run(t, repo, "worktree", "add", "-q", "-b", "busy", filepath.Join(other, "busy"))

	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"outside", Request{Cwd: t.TempDir(), Name: "x"}, "is not in a git repository"},
		{"no commits", Request{Cwd: empty, Name: "x"}, "has no commits yet"},
		{"bare", Request{Cwd: bare, Name: "x"}, "is a bare repository"},
		{"submodules", Request{Cwd: withSub, Name: "x"}, "has submodules"},
		{"checked out elsewhere", Request{Cwd: repo, Name: "x", Branch: "busy"}, `branch "busy" is checked out in ` + filepath.Join(other, "busy")},
		{"checked out here", Request{Cwd: repo, Name: "x", Branch: "main"}, `branch "main" is checked out in ` + repo},
		{"default branch exists", Request{Cwd: repo, Name: "busy"}, `branch "busy" exists already`},
		{"bad branch", Request{Cwd: repo, Name: "x", Branch: "a..b"}, "is not a valid branch name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			_, _, err := Create(ctx, Request{Cwd: tc.req.Cwd, Name: tc.req.Name, Branch: tc.req.Branch, Root: root})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Fatalf("created %v", ents)
			}
		})
	}
	if got := run(t, repo, "branch", "--list", "x"); got != "" {
		t.Fatalf("a refused create made a branch: %q", got)
	}
}

// TestConcurrentCreateOneBranch: two creates of one existing branch at
// once; git's own locking lets exactly one check it out, and the other is
// refused as invalid with nothing left behind.
func TestConcurrentCreateOneBranch(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	repo := newRepo(t)
	run(t, repo, "branch", "shared")
	root := t.TempDir()
	errs := make(chan error, 2)
	for _, name := range []string{"one", "two"} {
		go func() {
			_, _, err := Create(ctx, Request{Cwd: repo, Name: name, Branch: "shared", Root: root})
			errs <- err
		}()
	}
	var ok, refused int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, ErrInvalid):
			refused++
		default:
			t.Fatalf("not an invalid request: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d created, %d refused; want one each", ok, refused)
	}
	if n := strings.Count(run(t, repo, "worktree", "list", "--porcelain"), "branch refs/heads/shared"); n != 1 {
		t.Fatalf("shared is checked out %d times", n)
	}
}
