package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestFingerprintTellsBuildsApart(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nvar v = \"x\"\nfunc main() { println(v) }\n"), 0o644)
	build := func(name, ldflags string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GO111MODULE=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, b)
		}
		return out
	}
	a, a2, b := build("a", "-X main.v=1"), build("a2", "-X main.v=1"), build("b", "-X main.v=2")
	fa, err := Fingerprint(a)
	if err != nil {
		t.Fatal(err)
	}
	fa2, _ := Fingerprint(a2)
	fb, _ := Fingerprint(b)
	if fa != fa2 {
		t.Errorf("same build, fingerprints %s and %s", fa, fa2)
	}
	if fa == fb {
		t.Errorf("different builds share fingerprint %s", fa)
	}
	// A file that is not a Go binary is hashed whole.
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("not elf"), 0o644)
	if fp, err := Fingerprint(plain); err != nil || len(fp) != 24 {
		t.Errorf("plain file: %q %v, want a 24-hex-digit hash", fp, err)
	}
}
