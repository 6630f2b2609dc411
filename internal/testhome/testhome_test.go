package testhome

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The running tests are inside a private home: HOME, the XDG directories
// and TMPDIR all lie under one directory in the real temp directory.
func TestTheTestsRunInAPrivateHome(t *testing.T) {
	home := os.Getenv("HOME")
	root := filepath.Dir(home)
	if !strings.HasPrefix(filepath.Base(root), Prefix) || os.Getenv("TMPDIR") != root {
		t.Fatalf("HOME=%s TMPDIR=%s; want both in one %s* directory", home, os.Getenv("TMPDIR"), Prefix)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TMUX_TMPDIR", "HISTFILE"} {
		if v := os.Getenv(k); !strings.HasPrefix(v, root+"/") && v != root {
			t.Errorf("%s=%q; want it under %s", k, v, root)
		}
	}
	if v := os.Getenv("XDG_RUNTIME_DIR"); v != "" {
		t.Errorf("XDG_RUNTIME_DIR=%q is inherited; want it unset", v)
	}
	if d := t.TempDir(); !strings.HasPrefix(d, root+"/") {
		t.Errorf("t.TempDir() is %s; want it under %s", d, root)
	}
}

// Snapshot and Added find what a run leaves: a new file or directory in
// the temp directory, a new state directory deep in HOME, a history file
// appended to; and ignore a sibling's private home.
func TestAddedNamesWhatARunLeft(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".local", "state"), 0o700)
	hist := filepath.Join(home, ".bash_history")
	os.WriteFile(hist, []byte("ls\n"), 0o600)
	os.Chtimes(hist, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	before := Snapshot(home, tmp)
	if left := before.Added(Snapshot(home, tmp)); len(left) != 0 {
		t.Fatalf("nothing changed, yet Added reports %q", left)
	}
	os.WriteFile(hist, []byte("ls\necho leaked\n"), 0o600)
	os.Mkdir(filepath.Join(home, ".local", "state", "agentd"), 0o700)
	os.Mkdir(filepath.Join(tmp, "agentctl-bin123"), 0o700)
	os.Mkdir(filepath.Join(tmp, Prefix+"42"), 0o700)
	os.WriteFile(filepath.Join(tmp, ".X41-lock"), nil, 0o600)
	os.WriteFile(filepath.Join(tmp, ".tX42-lock"), nil, 0o600)
	got := before.Added(Snapshot(home, tmp))
	want := []string{hist, filepath.Join(home, ".local", "state", "agentd"), filepath.Join(tmp, "agentctl-bin123")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Added = %q, want %q", got, want)
	}
}

// A private home whose test binary died (a -timeout panics it before any
// clean-up) is removed by the next run; a live one is left.
func TestAStaleHomeIsRemoved(t *testing.T) {
	tmp := t.TempDir()
	stale, live, young := filepath.Join(tmp, Prefix+"1"), filepath.Join(tmp, Prefix+"2"), filepath.Join(tmp, Prefix+"3")
	for _, d := range []string{stale, live, young} {
		os.Mkdir(d, 0o700)
	}
	// 2147483647 is above any pid_max: no process has it.
	os.WriteFile(filepath.Join(stale, ownerFile), []byte("2147483647"), 0o600)
	os.WriteFile(filepath.Join(live, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
	removeStale(tmp)
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the home of a dead test binary is still there")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the home of this running test binary was removed")
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a home still being made (no owner yet) was removed")
	}
}
