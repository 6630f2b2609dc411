package capture

import (
	"encoding/json"
	"errors"
	"image"
	"math"
	"strings"
	"testing"
	"time"
)

var testScreen = image.Rect(0, 0, 1280, 800)

func parseJSON(t testing.TB, js string) ([]RawAction, error) {
	t.Helper()
	var raw []RawAction
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	b, err := ParseBatch(raw, nil, nil, testScreen)
	if err == nil && b == nil {
		t.Fatal("nil batch without error")
	}
	return raw, err
}

func TestParseBatchRefusals(t *testing.T) {
	many := func(action string, n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(action+",", n), ",") + "]"
	}
	long := strings.Repeat("é", 501)
	for _, c := range []struct {
		name, actions, want string
	}{
		{"empty", `[]`, "at least one action"},
		{"no kind", `[{"kind":"wait"},{}]`, "action 2 has no kind"},
		{"unknown kind", `[{"kind":"wait"},{"kind":"tap"}]`, `action 2 has the unknown kind "tap"`},
		{"click without x and y", `[{"kind":"wait"},{"kind":"click"}]`, "action 2 (click) needs x and y"},
		{"move without x and y", `[{"kind":"move"}]`, "action 1 (move) needs x and y"},
		{"only x", `[{"kind":"wait"},{"kind":"click","x":1}]`, "action 2 (click): give both x and y"},
		{"only y on down", `[{"kind":"wait"},{"kind":"down","y":1}]`, "action 2 (down): give both x and y"},
		{"negative x", `[{"kind":"wait"},{"kind":"move","x":-1,"y":2}]`, "action 2 (move): x -1 is outside the screen"},
		{"huge y", `[{"kind":"move","x":1,"y":1e9}]`, "action 1 (move): y 1e+09 is outside the screen"},
		{"x at width", `[{"kind":"move","x":1280,"y":1}]`, "x 1280 is outside the screen, which is 1280 pixels wide"},
		{"fractional x", `[{"kind":"click","x":10.5,"y":1}]`, "action 1 (click): x must be a whole pixel"},
		{"bad button", `[{"kind":"click","x":1,"y":1,"button":"side"}]`, `unknown button "side"`},
		{"type without text", `[{"kind":"wait"},{"kind":"type"}]`, "action 2 (type) needs text"},
		{"control character", `[{"kind":"type","text":"a\u0007"}]`, "control character U+0007"},
		{"key blank", `[{"kind":"wait"},{"kind":"key","key":" "}]`, "action 2 (key): needs a key"},
		{"unknown key", `[{"kind":"key","key":"hyperdrive"}]`, `action 1 (key): unknown key "hyperdrive"`},
		{"unknown modifier", `[{"kind":"key","key":"hyper+t"}]`, `action 1 (key): unknown modifier "hyper"`},
		{"unknown modifier list", `[{"kind":"key","key":"t","modifiers":["ctl"]}]`, `unknown modifier "ctl"`},
		{"scroll without direction", `[{"kind":"wait"},{"kind":"scroll"}]`, "action 2 (scroll) needs a direction"},
		{"click unknown modifier", `[{"kind":"click","x":1,"y":1,"modifiers":["hyper"]}]`, `action 1 (click): unknown modifier "hyper"; use ctrl, alt, shift or super`},
		{"modifiers on move", `[{"kind":"move","x":1,"y":1,"modifiers":["shift"]}]`, "action 1 (move): modifiers apply to key, key_down, key_up, click, down, up and scroll; to hold a key across other actions use key_down and key_up"},
		{"key_down unknown key", `[{"kind":"key_down","key":"hyperdrive"}]`, `action 1 (key_down): unknown key "hyperdrive"; use a name such as enter`},
		{"key_down no key", `[{"kind":"key_down"}]`, "action 1 (key_down): needs a key"},
		{"key_up not held", `[{"kind":"key_down","key":"a"},{"kind":"key_up","key":"b"}]`, "action 2 (key_up): b is not held; press it with a key_down earlier in the batch"},
		{"key_up twice", `[{"kind":"key_down","key":"shift"},{"kind":"key_up","key":"shift"},{"kind":"key_up","key":"shift"}]`, "action 3 (key_up): shift is not held"},
		{"scroll bad direction", `[{"kind":"scroll","direction":"in"}]`, `unknown direction "in"`},
		{"focus blank", `[{"kind":"wait"},{"kind":"focus","application":" "}]`, "action 2 (focus) needs"},
		{"25 actions", many(`{"kind":"wait"}`, 25), "25 actions given, the limit is 24"},
		{"13 double clicks", many(`{"kind":"click","x":1,"y":1,"double":true}`, 13), "runs 26 actions because each double click counts as two"},
		{"1001 characters", `[{"kind":"type","text":"` + long + `"},{"kind":"type","text":"` + long + `"}]`, "types 1002 characters, the limit is 1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseJSON(t, c.actions)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("actions %s: got %v, want ErrInvalid containing %q", c.actions, err, c.want)
			}
		})
	}
}

func TestParseBatchNumbers(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		raw  RawAction
		want string
	}{
		{"NaN x", RawAction{Kind: "move", X: &nan, Y: ptr(1.0)}, "action 1 (move): x is not a number"},
		{"Inf y", RawAction{Kind: "click", X: ptr(1.0), Y: &inf}, "action 1 (click): y is not a number"},
		{"NaN amount", RawAction{Kind: "scroll", Direction: "up", Amount: &nan}, "amount is not a number"},
		{"NaN ms", RawAction{Kind: "wait", MS: &nan}, "ms is not a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseBatch([]RawAction{c.raw}, nil, nil, testScreen)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
	if _, err := ParseBatch([]RawAction{{Kind: "wait"}}, nil, &nan, testScreen); !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN settle_ms: got %v, want ErrInvalid", err)
	}
}

// A wait or settle over MaxWaitMS (or under 0) is refused, not clamped:
// a caller who asked for 10 s must not act on a screen after 5.
func TestParseBatchRefusesLongWaits(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		settle *float64
		want   string
	}{
		{`[{"kind":"wait","ms":99999}]`, nil, "ms 99999 is not milliseconds from 0 to 5000"},
		{`[{"kind":"wait","ms":-5}]`, nil, "ms -5 is not"},
		{`[{"kind":"wait"}]`, ptr(60000.0), "settle_ms 60000 is not milliseconds from 0 to 5000"},
	} {
		raw, _ := parseJSON(t, tc.raw)
		_, err := ParseBatch(raw, nil, tc.settle, testScreen)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s settle %v: got %v, want ErrInvalid saying %q", tc.raw, tc.settle, err, tc.want)
		}
	}
}

func TestParseBatchDefaultsAndClamps(t *testing.T) {
	raw, _ := parseJSON(t, `[{"kind":"wait"},{"kind":"wait","ms":5000},{"kind":"wait","ms":0},
		{"kind":"scroll","direction":"down"},{"kind":"scroll","direction":"left","amount":500},
		{"kind":"scroll","direction":"up","amount":0,"x":5,"y":6},
		{"kind":"click","x":10,"y":20,"button":"right","double":true},
		{"kind":"key","key":"ctrl+shift+T"},{"kind":"key","key":"c","modifiers":["cmd","option"]},
		{"kind":"key","key":"ctrl++"},{"kind":"key","key":"F5"}]`)
	b, err := ParseBatch(raw, ptr(false), ptr(5000.0), testScreen)
	if err != nil {
		t.Fatal(err)
	}
	if b.Observe || b.SettleMS != MaxWaitMS {
		t.Errorf("observe %v settle %d, want false and %d", b.Observe, b.SettleMS, MaxWaitMS)
	}
	type summary struct {
		n, ms, amount, button int
		dir, key              string
		mods                  string
	}
	var got []summary
	for _, a := range b.Actions {
		got = append(got, summary{a.Number, a.MS, a.Amount, a.Button, a.Direction, a.Key, strings.Join(a.Modifiers, "+")})
	}
	want := []summary{
		{1, 350, 0, 1, "", "", ""}, {2, 5000, 0, 1, "", "", ""}, {3, 0, 0, 1, "", "", ""},
		{4, 0, 3, 1, "down", "", ""}, {5, 0, 20, 1, "left", "", ""}, {6, 0, 1, 1, "up", "", ""},
		{7, 0, 0, 3, "", "", ""}, {7, 0, 0, 3, "", "", ""},
		{8, 0, 0, 1, "", "T", "ctrl+shift"}, {9, 0, 0, 1, "", "c", "alt+super"},
		{10, 0, 0, 1, "", "+", "ctrl"}, {11, 0, 0, 1, "", "f5", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d actions %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("action %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if !b.Actions[5].HasAt || b.Actions[5].At != image.Pt(5, 6) {
		t.Errorf("scroll position: got %v", b.Actions[5].At)
	}
	d, _ := ParseBatch([]RawAction{{Kind: "wait"}}, nil, nil, testScreen)
	if !d.Observe || d.SettleMS != DefaultSettleMS {
		t.Errorf("defaults: observe %v settle %d", d.Observe, d.SettleMS)
	}
	// 24 actions pass, including 12 double clicks.
	raw, err = parseJSON(t, "["+strings.TrimSuffix(strings.Repeat(`{"kind":"click","x":1,"y":1,"double":true},`, 12), ",")+"]")
	if err != nil {
		t.Errorf("12 double clicks: %v", err)
	}
	_ = raw
}

func TestBudget(t *testing.T) {
	b, err := ParseBatch([]RawAction{{Kind: "wait", MS: ptr(1000.0)}, {Kind: "type", Text: ptr("abcde")}, {Kind: "focus", Application: "x"},
		{Kind: "click", X: ptr(1.0), Y: ptr(1.0), Double: true}}, nil, ptr(500.0), testScreen)
	if err != nil {
		t.Fatal(err)
	}
	want := 30*time.Second + 500*time.Millisecond + time.Second + 5*50*time.Millisecond + 40*time.Second + 2*pressGap
	if got := b.Budget(); got != want {
		t.Errorf("budget: got %v, want %v", got, want)
	}
}

// FuzzParseBatch feeds arbitrary JSON to the decoder and validator: it must
// never panic, and what it accepts must respect every limit.
func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{
		`[{"kind":"click","x":10,"y":20,"double":true}]`,
		`[{"kind":"type","text":"héllo\n"},{"kind":"key","key":"ctrl+shift+t"}]`,
		`[{"kind":"scroll","direction":"up","amount":1e308,"x":0,"y":0}]`,
		`[{"kind":"wait","ms":-1e9},{"kind":"focus","application":"xterm","uri":"x"}]`,
		`[{"kind":"key","key":"++"},{"kind":"key","key":"+","modifiers":["win"]}]`,
		`[{}]`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw []RawAction
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		b, err := ParseBatch(raw, nil, nil, testScreen)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error without ErrInvalid: %v", err)
			}
			return
		}
		typed := 0
		if len(b.Actions) == 0 || len(b.Actions) > MaxActions {
			t.Fatalf("%d actions accepted", len(b.Actions))
		}
		for _, a := range b.Actions {
			if a.HasAt && !a.At.In(testScreen) {
				t.Fatalf("point %v outside the screen accepted", a.At)
			}
			if a.MS < 0 || a.MS > MaxWaitMS || (a.Kind == KindScroll && (a.Amount < 1 || a.Amount > MaxScrollAmount)) {
				t.Fatalf("limits broken: %+v", a)
			}
			if a.Kind == KindKey && a.Keysym == 0 {
				t.Fatalf("key without keysym: %+v", a)
			}
			typed += len([]rune(a.Text))
		}
		if typed > MaxTypeChars {
			t.Fatalf("%d characters accepted", typed)
		}
	})
}
