package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/internal/netnstest"
	"github.com/agentd/agentd/pkg/session"
)

// The prompt and reply of the turn after the reboot.
const (
	afterPrompt = "fm-after-reboot"
	afterReply  = "Back after the reboot."
)

// conversationStores are where each CLI keeps its conversations under
// HOME, as globs: where a restart looks for the one to resume.
var conversationStores = map[string]string{
	"claude": ".claude/projects/*/*.jsonl",
	"codex":  ".codex/sessions/*/*/*/rollout-*.jsonl",
	"gemini": ".gemini/tmp/*/chats/session-*.json*",
}

// TestAgentCLIsResumeTheirConversationAfterAReboot: each real agent CLI
// under agentd (offline, against the fake model) answers one turn; the
// machine "reboots" (agentd, worker and program killed, a new boot id);
// the next agentd starts it again in its resume form on that
// conversation (claude --resume ID, codex resume ID, gemini --resume ID),
// and the next request the model receives carries the turn from before.
func TestAgentCLIsResumeTheirConversationAfterAReboot(t *testing.T) {
	modules := agentCLIModules(t)
	for _, cli := range agentCLIs {
		t.Run(cli.name, func(t *testing.T) {
			t.Parallel()
			resumeAfterReboot(t, cli, modules)
		})
	}
}

func resumeAfterReboot(t *testing.T, cli agentCLI, modules string) {
	const step = 60 * time.Second
	h := newHome(t)
	ns := netnstest.New(t)
	h.start = func(cmd *exec.Cmd) error {
		cmd.Env = withoutCIMarkers(cmd.Env)
		return ns.Start(cmd)
	}
	boot := filepath.Join(t.TempDir(), "boot_id")
	writeFile(t, boot, "boot-one\n")
	seam := session.BootIDFileEnv + "=" + boot
	d := h.startDaemon(nil, seam)

	l, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	script := cliScript(cli.tool)
	script.Turns = append(script.Turns, fakemodel.Turn{Prompt: afterPrompt, Steps: []fakemodel.Step{fakemodel.Text(afterReply)}})
	srv := fakemodel.New(script)
	go srv.Serve(l)
	url := "http://" + l.Addr().String()

	root := t.TempDir()
	home, dir := filepath.Join(root, "home"), filepath.Join(root, "proj")
	for _, p := range []string{home, dir} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cli.setup(t, home, dir, url)
	const name = "agent"
	args := []string{"spawn", name, "--restart", "on-reboot", "--size", "100x30", "--cwd", dir}
	for _, kv := range append([]string{"HOME=" + home, "LANG=C.UTF-8", "COLORTERM=truecolor", "TERM=xterm-256color"}, cli.env(url)...) {
		args = append(args, "--env", kv)
	}
	h.ctl(0, append(append(args, "--"), cli.argv(modules)...)...)

	wait := func(re string) {
		t.Helper()
		if _, errOut, code := h.agentctl("", "wait", name, "--until", re, "--timeout", step.String()); code != 0 {
			out, _, _ := h.agentctl("", "snapshot", name)
			t.Fatalf("wait --until %q: exit %d: %s\nscreen:\n%s", re, code, errOut, out)
		}
	}
	settle := func() { h.agentctl("", "wait", name, "--idle", "500ms", "--timeout", "10s") }
	// submit types a prompt and, once it shows, presses enter until reply
	// comes (enterUntilTaken). A CLI still loading (Gemini CLI restoring
	// a conversation) may drop what is typed: typed again, once its echo
	// has not come within 10 s.
	submit := func(text, reply string) {
		t.Helper()
		for try := 1; ; try++ {
			h.ctl(0, "send", name, text)
			if _, _, code := h.agentctl("", "wait", name, "--until", regexp.QuoteMeta(text), "--timeout", "10s"); code == 0 {
				break
			}
			if try == 3 {
				wait(regexp.QuoteMeta(text))
			}
			t.Logf("%q was not echoed within 10 s; typing it again", text)
		}
		enterUntilTaken(t, h, name, text, regexp.QuoteMeta(reply), step)
	}

	wait(cli.trust)
	// Keys typed before the dialog reads its input are lost: let it settle.
	settle()
	for i, k := range cli.trustKeys {
		h.ctl(0, "send", name, "--keys", k)
		if i < len(cli.trustSteps) {
			wait(cli.trustSteps[i])
		}
	}
	if cli.trusted != nil {
		await(t, step, "the CLI trusting the folder", func() bool { return cli.trusted(h.ctl(0, "snapshot", name)) })
	}
	wait(cli.idle)
	settle()
	submit(helloPrompt, helloReply)
	wait(cli.idle)

	// The conversation is in the CLI's store, where a restart looks. A
	// CLI writes the reply once its stream has ended, which the screen
	// does not show: the turn is over when the store has it.
	var stored []string
	await(t, 30*time.Second, "the reply in the CLI's store", func() bool {
		stored, _ = filepath.Glob(filepath.Join(home, conversationStores[cli.name]))
		for _, f := range stored {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), helloReply) {
				return true
			}
		}
		return false
	})

	// The CLI's hooks told its conversation: the one a restart resumes.
	var told string
	await(t, 30*time.Second, "the conversation id from the CLI's hooks", func() bool {
		told = sessionStatus(t, h, name).Conversation
		return told != ""
	})

	// The fake model records a request once its answer is written, after
	// the screen shows it: requests are picked by when they came, and
	// looked for until they are recorded.
	rebooted := time.Now()
	simulateReboot(t, h, d, boot, "boot-two", name)
	start := time.Now()
	h.startDaemon(nil, seam)
	awaitRestarted(t, h, name, 2*time.Second)
	t.Logf("%s running again %s after agentd was started (store %q)", cli.name, time.Since(start), stored)
	st := sessionStatus(t, h, name)
	if st.ResumeID == "" || st.Agent != cli.name || !slices.Contains(st.Argv, st.ResumeID) {
		t.Fatalf("after the reboot: argv %q, resume %q, agent %q; want the %s resume form", st.Argv, st.ResumeID, st.Agent, cli.name)
	}
	if st.ResumeID != told {
		t.Errorf("resumed %s, the hooks told %s", st.ResumeID, told)
	}
	if cli.name == "claude" && !strings.HasSuffix(stored[0], "/"+st.ResumeID+".jsonl") {
		t.Errorf("resumed %s, the store holds %q", st.ResumeID, stored)
	}

	// The resumed CLI takes a prompt, and the next request the model
	// receives carries the earlier turn.
	wait(cli.idle)
	if cli.name == "gemini" {
		// Gemini CLI draws its prompt before it restores the
		// conversation, then takes the prompt away while it restores
		// (what is typed then is lost) and draws it again below the
		// restored turn: that is when it reads.
		await(t, step, "Gemini CLI's prompt below the restored turn", func() bool {
			s := h.ctl(0, "snapshot", name)
			i := strings.Index(s, helloReply)
			return i >= 0 && strings.Contains(s[i:], "Type your message") && !strings.Contains(s, "Resuming session")
		})
	}
	settle()
	submit(afterPrompt, afterReply)
	var next *fakemodel.Request
	var after []fakemodel.Request
	for deadline := time.Now().Add(30 * time.Second); next == nil; {
		after = after[:0]
		for _, r := range srv.Requests() {
			if r.Time.After(rebooted) {
				after = append(after, r)
			}
		}
		for i, r := range after {
			if r.HasTools && strings.Contains(r.Prompt, afterPrompt) {
				next = &after[i]
				break
			}
		}
		if next == nil && time.Now().After(deadline) {
			var lines []string
			for _, r := range after {
				lines = append(lines, "  "+r.String())
			}
			t.Fatalf("no request after the reboot carried %q within 30 s of its reply on screen:\n%s", afterPrompt, strings.Join(lines, "\n"))
		}
		if next == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, want := range []string{helloPrompt, helloReply} {
		if !strings.Contains(string(next.Body), want) {
			t.Errorf("the first request after the reboot does not carry the earlier turn's %q:\n%s", want, next.Body)
		}
	}
	if events := h.ctl(0, "logs", name, "--events"); !strings.Contains(events, "resumed the "+cli.name+" conversation "+st.ResumeID) {
		t.Errorf("the restarted record does not say the conversation was resumed")
	}
	// Stop it now: the namespace goes with the test.
	h.agentctl("", "stop", name, "--signal", "KILL")
}
