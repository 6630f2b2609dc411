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
