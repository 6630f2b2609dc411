package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitHermetic keeps git from reading any global or system configuration
// and gives commits a fixed author; not parallel (t.Setenv).
func gitHermetic(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"AUTHOR", "COMMITTER"} {
		t.Setenv("GIT_"+k+"_NAME", "Test")
		t.Setenv("GIT_"+k+"_EMAIL", "test@example.invalid")
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSpawnWorktree(t *testing.T) {
	gitHermetic(t)
	repo := filepath.Join(t.TempDir(), "proj")
	gitRun(t, t.TempDir(), "init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "first")
	head := gitRun(t, repo, "rev-parse", "HEAD")

	env := newTestEnv(t)
	m := env.manager(t)
	ctx := testCtx(t, 30*time.Second)
	_, err := m.Spawn(ctx, SpawnRequest{Name: "w1", Cwd: repo, Worktree: &WorktreeRequest{},
		Argv: []string{"sh", "-c", "echo edited > a.txt; pwd > where"}})
	if err != nil {
		t.Fatal(err)
	}
	man, err := readManifest(m.dir("w1"))
	if err != nil {
		t.Fatal(err)
	}
	wt := man.Worktree
	if wt == nil || wt.Repo != repo || wt.Branch != "w1" || wt.Base != head ||
		!strings.HasPrefix(wt.Path, filepath.Join(env.opts.StateDir, "worktrees")+"/proj-") || man.Cwd != wt.Path {
		t.Fatalf("manifest %+v worktree %+v", man, wt)
	}
	await(t, 10*time.Second, "the program's edit", func() bool {
		b, _ := os.ReadFile(filepath.Join(wt.Path, "where"))
		return strings.TrimSpace(string(b)) == wt.Path
	})
	d, err := m.Diff(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Patch, "+edited") || len(d.Untracked) != 1 || d.Untracked[0] != "where" {
		t.Fatalf("diff %q %v", d.Patch, d.Untracked)
	}
	await(t, 10*time.Second, "the session to end", func() bool {
		info, err := m.Status(ctx, "w1")
		return err == nil && info.Status.Terminal()
	})
	err = m.Remove(ctx, "w1", false)
	wantErr(t, err, ErrInvalidStatus, "rm of a dirty worktree")
	if !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "rm --force") {
		t.Fatalf("refusal names no file or way out: %v", err)
	}
	if _, err := m.Status(ctx, "w1"); err != nil {
		t.Fatalf("refused rm removed the session: %v", err)
	}
	if err := m.Remove(ctx, "w1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("rm --force left the worktree: %v", err)
	}
	gitRun(t, repo, "rev-parse", "--verify", "refs/heads/w1")

	_, err = m.Diff(ctx, "nosuch")
	wantErr(t, err, ErrNotFound, "diff of no session")

	// Bad input: nothing created, neither session nor worktree nor branch.
	_, err = m.Spawn(ctx, SpawnRequest{Name: "w2", Cwd: t.TempDir(), Worktree: &WorktreeRequest{}, Argv: []string{"true"}})
	wantErr(t, err, ErrInvalid, "worktree outside a repository")
	if !strings.Contains(err.Error(), "is not in a git repository") {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.dir("w2")); !os.IsNotExist(err) {
		t.Fatalf("refused spawn left its directory: %v", err)
	}
	// A program that cannot start: the worktree and its branch go again.
	_, err = m.Spawn(ctx, SpawnRequest{Name: "w3", Cwd: repo, Worktree: &WorktreeRequest{}, Argv: []string{"/nonexistent/prog"}})
	wantErr(t, err, ErrSpawnFailed, "spawn of a missing program")
	if out := gitRun(t, repo, "branch", "--list", "w3"); out != "" {
		t.Fatalf("failed spawn kept its branch: %q", out)
	}
	if out := gitRun(t, repo, "worktree", "list"); strings.Contains(out, "w3") {
		t.Fatalf("failed spawn kept its worktree: %s", out)
	}
	// Spawned without one: diff says so.
	spawn(t, m, "plain", "true")
	_, err = m.Diff(ctx, "plain")
	wantErr(t, err, ErrInvalid, "diff without a worktree")
}
