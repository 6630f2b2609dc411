package mcpserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

func parseActions(t *testing.T, js string) []mcpAction {
	t.Helper()
	var acts []mcpAction
	if err := json.Unmarshal([]byte(js), &acts); err != nil {
		t.Fatal(err)
	}
	return acts
}

// TestHoldKeyAndDragModifiersExpand: a hold_key is key_down, waits of at
// most 5 s adding up to its duration, key_up; a drag's modifiers are held
// by a key_down before it and a key_up after it; origin numbers each daemon
// action with the model's action it came from, and renumber rewrites the
// daemon's messages with it.
func TestHoldKeyAndDragModifiersExpand(t *testing.T) {
	sp := space{width: 100, height: 100, area: wire.Region{Width: 100, Height: 100}, scale: 1}
	acts := parseActions(t, `[{"kind":"triple_click","x":1,"y":1,"modifiers":["shift"]},
		{"kind":"hold_key","key":"a","modifiers":["ctrl"],"duration":12.3456},
		{"kind":"left_click_drag","x":1,"y":1,"to_x":9,"to_y":9,"modifiers":["shift","alt"]}]`)
	if err := checkActions(acts); err != nil {
		t.Fatal(err)
	}
	out, origin, err := sp.expand(acts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range out {
		s := string(a.Kind)
		if a.Key != "" {
			s += ":" + a.Key
		}
		if len(a.Modifiers) > 0 {
			s += "+" + strings.Join(a.Modifiers, "+")
		}
		if a.MS != nil && a.Kind == "wait" {
			s += ":" + strconv.FormatFloat(*a.MS, 'f', -1, 64)
		}
		got = append(got, s)
	}
	want := "click+shift click+shift key_down:a+ctrl wait:5000 wait:5000 wait:2346 key_up:a+ctrl " +
		"key_down:shift+alt move wait:100 down wait:100 move move wait:100 up key_up:shift+alt"
	if strings.Join(got, " ") != want {
		t.Errorf("expanded to\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	wantOrigin := []int{1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}
	if len(origin) != len(out) || fmt.Sprint(origin) != fmt.Sprint(wantOrigin) {
		t.Errorf("origin %v, want %v", origin, wantOrigin)
	}
	msg := renumber(`invalid act batch: action 3 (key_down): unknown key "x"; and action 17 (key_up), action 99 (up)`, origin, acts)
	if want := `invalid act batch: action 2 (hold_key): unknown key "x"; and action 3 (left_click_drag), action 99 (up)`; msg != want {
		t.Errorf("renumbered %q, want %q", msg, want)
	}
}

func TestCheckActionsHoldKey(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`[{"kind":"hold_key","key":"a"}]`, "action 1 (hold_key): needs duration, the seconds to hold the key"},
		{`[{"kind":"hold_key","key":"a","duration":0}]`, "action 1 (hold_key): needs duration"},
		{`[{"kind":"hold_key","key":" ","duration":1}]`, "action 1 (hold_key): needs key"},
		{`[{"kind":"wait","ms":5000},{"kind":"hold_key","key":"a","duration":25.5}]`, "action 2 (hold_key): the batch would wait and hold keys for 30.5 s, over its time budget of 30 s for waiting"},
		{`[{"kind":"hold_key","key":"a","duration":20},{"kind":"wait","ms":5000},{"kind":"wait","ms":5000},{"kind":"wait"}]`, "action 4 (wait): the batch would wait and hold keys for 30.35 s"},
		{`[{"kind":"type","text":"x","modifiers":["shift"]}]`, "action 1 (type): modifiers apply to key, hold_key, key_down, key_up, click"},
		{`[{"kind":"click","x":1,"y":1,"duration":1}]`, "action 1 (click): duration belongs to hold_key"},
	} {
		err := checkActions(parseActions(t, c.js))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.js, err, c.want)
		}
	}
	if err := checkActions(parseActions(t, `[{"kind":"hold_key","key":"shift","duration":30},{"kind":"click","x":1,"y":1,"modifiers":["ctrl"]},{"kind":"scroll","direction":"up","modifiers":["alt"]}]`)); err != nil {
		t.Errorf("a 30 s hold and modifier click and scroll: %v", err)
	}
}
