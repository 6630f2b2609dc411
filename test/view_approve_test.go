package test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/internal/netnstest"
	"github.com/agentd/agentd/pkg/wire"
)

// forwardIntoNS makes 127.0.0.1:port of the test's own network namespace
// lead to 127.0.0.1:port inside ns, where agentd's view listens: the
// browser runs out here, and the same port keeps the Host header the view
// checks. It fails the test when the port is taken out here.
func forwardIntoNS(t *testing.T, ns *netnstest.NS, port int) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatalf("the view's port %d inside the namespace is taken outside it, where the browser runs: %v", port, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			out, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer out.Close()
				var in net.Conn
				// A socket made on the namespace's thread is the
				// namespace's for its whole life.
				if err := ns.Do(func() (err error) { in, err = net.Dial("tcp4", addr); return err }); err != nil {
					return
				}
				defer in.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(in, out); done <- struct{}{} }()
				go func() { io.Copy(out, in); done <- struct{}{} }()
				<-done
			}()
		}
	}()
}

// TestViewApprovesClaudeCode: the page's Approve answers a real Claude Code
// permission prompt (the CLI under the fake model server, in a
// loopback-only network namespace, as TestAgentCLIsReachEveryStateUnderAgentd
// runs it, without a tmux twin): the list shows the session first, with
// what it asks; a stale prompt id is refused with what is asked now; the
// button runs the tool, whose file appears on disk.
func TestViewApprovesClaudeCode(t *testing.T) {
	modules := agentCLIModules(t)
	t.Parallel()
	const step = 60 * time.Second
	var cli agentCLI
	for _, c := range agentCLIs {
		if c.name == "claude" {
			cli = c
		}
	}
	r := newCLIRig(t)
	h := r.h
	home, dir := filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "proj")
	for _, d := range []string{home, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	_, modelURL := r.fakeServer(cliScript(cli.tool))
	cli.setup(t, home, dir, modelURL)
	args := []string{"spawn", "cc", "--size", "100x30", "--cwd", dir}
	for _, kv := range append([]string{"HOME=" + home, "LANG=C.UTF-8", "COLORTERM=truecolor", "TERM=xterm-256color"}, cli.env(modelURL)...) {
		args = append(args, "--env", kv)
	}
	h.ctl(0, append(append(args, "--"), cli.argv(modules)...)...)
	h.ctl(0, "spawn", "idle", "--", "sleep", "600")
	w := &twin{r: r, name: "cc"}
	until := func(re string) {
		t.Helper()
		if _, errOut, code := h.agentctl("", "wait", "cc", "--until", re, "--timeout", step.String()); code != 0 {
			t.Fatalf("agentctl wait --until %q: exit %d: %s\nscreen:\n%s", re, code, errOut, w.ourScreen())
		}
	}

	// Trust the folder, then ask for the tool.
	until(cli.trust)
	w.awaitState(wire.StateNeedsAttention, "trust", step)
	trust := func() {
		// Keys typed before the dialog reads its input are lost: let it
		// settle, and press a step's key again when its screen does not
		// come, as a person would (the dialog has two choices, so pressing
		// down again reaches the wanted one whether the first press was
		// lost or not).
		h.ctl(0, "wait", "cc", "--idle", "250ms", "--timeout", "10s")
		for i, k := range cli.trustKeys {
			h.ctl(0, "send", "cc", "--keys", k)
			if i >= len(cli.trustSteps) {
				continue
			}
			for try := 1; ; try++ {
				if _, _, code := h.agentctl("", "wait", "cc", "--until", cli.trustSteps[i], "--timeout", "5s"); code == 0 {
					break
				}
				if try == 4 {
					until(cli.trustSteps[i])
				}
				t.Logf("%q did not show within 5 s of %s; pressing it again", cli.trustSteps[i], k)
				h.ctl(0, "send", "cc", "--keys", k)
			}
		}
	}
	trust()
	// A dialog drawn again (keys read before it was ready) is answered
	// again, as the agent CLIs' own test does.
	trustRE := regexp.MustCompile(cli.trust)
	for i := 0; i < 3 && w.awaitStateUnless(wire.StateWaiting, wire.StateNeedsAttention, step); i++ {
		if w.stillAsks(trustRE, 3*time.Second) {
			t.Logf("claude asked to trust the folder again")
			trust()
		}
	}
	until(cli.idle)
	h.ctl(0, "send", "cc", toolPrompt)
	until(regexp.QuoteMeta(toolPrompt))
	h.ctl(0, "wait", "cc", "--idle", "250ms", "--timeout", "10s")
	h.ctl(0, "send", "cc", "--keys", "enter")
	perm := regexp.MustCompile(cli.permission)
	for deadline, next := time.Now().Add(step), time.Now().Add(8*time.Second); !perm.MatchString(w.ourScreen()); {
		if time.Now().After(deadline) {
			t.Fatalf("no permission prompt:\n%s", w.ourScreen())
		}
		if time.Now().After(next) {
			t.Logf("the prompt was not taken after 8s: pressing enter again")
			h.ctl(0, "send", "cc", "--keys", "enter")
			next = time.Now().Add(8 * time.Second)
		}
		time.Sleep(50 * time.Millisecond) // polling the screen, with a deadline
	}
	d := w.awaitState(wire.StateNeedsApproval, "permission", step)
	if _, err := os.Stat(filepath.Join(dir, "approved.txt")); err == nil {
		t.Fatal("approved.txt exists before the approval")
	}

	// The page, in a browser outside the namespace.
	u := h.viewURL("cc")
	pu, _ := url.Parse(u)
	port := 0
	fmt.Sscan(pu.Port(), &port)
	forwardIntoNS(t, r.ns, port)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "cc first in the list, highlighted, asking to run touch approved.txt, with Approve", func() bool {
		first, _ := eval[[]string](ctx, `(() => { const tr = document.querySelector("#rows tr"); if (!tr) return [];
			return [tr.dataset.name, tr.className, tr.querySelector(".asks").textContent, String(!!tr.querySelector("button.approve"))]; })()`)
		return len(first) == 4 && first[0] == "cc" && strings.Contains(first[1], "needs") &&
			strings.Contains(first[2], "touch approved.txt") && first[3] == "true"
	})
	// A prompt id that is not the one asked now: refused, saying what is.
	if _, err := eval[bool](ctx, `answer("cc", "0000000000000000", false); true`); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the page to say the stale approval was refused", func() bool {
		n := pageText(ctx, "notice")
		return strings.Contains(n, "approve refused") && strings.Contains(n, "asks something else now (prompt "+d.PromptID) && strings.Contains(n, "nothing was typed")
	})
	if f := os.Getenv("AGENTD_VIEW_SCREENSHOT"); f != "" {
		if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(f, png, 0o600)
		}
	}
	// The list redraws its rows as states come, and a row redrawn between
	// chromedp's finding the button and reading its box is a node gone
	// ("Could not find node with given id", seen beside two CPU hogs): a
	// person's click lands on what is drawn then, so click again.
	var clickErr error
	await(t, 10*time.Second, "a click on cc's Approve button", func() bool {
		clickErr = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows tr[data-name="cc"] button.approve`)))
		if clickErr != nil && !strings.Contains(clickErr.Error(), "Could not find node") {
			t.Fatal(clickErr)
		}
		return clickErr == nil
	})
	await(t, 10*time.Second, "the page to say it approved", func() bool { return strings.Contains(pageText(ctx, "notice"), "cc: approved") })
	await(t, step, "the tool's file on disk", func() bool {
		_, err := os.Stat(filepath.Join(dir, "approved.txt"))
		return err == nil
	})
	until(regexp.QuoteMeta(toolReply))
	w.awaitState(wire.StateWaiting, "", step)
	// The list no longer offers to approve anything.
	await(t, 10*time.Second, "the Approve button to go", func() bool {
		n, _ := eval[int](ctx, `document.querySelectorAll("button.approve").length`)
		return n == 0
	})
}
