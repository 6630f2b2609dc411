package test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveLine is one line agentctl serve wrote.
type serveLine struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// parseServeOutput reads every stdout line as JSON; a line that is not is
// a failure (stdout must carry only protocol lines).
func parseServeOutput(t *testing.T, out string) map[string]serveLine {
	t.Helper()
	byID := map[string]serveLine{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var sl serveLine
		if err := json.Unmarshal([]byte(l), &sl); err != nil {
			t.Fatalf("stdout line %.200q is not JSON: %v", l, err)
		}
		byID[string(sl.ID)] = sl
	}
	return byID
}

// wantError checks that the answer to id is an error with code whose
// message holds every one of want.
func wantError(t *testing.T, byID map[string]serveLine, id, code string, want ...string) {
	t.Helper()
	l, ok := byID[id]
	if !ok || l.Error == nil || l.Error.Code != code {
		t.Errorf("answer to id %s: %+v (found %v), want error %s", id, l, ok, code)
		return
	}
	for _, w := range want {
		if !strings.Contains(l.Error.Message, w) {
			t.Errorf("answer to id %s: %q does not say %q", id, l.Error.Message, w)
		}
	}
}

func TestServeFromAShellPipe(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	// A 20 MiB line between requests: answered with an error carrying its
	// id, and the session goes on.
	script := `
{
  echo '{"id": 1, "method": "agent.hello", "params": {"version": 1}}'
  echo 'this is not json'
  echo '[{"id": 2, "method": "agent.list"}]'
  echo '{"id": 3, "params": {}}'
  echo '{"id": "four", "method": "agent.status", "params": {"name": "s1"}}'
  echo '{"id": "sp", "method": "agent.spawn", "params": {"name": "sh1", "argv": ["sh"]}}'
  echo '{"id": "ask", "method": "agent.ask", "params": {"name": "sh1", "text": "echo ok-$((6*7))", "until": "ok-42", "timeout_ms": 20000}}'
  echo '{"id": 5, "method": "agent.status", "params": {"name": "ghost"}}'
  echo '{"id": 6, "method": 42}'
  echo '{"id": 7, "method": "agent.list", "params": [1]}'
  echo '{"id": 8, "method": "agent.attach", "params": {"name": "s1"}}'
  echo '{"id": 9, "method": "agent.frobnicate"}'
  printf '{"id": "big", "method": "agent.send", "params": {"name": "s1", "text": "'
  head -c 20971520 /dev/zero | tr '\0' a
  echo '"}}'
  printf '%s\n' '{"id": [10], "method": "agent.send", "params": {"name": "s1", "text": "after\n"}}'
  echo '{"method": "agent.list"}'
} | "$AGENTCTL" serve
`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = h.env("AGENTCTL=" + bin.agentctl)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentctl serve in a pipe: %v\nstderr: %s", err, stderr.String())
	}
	byID := parseServeOutput(t, string(out))
	var hello struct{ Methods []string }
	if l := byID["1"]; l.Error != nil || json.Unmarshal(l.Result, &hello) != nil || !strings.Contains(strings.Join(hello.Methods, " "), "agent.act") {
		t.Errorf("hello answered %+v, want the daemon's method list", l)
	}
	var st struct{ Name, Status string }
	if l := byID[`"four"`]; l.Error != nil || json.Unmarshal(l.Result, &st) != nil || st.Name != "s1" {
		t.Errorf("a string id: %+v, want s1's status with the id echoed", l)
	}
	// Lines run in order: the ask waits for nothing but the spawn before it.
	var ask struct{ Answer string }
	if l := byID[`"ask"`]; l.Error != nil || json.Unmarshal(l.Result, &ask) != nil || !strings.Contains(ask.Answer, "ok-42") {
		t.Errorf("ask right after spawn: %+v, want the answer ok-42", l)
	}
	wantError(t, byID, "3", "malformed_frame", `no "method"`, `{"id": 1, "method": "agent.hello", "params": {}}`)
	wantError(t, byID, "5", "agent_not_found", "ghost")
	wantError(t, byID, "6", "malformed_frame", "not a string")
	wantError(t, byID, "7", "invalid_params", "must be a JSON object")
	wantError(t, byID, "8", "invalid_params", "agentctl attach")
	wantError(t, byID, "9", "unknown_method")
	wantError(t, byID, `"big"`, "malformed_frame", "longer than the 16777216-byte limit")
	if l := byID["[10]"]; l.Error != nil || l.Result == nil {
		t.Errorf("the request after the 20 MiB line: %+v, want it answered", l)
	}
	var unmatched int
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, `{"error"`) {
			unmatched++
		}
	}
	if unmatched != 2 {
		t.Errorf("%d error lines without an id, want 2 (not JSON, an array):\n%s", unmatched, out)
	}
	if len(strings.Split(strings.TrimSpace(string(out)), "\n")) != 15 {
		t.Errorf("stdout has %d lines, want one per request (15):\n%.3000s", len(strings.Split(string(out), "\n")), out)
	}
	await(t, 10*time.Second, "s1 to show the text sent after the long line", func() bool {
		return strings.Contains(h.ctl(0, "snapshot", "s1"), "after")
	})
}

// longLineMiB is the line TestServeLongLineStaysSmall sends: well past the
// frame cap, so keeping it would show in the process's peak memory.
const longLineMiB = 96

func TestServeLongLineStaysSmall(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	cmd := exec.Command(bin.agentctl, "serve")
	cmd.Env = h.env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stdout)
	go func() {
		w := bufio.NewWriter(stdin)
		w.WriteString(`{"id": 1, "method": "agent.hello", "params": {"client": "`)
		chunk := strings.Repeat("x", 1<<20)
		for i := 0; i < longLineMiB; i++ {
			w.WriteString(chunk)
		}
		w.WriteString("\"}}\n{\"id\": 2, \"method\": \"agent.hello\"}\n")
		w.Flush()
	}()
	for _, want := range []string{`{"id":1,"error":{"code":"malformed_frame"`, `{"id":2,"result":`} {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("line %.200q %v, want it to start %s", line, err, want)
		}
	}
	// The line was skipped, not kept: the peak resident memory is bounded
	// by the frame cap, below the line's own size.
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			t.Logf("peak resident memory %d MiB after a %d MiB line", kb>>10, longLineMiB)
			if kb > longLineMiB<<10 {
				t.Errorf("agentctl serve peaked at %d MiB reading a %d MiB line, want less than the line", kb>>10, longLineMiB)
			}
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after stdin closed: %v, want exit 0", err)
	}
}

func TestServeStdinClosedMidRequest(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "cat")
	cmd := exec.Command(bin.agentctl, "serve")
	cmd.Env = h.env()
	stdin, _ := cmd.StdinPipe()
	var out, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A wait that takes a second is in flight, and the last line is cut
	// off, when stdin closes: the wait is still answered, the cut line
	// gets its error, and serve exits 0.
	io.WriteString(stdin, `{"id": "w", "method": "agent.wait", "params": {"name": "s1", "until": "never-printed", "timeout_ms": 1000}}`+"\n")
	io.WriteString(stdin, `{"id": "cut", "method": "agent.li`)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not end after stdin closed")
	}
	byID := parseServeOutput(t, out.String())
	wantError(t, byID, `"w"`, "timeout")
	wantError(t, byID, `"cut"`, "malformed_frame", "not JSON")
}

// serveClient is the python3 program that drives agentctl serve.
const serveClient = `
import json, subprocess, sys

p = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

def send(obj):
    p.stdin.write(json.dumps(obj) + "\n")
    p.stdin.flush()

def answer(id):
    # Notifications may come between answers; keep them.
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("serve ended before answering %r" % (id,))
        msg = json.loads(line)
        if "id" not in msg:
            notes.append(msg)
            continue
        if msg["id"] != id:
            sys.exit("answer for %r, expected %r" % (msg["id"], id))
        return msg

notes = []
send({"id": "hello", "method": "agent.hello", "params": {"version": 1}})
assert "agent.spawn" in answer("hello")["result"]["methods"]
send({"id": 2, "method": "agent.spawn", "params": {"name": "py", "argv": ["cat"]}})
assert answer(2)["result"]["status"] in ("starting", "running")
send({"id": 3, "method": "channel.register_channel", "params": {"channel_id": "py.chan"}})
assert answer(3)["result"]["channel_id"] == "py.chan"
send({"id": 4, "method": "channel.push_to_channel", "params": {"channel_id": "py.chan", "message": {"hi": "there"}}})
assert "error" not in answer(4)
while not any(n["method"] == "channel.message" for n in notes):
    line = p.stdout.readline()
    notes.append(json.loads(line))
msg = [n for n in notes if n["method"] == "channel.message"][0]
assert msg["params"]["message"] == {"hi": "there"}, msg
send({"id": 5, "method": "agent.status", "params": {"name": "nobody"}})
assert answer(5)["error"]["code"] == "agent_not_found"
# A followed log streams beside the requests that follow it.
send({"id": 6, "method": "agent.logs", "params": {"name": "py", "follow": True}})
send({"id": 7, "method": "agent.send", "params": {"name": "py", "text": "ping\n"}})
assert "error" not in answer(7)
def pinged():
    return any(n["method"] == "agent.log_event" and "ping" in n["params"].get("data", "") for n in notes)
while not pinged():
    notes.append(json.loads(p.stdout.readline()))
# Closing stdin ends the stream without an answer, and serve exits 0.
p.stdin.close()
rest = [json.loads(l) for l in p.stdout.read().splitlines()]
assert all("id" not in m for m in rest), rest
assert p.wait() == 0
print("ok")
`

func TestServeFromPython(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	h := newHome(t)
	h.startDaemon(nil)
	prog := filepath.Join(t.TempDir(), "client.py")
	os.WriteFile(prog, []byte(serveClient), 0o600)
	cmd := exec.Command("python3", prog, bin.agentctl)
	cmd.Env = h.env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python3 client: %v\n%s\nstderr: %s", err, out, stderr.String())
	}
}
