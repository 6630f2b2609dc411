package test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecord records a session as asciicast and has the real asciinema
// play it back: what it prints is what `agentctl logs` prints.
func TestRecord(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "rec", "--", "sh", "-c", `printf 'h\303\251llo\n'; sleep 0.3; printf '\033[1mw\303\266rld\033[0m 你好\n'; exec sleep 3600`)
	h.ctl(0, "wait", "rec", "--until", "你好", "--timeout", "20s")
	file := filepath.Join(t.TempDir(), "rec.cast")
	h.ctl(0, "record", "rec", "-o", file, "--idle-limit", "2s")

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	var hdr map[string]any
	if err := json.Unmarshal(sc.Bytes(), &hdr); err != nil {
		t.Fatalf("header %q: %v", sc.Text(), err)
	}
	if hdr["version"] != 2.0 || hdr["width"] == nil || hdr["height"] == nil || !strings.Contains(hdr["command"].(string), "sh -c") {
		t.Errorf("header %v: want version 2, the size and the command", hdr)
	}
	var last float64
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		if at := ev[0].(float64); at < last {
			t.Errorf("time went back at %q", sc.Text())
		} else {
			last = at
		}
	}
	logs := h.ctl(0, "logs", "rec")
	if asciinema, err := exec.LookPath("asciinema"); err == nil {
		// asciinema cat opens /dev/tty, so it runs under script(1).
		out := filepath.Join(t.TempDir(), "played")
		if msg, err := exec.Command("script", "-q", "-c", asciinema+" cat "+file+" > "+out, "/dev/null").CombinedOutput(); err != nil {
			t.Fatalf("asciinema cat: %v\n%s", err, msg)
		}
		played, _ := os.ReadFile(out)
		if string(played) != logs {
			t.Errorf("asciinema plays %q, agentctl logs prints %q", played, logs)
		}
	} else {
		t.Log("asciinema is not installed (apt-get install asciinema); the recording was only parsed")
	}

	// Bad input.
	_, errOut, code := h.agentctl("", "record", "rec", "-o", file)
	if code != 2 || !strings.Contains(errOut, "--force") {
		t.Errorf("record over an existing file: exit %d %q, want 2 naming --force", code, errOut)
	}
	h.ctl(0, "record", "rec", "-o", file, "--force")
	_, errOut, code = h.agentctl("", "record", "rec", "--since", "1m", "--until", "2h")
	if code != 2 || !strings.Contains(errOut, "swap") {
		t.Errorf("--since after --until: exit %d %q, want 2", code, errOut)
	}
	_, errOut, code = h.agentctl("", "record", "rec", "--since", "yesterday")
	if code != 2 || !strings.Contains(errOut, "duration ago") {
		t.Errorf("a bad --since: exit %d %q, want 2 saying what it takes", code, errOut)
	}
	if _, _, code = h.agentctl("", "record", "nobody"); code == 0 || code == 2 {
		t.Errorf("record of a session that does not exist: exit %d, want the not-found status", code)
	}
	// -f: the recording grows while the session runs, a line per event.
	live := filepath.Join(t.TempDir(), "live.cast")
	h.ctl(0, "spawn", "tick", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9; do echo tick-$i; sleep 0.3; done")
	cmd := exec.Command(bin.agentctl, "record", "tick", "-f", "-o", live)
	cmd.Env = h.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "tick-2 in the live recording while the session runs", func() bool {
		b, _ := os.ReadFile(live)
		return strings.Contains(string(b), "tick-2")
	})
	if out := h.ctl(0, "status", "tick"); !strings.Contains(out, "running") {
		t.Logf("the session ended before the check; the recording still grew line by line:\n%s", out)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("record -f: %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("record -f did not end with the session")
	}
	if b, _ := os.ReadFile(live); !strings.Contains(string(b), "tick-9") {
		t.Errorf("the live recording lacks the last tick:\n%s", b)
	}

	// A period with nothing in it: a valid header and no events.
	empty := h.ctl(0, "record", "rec", "--until", time.Now().Add(-time.Hour).Format(time.RFC3339))
	if lines := strings.Split(strings.TrimSpace(empty), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], `{"version":2`) {
		t.Errorf("an empty period recorded as %q, want the header alone", empty)
	}
}
