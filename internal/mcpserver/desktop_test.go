package mcpserver

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// The daemon's desktop advice names the tools that do it here.
func TestForModelsDesktopAdvice(t *testing.T) {
	for in, want := range map[string]string{
		`desktop "x" does not exist; agentctl desktop ls shows the desktops`:                                              `desktop "x" does not exist; the desktops tool shows the desktops`,
		`desktop "x" is dead (X server exited); remove it with agentctl desktop rm x and make another`:                    `desktop "x" is dead (X server exited); remove it with the desktop_rm tool (name "x") and make another`,
		`a batch is running on desktop "x"; wait for it, or remove the desktop anyway with agentctl desktop rm --force x`: `a batch is running on desktop "x"; wait for it, or remove the desktop anyway with the desktop_rm tool (name "x", force true)`,
		"session s1 ended; agentctl rm s1 removes it":                                                                     `session s1 ended; the rm tool (name "s1") removes it`,
	} {
		if got := forModels(in); got != want {
			t.Errorf("forModels(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// Every form of advice the daemon gives (its messages, as they read with a
// name filled in) becomes the tool call that does it, with the arguments
// the command spelled, or advice to ask the user where no tool does; the
// sentence around it is kept, and a word after agentctl that is no verb
// is left alone.
func TestForModelsNamesTheToolCall(t *testing.T) {
	for in, want := range map[string]string{
		`session "nobody" does not exist; agentctl list shows the sessions`:                                                                                   `session "nobody" does not exist; the list tool shows the sessions`,
		`channel "c" does not exist; agentctl channel list shows the channels`:                                                                                `channel "c" does not exist; the channels tool shows the channels`,
		`session "s" is running; restart starts an ended session again: stop it first (agentctl stop s), or agentctl restart --force s stops and restarts it`: `session "s" is running; restart starts an ended session again: stop it first (the stop tool (name "s")), or the restart tool (name "s", force true) stops and restarts it`,
		`session "s" is busy; wait for it (agentctl wait s --ready) or interrupt it (agentctl send s --keys ctrl+c)`:                                          `session "s" is busy; wait for it (the wait tool (name "s", ready true)) or interrupt it (the send tool (name "s", keys ["ctrl+c"]))`,
		`session "s" is still busy; wait for it (agentctl wait s --until ...) or interrupt it (agentctl send s --keys ctrl+c)`:                                `session "s" is still busy; wait for it (the wait tool (name "s", until: a regular expression its screen will show)) or interrupt it (the send tool (name "s", keys ["ctrl+c"]))`,
		"ask of \"s\" is only line breaks or spaces; to press Enter use `agentctl send s --keys enter`":                                                       `ask of "s" is only line breaks or spaces; to press Enter use the send tool (name "s", keys ["enter"])`,
		`spawn of "s" has no command; give the program to run, e.g. agentctl spawn s -- claude`:                                                               `spawn of "s" has no command; give the program to run, e.g. the spawn tool (name "s", argv ["claude"])`,
		`the screen changed (agentctl snapshot s) and ask again`:                                                                                              `the screen changed (the snapshot tool (name "s")) and ask again`,
		`answer it by hand (agentctl attach s)`:                                                                                                               "answer it by hand ((ask the user to run `agentctl attach s`))",
		`3 desktops are running, the limit (max_desktops); remove one first with agentctl desktop rm NAME`:                                                    `3 desktops are running, the limit (max_desktops); remove one first with the desktop_rm tool`,
		`desktop "d" is dead (gone); make another with agentctl desktop new, or spawn with --desktop new`:                                                     `desktop "d" is dead (gone); make another with the desktop_new tool, or spawn with desktop "new"`,
		`uid 5 may not use this agentd (it serves uid 6); run agentctl as that user`:                                                                          `uid 5 may not use this agentd (it serves uid 6); run agentctl as that user`,
		`press Enter once it shows (agentctl send s --keys enter) and wait for the end of the turn (agentctl wait s --state waiting,needs_approval)`:          `press Enter once it shows (the send tool (name "s", keys ["enter"])) and wait for the end of the turn (the wait tool (name "s", states ["waiting","needs_approval"]))`,
		`session "s" ended; agentctl rm --force s removes it`:                                                                                                 `session "s" ended; the rm tool (name "s", force true) removes it`,
	} {
		if got := forModels(in); got != want {
			t.Errorf("forModels(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// A refusal about a desktop target says which tools fix it; others are
// left alone.
func TestDeskHint(t *testing.T) {
	res := deskHint(refusal(string(wire.CodeScreenUnavailable), `desktop "d" does not exist; the desktops tool shows the desktops`, false, nil), "d")
	if r := res.StructuredContent.(refusalBody).Reason; !res.IsError || !strings.Contains(r, `desktop_new (name "d")`) {
		t.Errorf("hint: %q", r)
	}
	for _, c := range []struct{ code, desk string }{{string(wire.CodeScreenUnavailable), ""}, {string(wire.CodeScreenUnavailable), "new"}, {string(wire.CodeRefused), "d"}} {
		res := deskHint(refusal(c.code, "why", false, nil), c.desk)
		if r := res.StructuredContent.(refusalBody).Reason; r != "why" {
			t.Errorf("deskHint(%s, %q) changed the reason to %q", c.code, c.desk, r)
		}
	}
	if res := deskHint(answer(struct{}{}, "fine"), "d"); res.IsError {
		t.Error("deskHint made a success an error")
	}
}
