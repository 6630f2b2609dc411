package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// gitEnv keeps git (in the test and in agentd and its sessions) from
// reading any global or system configuration, and commits as a fixed
// person.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid"}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// diffJSON is `agentctl diff NAME --json`'s result.
func (h *home) diffJSON(name string) wire.DiffResult {
	h.t.Helper()
	out := h.ctl(0, "diff", name, "--json")
	var env envelope
	var d wire.DiffResult
	if err := json.Unmarshal([]byte(out), &env); err != nil || json.Unmarshal(env.Result, &d) != nil {
		h.t.Fatalf("diff --json: %v\n%s", err, out)
	}
	return d
}

// gitRepo makes a repository with one commit of notes.txt.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "proj")
	gitIn(t, filepath.Dir(repo), "init", "-q", "-b", "main", repo)
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("shared line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// TestWorktreePerSession is issue 22's proof for worktrees: two sessions on
// one repository edit the same file, each in its own worktree; diff shows
// each its own; rm refuses the dirty one naming the file, rm --force
// removes the directory and keeps the branch, and a clean one goes with
// its branch.
func TestWorktreePerSession(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil, gitEnv...)
	repo := gitRepo(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")

	for _, s := range []string{"ann", "bob"} {
		h.ctl(0, "spawn", s, "--cwd", repo, "--worktree", "--", "sh", "-c", "echo "+s+" was here > notes.txt; echo done")
	}
	paths := map[string]string{}
	for _, s := range []string{"ann", "bob"} {
		h.ctl(0, "wait", s, "--exit", "--timeout", "20s")
		d := h.diffJSON(s)
		other := map[string]string{"ann": "bob", "bob": "ann"}[s]
		if d.Branch != s || d.Base != head || d.Repo != repo || !strings.Contains(d.Patch, "+"+s+" was here") ||
			strings.Contains(d.Patch, other) || !strings.HasPrefix(d.Path, filepath.Join(h.state, "agentd", "worktrees")) {
			t.Fatalf("diff of %s: %+v", s, d)
		}
		paths[s] = d.Path
		if human := h.ctl(0, "diff", s); !strings.Contains(human, "-shared line") || !strings.Contains(human, "+"+s+" was here") {
			t.Fatalf("agentctl diff %s:\n%s", s, human)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(b) != "shared line\n" {
		t.Fatalf("the main checkout changed: %q", b)
	}

	// Dirty: refused, naming the file and the way out; nothing removed.
	_, errOut, code := h.agentctl("", "rm", "ann")
	if code != 17 || !strings.Contains(errOut, "notes.txt") || !strings.Contains(errOut, "--force") {
		t.Fatalf("rm of a dirty worktree: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(paths["ann"]); err != nil {
		t.Fatalf("refused rm touched the worktree: %v", err)
	}
	h.ctl(0, "status", "ann")
	// --force: directory gone, branch kept, with ann's work on it.
	h.ctl(0, "rm", "--force", "ann")
	if _, err := os.Stat(paths["ann"]); !os.IsNotExist(err) {
		t.Fatalf("rm --force left %s: %v", paths["ann"], err)
	}
	gitIn(t, repo, "rev-parse", "--verify", "refs/heads/ann")

	// A commit on no other branch is unmerged work too.
	gitIn(t, paths["bob"], "commit", "-q", "-am", "bob's note")
	_, errOut, code = h.agentctl("", "rm", "bob")
	if code != 17 || !strings.Contains(errOut, "bob's note") {
		t.Fatalf("rm of an unmerged commit: exit %d, stderr %q", code, errOut)
	}
	// Merged into main: clean, so rm removes worktree and branch.
	gitIn(t, repo, "merge", "-q", "--ff-only", "bob")
	h.ctl(0, "rm", "bob")
	if _, err := os.Stat(paths["bob"]); !os.IsNotExist(err) {
		t.Fatalf("rm left %s: %v", paths["bob"], err)
	}
	if out := gitIn(t, repo, "branch", "--list", "bob"); out != "" {
		t.Fatalf("rm of a clean worktree kept its branch: %q", out)
	}
}

// TestWorktreeBranchAndDir: --worktree BRANCH with an existing branch,
// --worktree-dir, and a program started in the same subdirectory.
func TestWorktreeBranchAndDir(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil, gitEnv...)
	repo := gitRepo(t)
	os.Mkdir(filepath.Join(repo, "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "sub", "f"), []byte("f\n"), 0o644)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "sub")
	gitIn(t, repo, "branch", "feature")
	dir := filepath.Join(t.TempDir(), "wt")
	h.ctl(0, "spawn", "feat", "--cwd", filepath.Join(repo, "sub"), "--worktree", "feature", "--worktree-dir", dir, "--", "sh", "-c", "pwd; sleep 30")
	await(t, 10*time.Second, "pwd on the screen", func() bool {
		return strings.Contains(h.ctl(0, "snapshot", "feat"), filepath.Join(dir, "sub"))
	})
	d := h.diffJSON("feat")
	if st := h.ctl(0, "status", "feat"); !strings.Contains(st, "worktree:") || !strings.Contains(st, dir+", branch feature from ") {
		t.Fatalf("status shows no worktree:\n%s", st)
	}
	if d.Path != dir || d.Branch != "feature" {
		t.Fatalf("diff: %+v", d)
	}
	// A branch checked out elsewhere is refused, nothing created.
	_, errOut, code := h.agentctl("", "spawn", "feat2", "--cwd", repo, "--worktree=feature", "--", "true")
	if code != 2 || !strings.Contains(errOut, `branch "feature" is checked out in `+dir) {
		t.Fatalf("busy branch: exit %d, stderr %q", code, errOut)
	}
	h.ctl(13, "status", "feat2")
	h.ctl(0, "rm", "--force", "feat")
	gitIn(t, repo, "rev-parse", "--verify", "refs/heads/feature")
}

// TestWorktreeBadInput: each refused with a clear error (invalid_params,
// exit 2), and nothing created: no session, no worktree, no branch.
func TestWorktreeBadInput(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil, gitEnv...)
	repo := gitRepo(t)
	empty := filepath.Join(t.TempDir(), "empty")
	gitIn(t, filepath.Dir(empty), "init", "-q", empty)
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitIn(t, filepath.Dir(bare), "clone", "-q", "--bare", repo, bare)
	withSub := gitRepo(t)
	os.WriteFile(filepath.Join(withSub, ".gitmodules"), []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib\n"), 0o644)
	gitIn(t, withSub, "add", ".gitmodules")
	gitIn(t, withSub, "commit", "-q", "-m", "submodule")

	for _, tc := range []struct {
		cwd  string
		args []string
		want string
	}{
		{t.TempDir(), nil, "is not in a git repository"},
		{empty, nil, "has no commits yet"},
		{bare, nil, "is a bare repository"},
		{withSub, nil, "has submodules"},
		{repo, []string{"--worktree=main"}, `branch "main" is checked out in ` + repo},
	} {
		args := []string{"spawn", "bad", "--cwd", tc.cwd}
		if tc.args == nil {
			args = append(args, "--worktree")
		}
		args = append(append(args, tc.args...), "--", "true")
		_, errOut, code := h.agentctl("", args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agentctl %s: exit %d, stderr %q, want exit 2 and %q", strings.Join(args, " "), code, errOut, tc.want)
		}
		h.ctl(13, "status", "bad")
	}
	if _, errOut, code := h.agentctl("", "spawn", "x", "--worktree-dir", "/tmp/x", "--", "true"); code != 2 || !strings.Contains(errOut, "--worktree-dir needs --worktree") {
		t.Errorf("--worktree-dir alone: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{{"diff", "--help"}, {"spawn", "--help"}, {"rm", "--help"}} {
		if out, _, code := h.agentctl("", args...); code != 0 || !strings.Contains(out, "worktree") {
			t.Errorf("agentctl %s: exit %d, no word of worktrees:\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, errOut, code := h.agentctl("", "diff", "nosuch"); code != 13 {
		t.Errorf("diff of no session: exit %d, stderr %q", code, errOut)
	}
	h.ctl(0, "spawn", "plain", "--", "true")
	if _, errOut, code := h.agentctl("", "diff", "plain"); code != 2 || !strings.Contains(errOut, "has no worktree") {
		t.Errorf("diff without a worktree: exit %d, stderr %q", code, errOut)
	}
	if ents, _ := os.ReadDir(filepath.Join(h.state, "agentd", "worktrees")); len(ents) != 0 {
		t.Errorf("refused spawns left worktrees: %v", ents)
	}
	if out := gitIn(t, repo, "branch", "--list", "bad"); out != "" {
		t.Errorf("a refused spawn made a branch: %q", out)
	}
}

// TestRunInAWorktree: run takes spawn's --worktree and --worktree-dir. With
// --rm a clean worktree goes with its session and its branch; one holding
// work stays with its session, run says so on stderr, and the exit status
// is still the program's.
func TestRunInAWorktree(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil, gitEnv...)
	repo := gitRepo(t)

	out, errOut, code := h.agentctl("", "run", "--rm", "clean", "--cwd", repo, "--worktree", "--", "sh", "-c", "cat notes.txt; pwd")
	if code != 0 || !strings.Contains(out, "shared line") || !strings.Contains(out, filepath.Join(h.state, "agentd", "worktrees")) {
		t.Fatalf("run --rm --worktree of a clean program: exit %d, stdout %q, stderr %q; want 0, the file, a directory under the state", code, out, errOut)
	}
	h.ctl(13, "status", "clean")
	if got := gitIn(t, repo, "branch", "--list", "clean"); got != "" {
		t.Errorf("run --rm of a clean worktree kept its branch: %q", got)
	}

	_, errOut, code = h.agentctl("", "run", "--rm", "dirty", "--cwd", repo, "--worktree", "--", "sh", "-c", "echo dirty was here > notes.txt; exit 3")
	if code != 3 || !strings.Contains(errOut, "run --rm: session dirty stays") || !strings.Contains(errOut, "notes.txt") {
		t.Fatalf("run --rm --worktree of a program that left changes: exit %d, stderr %q; want 3 and why the session stays", code, errOut)
	}
	if d := h.diffJSON("dirty"); !strings.Contains(d.Patch, "+dirty was here") {
		t.Errorf("the kept worktree's diff: %+v", d)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(b) != "shared line\n" {
		t.Errorf("the main checkout changed: %q", b)
	}

	// BRANCH after a space, as spawn takes it, and --worktree-dir.
	gitIn(t, repo, "branch", "feature")
	dir := filepath.Join(t.TempDir(), "wt")
	out, errOut, code = h.agentctl("", "run", "feat", "--cwd", repo, "--worktree", "feature", "--worktree-dir", dir, "--", "pwd")
	if code != 0 || !strings.Contains(out, dir) {
		t.Fatalf("run --worktree feature --worktree-dir %s: exit %d, stdout %q, stderr %q", dir, code, out, errOut)
	}
	if d := h.diffJSON("feat"); d.Path != dir || d.Branch != "feature" {
		t.Errorf("diff of run's worktree: %+v; want %s on branch feature", d, dir)
	}
	if _, errOut, code := h.agentctl("", "run", "x", "--worktree-dir", dir, "--", "true"); code != 2 || !strings.Contains(errOut, "--worktree-dir needs --worktree") {
		t.Errorf("run --worktree-dir alone: exit %d, stderr %q", code, errOut)
	}
	h.ctl(0, "rm", "--force", "dirty", "feat")
}
