package test

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIBuildFingerprintIgnoresHomeAndCheckout: `agentctl version`
// compares the running daemon's build fingerprint with the installed
// binary's, so two builds of one source must agree whoever builds them and
// wherever the checkout is (the Makefile's -trimpath). Built here twice,
// the second from a copy of the tree under another $HOME; the Go caches are
// shared, so both builds are mostly cache hits.
func TestCLIBuildFingerprintIgnoresHomeAndCheckout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goenv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	caches := []string{"GOCACHE=" + goenv("GOCACHE"), "GOMODCACHE=" + goenv("GOMODCACHE"), "GOPATH=" + goenv("GOPATH")}
	oddHome := filepath.Join(dir, "another-home")
	src := filepath.Join(oddHome, "src", "agentd")
	copyTree(t, "..", src)

	version := func(srcDir, home string) string {
		t.Helper()
		out := filepath.Join(dir, filepath.Base(home)+"-agentd")
		// As the Makefile builds it; -buildvcs=false as the copy has no .git.
		build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", out, "./cmd/agentd")
		build.Dir = srcDir
		build.Env = append(os.Environ(), append(caches, "HOME="+home)...)
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build in %s: %v\n%s", srcDir, err, b)
		}
		v, err := exec.Command(out, "version").Output()
		if err != nil || !strings.Contains(string(v), "(build ") {
			t.Fatalf("%s version: %v, %q", out, err, v)
		}
		return string(v)
	}
	here := version("..", os.Getenv("HOME"))
	there := version(src, oddHome)
	if here != there {
		t.Errorf("agentd version built here: %q; from a copy under another $HOME: %q; want the same fingerprint", here, there)
	}
}

// copyTree copies the source tree from to to, without .git and bin.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.Name() == ".git" || rel == "bin" { // .git is a file in a worktree
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy the source tree: %v", err)
	}
}
