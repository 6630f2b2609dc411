package test

// Desktop notifications of an agent's states, end to end: the real Claude
// Code under agentd against the fake model in a loopback-only network
// namespace (agentcli_harness_test.go), agentd showing its notifications
// on a real dunst on a private bus and X server (notify_desk_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/internal/netnstest"
	"github.com/agentd/agentd/pkg/wire"
)

// notifyWaitingAfter is the threshold the test's daemon is given: above
// any short turn on a loaded machine, below the long turn's.
const (
	notifyWaitingAfter = 6 * time.Second
	longTurnLead       = 9 * time.Second
	shortTurns         = 10
)

// received is a state change as the test's subscriber got it.
type received struct {
	c  wire.StateChange
	at time.Time
}

func TestNotificationsOfARealAgent(t *testing.T) {
	t.Parallel()
	modules := agentCLIModules(t)
	dk := startDesk(t)
	cli := agentCLIs[0] // Claude Code
	if cli.name != "claude" {
		t.Fatalf("agentCLIs[0] is %s, want claude", cli.name)
	}

	// The rig: agentd in a network namespace with the fake model, its
	// notifications on the desk's bus.
	h := newHome(t)
	ns := netnstest.New(t)
	h.start = func(cmd *exec.Cmd) error {
		cmd.Env = withoutCIMarkers(cmd.Env)
		return ns.Start(cmd)
	}
	writeFile(t, filepath.Join(h.config, "agentd", "config.toml"),
		fmt.Sprintf("notify_waiting_after = %q\nnotify_terminal = \"/bin/true\"\n", notifyWaitingAfter))
	h.startDaemon(nil, "DBUS_SESSION_BUS_ADDRESS="+dk.addr)
	r := &cliRig{t: t, ns: ns, h: h}

	var script fakemodel.Script
	for i := range shortTurns {
		script.Turns = append(script.Turns, fakemodel.Turn{Prompt: fmt.Sprintf("fm-short-%d", i),
			Steps: []fakemodel.Step{fakemodel.Text(fmt.Sprintf("Short reply %d.", i))}})
	}
	script.Turns = append(script.Turns,
		fakemodel.Turn{Prompt: toolPrompt, Steps: []fakemodel.Step{{Tool: &cli.tool}, fakemodel.Text(toolReply)}},
		fakemodel.Turn{Prompt: "fm-long-turn", Steps: []fakemodel.Step{{Text: "Long reply.", Lead: longTurnLead}}})

	home, proj := filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "proj")
	for _, d := range []string{home, proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_, url := r.fakeServer(script)
	cli.setup(t, home, proj, url)
	trustProject(t, home, proj) // no trust dialog: the notifications counted are the turns'

	// A subscriber of the test's own, for the figures.
	var mu sync.Mutex
	var got []received
	sub, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		var c wire.StateChange
		if n.Method == wire.NotifyStateChange && json.Unmarshal(n.Params, &c) == nil {
			mu.Lock()
			got = append(got, received{c, time.Now()})
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	subCtx, endSub := context.WithCancel(context.Background())
	defer endSub()
	go sub.Subscribe(subCtx, wire.SubscribeParams{Names: nil, Follow: true})

	const name = "cc"
	args := []string{"spawn", name, "--size", "100x30", "--cwd", proj, "--agent", "claude"}
	for _, kv := range append([]string{"HOME=" + home, "LANG=C.UTF-8", "TERM=xterm-256color"}, cli.env(url)...) {
		args = append(args, "--env", kv)
	}
	h.ctl(0, append(append(args, "--"), cli.argv(modules)...)...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := h.agentctl("", "snapshot", name)
			t.Logf("the screen at the end:\n%s", out)
			out, _, _ = h.agentctl("", "logs", name, "--events")
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, `"type":"state"`) || strings.Contains(l, `"type":"input"`) {
					t.Logf("log: %.300s", l)
				}
			}
			for _, c := range dk.allCalls() {
				t.Logf("%s %s %q", c.at.Format("15:04:05.000"), c.member, c.summary())
			}
		}
	})
	const step = 60 * time.Second
	ctlWait(t, h, name, cli.idle, step)
	awaitStatus(t, h, name, wire.StateWaiting, step)

	// Ten short turns: no notification at all.
	for i := range shortTurns {
		submitPrompt(t, h, name, fmt.Sprintf("fm-short-%d", i), regexp.QuoteMeta(fmt.Sprintf("Short reply %d.", i)), step)
		awaitStatus(t, h, name, wire.StateWaiting, step)
	}
	if calls := dk.notifies(""); len(calls) != 0 {
		t.Fatalf("after %d short turns: %d notifications (%q), want none", shortTurns, len(calls), calls[0].summary())
	}

	// A permission prompt: exactly one notification, with Approve, Deny
	// and Open; Approve from dunst's menu makes the tool run.
	submitPrompt(t, h, name, toolPrompt, cli.permission, step)
	d := awaitStatusDetail(t, h, name, wire.StateNeedsApproval, step)
	await(t, 10*time.Second, "the approval's notification", func() bool { return len(dk.fresh("needs approval")) == 1 })
	await(t, 10*time.Second, "dunst showing it", func() bool { return dk.displayed() == 1 })
	// The hook tells the prompt before Claude Code draws it: the
	// notification may come first without Approve and Deny, and get them
	// in place once the screen shows the prompt.
	await(t, 10*time.Second, "the approval's notification with approve, deny, open", func() bool {
		calls := dk.notifies("needs approval")
		return slices.Equal(calls[len(calls)-1].actions(), []string{"approve", "deny", "open"})
	})
	if _, err := os.Stat(filepath.Join(proj, "approved.txt")); err == nil {
		t.Fatal("approved.txt exists before the approval")
	}
	// Picked at once: a key typed in the instant a dialog is drawn may
	// reach Claude Code before the dialog reads keys, so approve lets a
	// fresh prompt settle before it types (approveSettle).
	menu := dk.pick("approve")
	if !strings.Contains(menu, "#Approve ("+name+" needs approval)") {
		t.Errorf("dunst's menu lacks Approve of %s:\n%s", name, menu)
	}
	await(t, step, "the tool's effect on disk (approved.txt)", func() bool {
		_, err := os.Stat(filepath.Join(proj, "approved.txt"))
		return err == nil
	})
	await(t, 10*time.Second, "the notification gone once answered", func() bool { return dk.displayed() == 0 })
	ctlWait(t, h, name, regexp.QuoteMeta(toolReply), step)
	awaitStatus(t, h, name, wire.StateWaiting, step)
	if calls := dk.fresh(""); len(calls) != 1 {
		t.Errorf("the permission prompt gave %d notifications, want exactly one", len(calls))
	}
	// agentd closes it when the prompt is answered (dunst may have closed
	// it already, on the action).
	await(t, 10*time.Second, "agentd closing the answered prompt's notification", func() bool {
		for _, c := range dk.allCalls() {
			if c.member == "CloseNotification" {
				return true
			}
		}
		return false
	})
	t.Logf("prompt %s approved from dunst's menu", d.PromptID)

	// A turn longer than notify_waiting_after: one notification that it
	// waits.
	submitPrompt(t, h, name, "fm-long-turn", cli.working+"|"+regexp.QuoteMeta("Long reply."), step)
	awaitStatus(t, h, name, wire.StateWaiting, step)
	await(t, 10*time.Second, "the waiting notification", func() bool { return len(dk.notifies("is waiting")) == 1 })
	await(t, 10*time.Second, "dunst showing it", func() bool { return dk.displayed() == 1 })
	if calls := dk.fresh(""); len(calls) != 2 {
		t.Errorf("after the long turn: %d notifications, want 2 (the approval, the wait)", len(calls))
	}

	// The figures: screen change → state event (the last output record
	// before each state record, to the subscriber's receipt), and state →
	// notification shown (the state record to dunst's window mapped).
	endSub()
	mu.Lock()
	changes := slices.Clone(got)
	mu.Unlock()
	outputs := outputTimes(t, h, name)
	var toEvent []time.Duration
	for _, rc := range changes {
		if rc.c.Kind != wire.ChangeState {
			continue
		}
		i := sort.Search(len(outputs), func(i int) bool { return outputs[i].seq >= rc.c.Seq }) - 1
		if i < 0 {
			continue
		}
		toEvent = append(toEvent, rc.at.Sub(outputs[i].ts))
	}
	var toShown []time.Duration
	for _, want := range []string{wire.StateNeedsApproval, "long wait"} {
		for _, rc := range changes {
			st := rc.c.State
			if st == wire.StateWaiting && rc.c.TurnMS >= notifyWaitingAfter.Milliseconds() {
				st = "long wait"
			}
			if st == want {
				if m, ok := dk.mappedAfter(rc.c.TS); ok {
					toShown = append(toShown, m.Sub(rc.c.TS))
					for _, c := range dk.allCalls() {
						if c.member == "Notify" && c.at.After(rc.c.TS) {
							t.Logf("%s: state recorded %s, Notify called +%s, dunst's window mapped +%s", want,
								rc.c.TS.Format("15:04:05.000"), c.at.Sub(rc.c.TS).Round(time.Millisecond), m.Sub(rc.c.TS).Round(time.Millisecond))
							break
						}
					}
				}
				break
			}
		}
	}
	sort.Slice(toEvent, func(i, j int) bool { return toEvent[i] < toEvent[j] })
	if len(toEvent) == 0 || len(toShown) != 2 {
		t.Fatalf("figures: %d screen→event samples, %d state→shown samples (want 2)", len(toEvent), len(toShown))
	}
	t.Logf("screen change → state event: median %s, min %s, max %s (%d changes)", toEvent[len(toEvent)/2].Round(time.Millisecond),
		toEvent[0].Round(time.Millisecond), toEvent[len(toEvent)-1].Round(time.Millisecond), len(toEvent))
	t.Logf("state → notification shown: approval %s, long wait %s", toShown[0].Round(time.Millisecond), toShown[1].Round(time.Millisecond))
}

// trustProject marks proj trusted in Claude Code's ~/.claude.json.
func trustProject(t *testing.T, home, proj string) {
	t.Helper()
	p := filepath.Join(home, ".claude.json")
	var m map[string]any
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["projects"] = map[string]any{proj: map[string]any{"hasTrustDialogAccepted": true}}
	writeJSONFile(t, p, m)
}

// ctlWait waits until the session's screen matches re.
func ctlWait(t *testing.T, h *home, name, re string, timeout time.Duration) {
	t.Helper()
	if _, errOut, code := h.agentctl("", "wait", name, "--until", re, "--timeout", timeout.String()); code != 0 {
		t.Fatalf("agentctl wait %s --until %q: exit %d: %s\nscreen:\n%s", name, re, code, errOut, h.ctl(0, "snapshot", name))
	}
}

// submitPrompt types a prompt, presses enter once the screen is quiet,
// and waits for taken (pressing enter again while it does not come, as a
// person would).
func submitPrompt(t *testing.T, h *home, name, text, taken string, timeout time.Duration) {
	t.Helper()
	h.ctl(0, "send", name, text)
	ctlWait(t, h, name, regexp.QuoteMeta(text), timeout)
	enterUntilTaken(t, h, name, text, taken, timeout)
}

// enterUntilTaken presses enter once the screen is quiet, and again every
// 8 s while taken does not show, as a person would: an agent CLI busy
// with itself may lose an Enter (Gemini CLI restoring a conversation),
// and an Enter on an empty prompt does nothing in any of them.
func enterUntilTaken(t *testing.T, h *home, name, text, taken string, timeout time.Duration) {
	t.Helper()
	h.ctl(0, "wait", name, "--idle", "250ms", "--timeout", "5s")
	h.ctl(0, "send", name, "--keys", "enter")
	deadline := time.Now().Add(timeout)
	for {
		_, _, code := h.agentctl("", "wait", name, "--until", taken, "--timeout", "8s")
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q was never taken (no %q):\n%s", text, taken, h.ctl(0, "snapshot", name))
		}
		t.Logf("%q not taken after 8s; pressing enter again", text)
		h.ctl(0, "send", name, "--keys", "enter")
	}
}

// awaitStatus waits until agentctl status says state.
func awaitStatus(t *testing.T, h *home, name, state string, timeout time.Duration) {
	t.Helper()
	awaitStatusDetail(t, h, name, state, timeout)
}

// awaitStatusDetail waits until agentctl status says state and returns
// what it asks.
func awaitStatusDetail(t *testing.T, h *home, name, state string, timeout time.Duration) wire.StateDetail {
	t.Helper()
	var st wire.SessionStatus
	await(t, timeout, name+" "+state, func() bool {
		var env struct{ Result wire.SessionStatus }
		if json.Unmarshal([]byte(h.ctl(0, "--json", "status", name)), &env) != nil {
			return false
		}
		st = env.Result
		// An asking state is awaited with its prompt id (a hook tells it
		// before the screen shows the prompt's choices).
		return st.State == state && (state != wire.StateNeedsApproval || st.StateDetail != nil && st.StateDetail.PromptID != "")
	})
	if st.StateDetail != nil {
		return *st.StateDetail
	}
	return wire.StateDetail{}
}

// logRecord is an event-log record's seq and time.
type logRecord struct {
	seq uint64
	ts  time.Time
}

// outputTimes are the session's output records, in order.
func outputTimes(t *testing.T, h *home, name string) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range strings.Split(h.ctl(0, "logs", name, "--events"), "\n") {
		var ev wire.LogEvent
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == wire.EventOutput {
			out = append(out, logRecord{ev.Seq, ev.TS})
		}
	}
	return out
}
