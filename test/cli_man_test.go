package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIManPagesDoNotBakeInTheBuildersPaths: the pages are made once and
// read on other machines, so none may hold the home or runtime directory
// of whoever made them (the socket's default is shown as its rule), and
// each page is titled by its own command.
func TestCLIManPagesDoNotBakeInTheBuildersPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gen := filepath.Join(dir, "agentctl-man")
	// Built with the test's own environment (HOME holds the build cache);
	// the odd directories are the generator's, where the defaults come from.
	if out, err := exec.Command("go", "build", "-tags", "mangen", "-o", gen, "../cmd/agentctl").CombinedOutput(); err != nil {
		t.Fatalf("build the man page generator: %v\n%s", err, out)
	}
	oddHome, oddRuntime := filepath.Join(dir, "odd-home-q7"), filepath.Join(dir, "odd-runtime-z3")
	cmd := exec.Command(gen, "__man", filepath.Join(dir, "man"))
	cmd.Env = []string{"HOME=" + oddHome, "XDG_RUNTIME_DIR=" + oddRuntime, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agentctl __man: %v\n%s", err, out)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "man", "*.1"))
	if len(pages) < 10 {
		t.Fatalf("%d man pages, want one per command", len(pages))
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		text := string(b)
		for _, odd := range []string{"odd-home-q7", "odd-runtime-z3", "/tmp/agentd-"} {
			if strings.Contains(text, odd) {
				t.Errorf("%s holds %q, a path of the machine that made it", filepath.Base(p), odd)
			}
		}
		title := strings.ToUpper(strings.TrimSuffix(filepath.Base(p), ".1"))
		if !strings.Contains(text, `.TH "`+title+`" "1"`) {
			t.Errorf("%s is not titled %s:\n%.200s", filepath.Base(p), title, text)
		}
	}
	spawn, _ := os.ReadFile(filepath.Join(dir, "man", "agentctl-spawn.1"))
	if !strings.Contains(string(spawn), "$AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock") {
		t.Errorf("agentctl-spawn.1 does not give the socket's default as its rule:\n%s", spawn)
	}
}
