package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestWatch drives three `agentctl watch` in tmux panes, two smaller than
// the session, beside an attached driver: the watchers show what the
// program prints, keys typed into them reach nothing, and the session keeps
// the driver's size.
func TestWatch(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	run := tmuxFor(t, h)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "w1", "--env", "PS1=$ ", "--", "sh")
	run("new-session", "-d", "-s", "driver", "-x", "100", "-y", "30", bin.agentctl+" attach w1; sleep 60")
	// The watchers start once the driver has sized the session: a watcher
	// reads the size when it starts (its "top-left shown" line says it).
	await(t, 10*time.Second, "the driver to size the session 100x30", func() bool {
		var st wire.SessionStatus
		json.Unmarshal([]byte(h.ctl(0, "--json", "status", "w1")), &struct{ Result *wire.SessionStatus }{&st})
		return st.Cols == 100 && st.Rows == 30
	})
	sizes := [][2]int{{100, 30}, {60, 20}, {40, 10}}
	for i, sz := range sizes {
		run("new-session", "-d", "-s", fmt.Sprintf("watch%d", i), "-x", fmt.Sprint(sz[0]), "-y", fmt.Sprint(sz[1]),
			bin.agentctl+" watch w1; echo watcher-left; sleep 60")
	}
	pane := func(s string) string { return run("capture-pane", "-p", "-t", s) }
	await(t, 10*time.Second, "the driver's prompt", func() bool { return strings.Contains(pane("driver"), "$") })
	for i := range sizes {
		await(t, 10*time.Second, "watcher's view of the prompt", func() bool { return strings.Contains(pane(fmt.Sprintf("watch%d", i)), "$") })
	}
	if p := pane("watch2"); !strings.Contains(p, "100x30 session, top-left shown") {
		t.Errorf("a watcher smaller than the session does not say so:\n%s", p)
	}
	// Keys typed into a watcher go nowhere.
	run("send-keys", "-t", "watch0", "echo from-a-watcher", "Enter")
	// The driver types; every watcher sees it.
	run("send-keys", "-t", "driver", "echo driven-$((6*7))", "Enter")
	for i := range sizes {
		s := fmt.Sprintf("watch%d", i)
		await(t, 10*time.Second, s+" showing the driver's command", func() bool { return strings.Contains(pane(s), "driven-42") })
	}
	if strings.Contains(h.ctl(0, "snapshot", "w1"), "from-a-watcher") {
		t.Error("keys typed into a watcher reached the session")
	}
	var st wire.SessionStatus
	json.Unmarshal([]byte(h.ctl(0, "--json", "status", "w1")), &struct{ Result *wire.SessionStatus }{&st})
	if st.Cols != 100 || st.Rows != 30 {
		t.Errorf("session size %dx%d with watchers of other sizes, want the driver's 100x30", st.Cols, st.Rows)
	}
	// q leaves.
	run("send-keys", "-t", "watch1", "q")
	await(t, 10*time.Second, "the watcher to leave on q", func() bool { return strings.Contains(pane("watch1"), "watcher-left") })

	// Without a name: every session as a table, once off a terminal...
	table := h.ctl(0, "watch")
	if !strings.Contains(table, "w1") || !strings.Contains(table, "running") || !strings.Contains(table, "$") {
		t.Errorf("watch without a name printed:\n%s", table)
	}
	// ...and refreshed every second on one: a new session shows up.
	run("new-session", "-d", "-s", "top", "-x", "120", "-y", "20", bin.agentctl+" watch; echo table-left; sleep 60")
	await(t, 10*time.Second, "the table in its pane", func() bool { return strings.Contains(pane("top"), "w1") })
	h.ctl(0, "spawn", "w2", "--", "sh", "-c", "echo second-session; exec sleep 3600")
	await(t, 15*time.Second, "the new session in the live table", func() bool { return strings.Contains(pane("top"), "second-session") })
	run("send-keys", "-t", "top", "q")
	await(t, 10*time.Second, "the table to quit on q", func() bool { return strings.Contains(pane("top"), "table-left") })
}
