package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notifyScreens draws Claude Code's recorded screens (pkg/agentstate's
// testdata) and takes one key at a time, appending each to $2: it works,
// asks, works, asks again, works 2.5 s and waits, then exits.
const notifyScreens = `d=$1 keys=$2
show() { printf '\033[2J\033[H%s' "$(cat "$d/claude-80x24-$1.txt")"; }
key() { stty raw -echo; dd bs=1 count=1 2>/dev/null >> "$keys"; stty sane; }
show working; key; show permission; key; show working; key; show permission; key
show working; sleep 2.5; show answered; key; exit 0`

// spawnScreens spawns name running script (notifyScreens' shape: it draws
// Claude Code's recorded screens from pkg/agentstate's testdata and
// appends each key it takes to a file) as a Claude Code session, waits
// until it works, and returns the file of keys.
func spawnScreens(t *testing.T, h *home, name, script string) string {
	t.Helper()
	screens, err := filepath.Abs("../pkg/agentstate/testdata/screens")
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys")
	h.ctl(0, "spawn", name, "--agent", "claude", "--size", "80x24", "--", "sh", "-c", script, "sh", screens, keys)
	h.ctl(0, "wait", name, "--state", "working", "--timeout", "10s")
	return keys
}

// TestNotificationsFollowTheScreen drives a program that draws Claude
// Code's screens (no model, no network) through two prompts and a long
// turn, with agentd's notifications on a real dunst: Deny from dunst's
// menu types the prompt's deny key; each notification is closed by
// agentd when its wait is over (the agent works again, the program
// ends); a second prompt is a new wait and notified again; a turn past
// notify_waiting_after is notified once.
func TestNotificationsFollowTheScreen(t *testing.T) {
	t.Parallel()
	dk := startDesk(t)
	h := newHome(t)
	writeFile(t, filepath.Join(h.config, "agentd", "config.toml"), "notify_waiting_after = \"2s\"\n")
	h.startDaemon(nil, "DBUS_SESSION_BUS_ADDRESS="+dk.addr)
	keys := spawnScreens(t, h, "s", notifyScreens)
	typed := func() string { b, _ := os.ReadFile(keys); return string(b) }
	closes := func() int {
		n := 0
		for _, c := range dk.allCalls() {
			if c.member == "CloseNotification" {
				n++
			}
		}
		return n
	}

	h.ctl(0, "send", "s", "--keys", "enter")
	await(t, 10*time.Second, "the first prompt's notification", func() bool { return len(dk.notifies("s needs approval")) == 1 && dk.displayed() == 1 })
	h.ctl(0, "wait", "s", "--idle", "300ms", "--timeout", "10s")
	dk.pick("deny")
	await(t, 10*time.Second, "the deny key typed", func() bool { return typed() == "\r\x1b" })
	await(t, 10*time.Second, "agentd closing it as the agent works again", func() bool { return closes() >= 1 && dk.displayed() == 0 })

	h.ctl(0, "send", "s", "--keys", "enter")
	await(t, 10*time.Second, "the second prompt's notification", func() bool { return len(dk.notifies("s needs approval")) == 2 && dk.displayed() == 1 })
	h.ctl(0, "approve", "s")
	await(t, 10*time.Second, "the approval typed and the notification closed", func() bool {
		return typed() == "\r\x1b\r\r" && dk.displayed() == 0 && closes() >= 2
	})

	await(t, 15*time.Second, "the wait after a 2.5 s turn notified", func() bool { return len(dk.notifies("s is waiting")) == 1 && dk.displayed() == 1 })
	h.ctl(0, "send", "s", "--keys", "enter")
	await(t, 10*time.Second, "the notification closed as the program ends", func() bool { return dk.displayed() == 0 })
	if n := len(dk.notifies("")); n != 3 {
		var all []string
		for _, c := range dk.notifies("") {
			all = append(all, fmt.Sprintf("%s %q", c.at.Format("15:04:05.000"), c.summary()))
		}
		t.Errorf("%d notifications, want 3 (two prompts, one wait):\n%s", n, strings.Join(all, "\n"))
	}
}

// notifyFlicker draws Claude Code's permission prompt, then its working
// screen for a moment, then the same prompt again (what a hook's working
// told between two looks at one prompt amounts to), and takes a key after
// each prompt.
const notifyFlicker = `d=$1 keys=$2
show() { printf '\033[2J\033[H%s' "$(cat "$d/claude-80x24-$1.txt")"; }
key() { stty raw -echo; dd bs=1 count=1 2>/dev/null >> "$keys"; stty sane; }
show working; key; show permission; sleep 0.5; show working; sleep 0.3; show permission; key
show working; sleep 30`

// TestNotificationStaysThroughAFlicker: a prompt left for a moment and
// shown again (needs_approval, working, the same needs_approval) stays one
// notification, shown all along; once answered it is closed within
// askCloseGrace's second.
func TestNotificationStaysThroughAFlicker(t *testing.T) {
	t.Parallel()
	dk := startDesk(t)
	h := newHome(t)
	h.startDaemon(nil, "DBUS_SESSION_BUS_ADDRESS="+dk.addr)
	keys := spawnScreens(t, h, "f", notifyFlicker)
	h.ctl(0, "send", "f", "--keys", "enter")
	await(t, 10*time.Second, "the prompt's notification", func() bool { return len(dk.notifies("f needs approval")) == 1 && dk.displayed() == 1 })
	// The flicker, as the session's states record it.
	await(t, 10*time.Second, "needs_approval, working, needs_approval recorded", func() bool {
		var seq []string
		for _, r := range stateRecords(t, h, "f") {
			st, _, _ := strings.Cut(r, "/")
			if len(seq) == 0 || seq[len(seq)-1] != st {
				seq = append(seq, st)
			}
		}
		return strings.Contains(strings.Join(seq, " "), "needs_approval working needs_approval")
	})
	h.ctl(0, "wait", "f", "--state", "needs_approval", "--timeout", "10s")
	if n, shown := len(dk.notifies("f needs approval")), dk.displayed(); n != 1 || shown != 1 {
		t.Errorf("through the flicker: %d notifications, %d shown; want the one, shown all along", n, shown)
	}
	h.ctl(0, "approve", "f")
	await(t, 10*time.Second, "the approval typed and the notification closed", func() bool {
		b, _ := os.ReadFile(keys)
		return string(b) == "\r\r" && dk.displayed() == 0
	})
	if n := len(dk.notifies("")); n != 1 {
		t.Errorf("%d notifications in all, want 1", n)
	}
}

// TestNotificationOpenRunsTheTerminal: Open on a prompt's notification
// runs notify_terminal with agentctl attach NAME, the agentctl beside
// agentd; the terminal, a script here, attaches and sees the prompt.
func TestNotificationOpenRunsTheTerminal(t *testing.T) {
	t.Parallel()
	dk := startDesk(t)
	h := newHome(t)
	dir := t.TempDir()
	ran, screen := filepath.Join(dir, "argv"), filepath.Join(dir, "screen")
	term := filepath.Join(dir, "term")
	// The terminal records its command, runs it for a moment as a
	// terminal would, and keeps what it showed.
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %q\nshift\n\"$1\" snapshot \"$3\" > %q\n", ran, screen)
	if err := os.WriteFile(term, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(h.config, "agentd", "config.toml"), fmt.Sprintf("notify_terminal = %q\n", term+" -e"))
	h.startDaemon(nil, "DBUS_SESSION_BUS_ADDRESS="+dk.addr)
	spawnScreens(t, h, "o", notifyFlicker)
	h.ctl(0, "send", "o", "--keys", "enter")
	await(t, 10*time.Second, "the prompt's notification", func() bool { return len(dk.notifies("o needs approval")) >= 1 && dk.displayed() == 1 })
	if menu := dk.pick("open"); !strings.Contains(menu, "#Open (o needs approval)") {
		t.Errorf("dunst's menu lacks Open:\n%s", menu)
	}
	var argv []string
	await(t, 10*time.Second, "the terminal run by Open", func() bool {
		b, err := os.ReadFile(screen)
		if err != nil || len(b) == 0 {
			return false
		}
		a, _ := os.ReadFile(ran)
		argv = strings.Split(strings.TrimSpace(string(a)), "\n")
		return true
	})
	if len(argv) != 4 || argv[0] != "-e" || filepath.Base(argv[1]) != "agentctl" || argv[2] != "attach" || argv[3] != "o" {
		t.Errorf("Open ran the terminal with %q, want -e AGENTCTL attach o", argv)
	}
	// The session's screen, whichever of its frames it shows by then (the
	// flicker goes on while the terminal starts; beside two CPU hogs it had
	// moved past the prompt): proof that this agentctl reached session o.
	if b, _ := os.ReadFile(screen); !strings.Contains(string(b), "Do you want") && !strings.Contains(string(b), "Claude Code v") {
		t.Errorf("the agentctl Open gave does not reach the session: its snapshot\n%s", b)
	}
}
