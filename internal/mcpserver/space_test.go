package mcpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

func TestFitScaleKeepsImagesInTheModelBox(t *testing.T) {
	cases := []struct{ w, h, want int }{
		{1920, 1080, 1024}, // 16:9 is bound by width: 1024x576
		{1024, 768, 1024},  // exactly the box
		{800, 600, 800},    // inside: unscaled
		{2560, 1600, 1024}, // 16:10: 1024x640
		{1600, 1200, 1024}, // 4:3: 1024x768
		{1280, 1024, 960},  // 5:4 is bound by height: 960x768
		{3840, 1080, 1024}, // two monitors side by side
		{300, 200, 300},
		{0, 100, 0},
	}
	for _, tc := range cases {
		if got := fitScale(tc.w, tc.h); got != tc.want {
			t.Errorf("fitScale(%d, %d) = %d, want %d", tc.w, tc.h, got, tc.want)
		}
	}
}

func TestToScreenMapsImagePixelsToScreenPixels(t *testing.T) {
	full := space{width: 1280, height: 720, area: wire.Region{Width: 1920, Height: 1080}, scale: 1280.0 / 1920}
	region := space{width: 400, height: 300, area: wire.Region{X: 100, Y: 200, Width: 400, Height: 300}, scale: 1}
	cases := []struct {
		sp         space
		x, y       float64
		wantX, wan float64
	}{
		{full, 0, 0, 0, 0},
		{full, 640, 360, 960, 540},
		{full, 1279, 719, 1919, 1079},
		{full, 1279.9, 719.9, 1919, 1079},
		{full, 1, 1, 2, 2},
		{region, 0, 0, 100, 200},
		{region, 10, 20, 110, 220},
		{region, 399, 299, 499, 499},
	}
	for _, tc := range cases {
		x, y, err := tc.sp.toScreen(1, "move", tc.x, tc.y)
		if err != nil || x != tc.wantX || y != tc.wan {
			t.Errorf("%+v.toScreen(%g, %g) = %g, %g, %v; want %g, %g", tc.sp, tc.x, tc.y, x, y, err, tc.wantX, tc.wan)
		}
	}
	for _, p := range [][2]float64{{1280, 0}, {0, 720}, {-1, 5}, {5, -0.5}} {
		_, _, err := full.toScreen(3, "click", p[0], p[1])
		if err == nil || !strings.Contains(err.Error(), "1280x720") || !strings.Contains(err.Error(), "action 3 (click)") {
			t.Errorf("toScreen(%v) error %v, want a refusal naming action 3 and the 1280x720 image", p, err)
		}
	}
}

func TestLoopGuardRefusesTheFourthUnchangedRepeat(t *testing.T) {
	var g loopGuard
	steps := []struct {
		key     string
		changed bool
		allowed bool
	}{
		{"a", false, true},
		{"a", false, true},
		{"a", false, true},
		{"a", false, false}, // the fourth
		{"b", false, true},  // other actions run
		{"a", false, true},
		{"a", true, true}, // the screen changed: the count starts again
		{"a", false, true},
		{"a", false, true},
		{"a", false, true},
		{"a", false, false},
	}
	for i, s := range steps {
		if got := g.allow(s.key); got != s.allowed {
			t.Fatalf("step %d: allow(%s) = %v, want %v (guard %+v)", i, s.key, got, s.allowed, g)
		}
		if s.allowed {
			g.ran(s.key, s.changed)
		}
	}
	g.reset()
	if !g.allow("a") {
		t.Error("after reset the batch is refused")
	}
}

func TestCheckArgsNamesWhatExists(t *testing.T) {
	tl := tool{name: "demo", args: []arg{{"name", true}, {"n", false}}}
	type in struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	cases := []struct {
		raw  string
		want string // "" is no error
	}{
		{`{"name": "x"}`, ""},
		{`{"name": "x", "n": 3}`, ""},
		{``, `needs the argument "name"`},
		{`{}`, `needs the argument "name"`},
		{`{"name": null}`, `needs the argument "name"`},
		{`{"name": "x", "zap": 1}`, `no argument "zap"; it takes arguments name (required), n`},
		{`{"name": 1}`, "name must be a string, not a JSON number"},
		{`{"name": "x", "n": "3"}`, "n must be an integer"},
		{`[1]`, "must be a JSON object"},
	}
	for _, tc := range cases {
		var v in
		_, err := tl.checkArgs(json.RawMessage(tc.raw), &v)
		if tc.want == "" {
			if err != nil {
				t.Errorf("checkArgs(%s) = %v, want nil", tc.raw, err)
			}
			continue
		}
		// A tool-level error (isError), not a protocol one: MCP 2025-11-25
		// wants the model to see it and correct the call.
		var be *badArgs
		if !errors.As(err, &be) || !strings.Contains(be.msg, tc.want) {
			t.Errorf("checkArgs(%s) = %v, want bad arguments saying %q", tc.raw, err, tc.want)
		}
		if res := argsRefusal(err); !res.IsError || res.StructuredContent.(refusalBody).Code != codeBadArgs {
			t.Errorf("checkArgs(%s): result %+v, want isError with code %s", tc.raw, res, codeBadArgs)
		}
	}
}

func TestEveryResultCarriesOK(t *testing.T) {
	for _, r := range []any{
		answer(&wire.ListResult{}, "").StructuredContent,
		answer([]int{1}, "").StructuredContent,
		failure(wire.Errorf(wire.CodeAgentNotFound, "no")).StructuredContent,
		failure(&wire.UnreachableError{Socket: "s", Err: errors.New("x")}).StructuredContent,
		failure(errors.New("odd")).StructuredContent,
	} {
		var m map[string]any
		b, _ := json.Marshal(r)
		if json.Unmarshal(b, &m) != nil {
			t.Fatalf("structured content %s is not an object", b)
		}
		if _, ok := m["ok"].(bool); !ok {
			t.Errorf("structured content %s has no ok", b)
		}
	}
}

func TestFailedBatchDetailsLoseTheImage(t *testing.T) {
	err := wire.Errorf(wire.CodeRefused, "kill switch").WithDetails(wire.ActResult{ActionsRun: 2, Outcome: "refused",
		Observation: &wire.ScreenshotResult{Width: 4, Image: []byte("pixels")}})
	res := failure(withoutImage(err))
	b, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(b), `"image"`) || !strings.Contains(string(b), `"actions_run":2`) || !strings.Contains(string(b), `"ok":false`) {
		t.Errorf("structured content %s, want the details without the image", b)
	}
}

func TestLimitsAreEnforcedWithPlainWords(t *testing.T) {
	for _, tc := range []struct {
		tool, raw, want string
	}{
		{"logs", `{"name":"x","limit":0}`, "logs: limit: 0 is less than 1 (minimum)"},
		{"spawn", `{"name":"x","argv":["sh"],"cols":0}`, "spawn: cols: 0 is less than 1 (minimum)"},
		{"act", `{"actions":[{"kind":"scroll","amount":50}]}`, "act: actions[].amount: 50 is greater than 20 (maximum)"},
		{"act", `{"actions":[]}`, "act: actions: array length 0 is less than 1 (minItems)"},
		{"logs", `{"name":"x","limit":5}`, ""},
	} {
		for _, tl := range (&tools{}).list() {
			if tl.name != tc.tool {
				continue
			}
			tl, _, rs, err := tl.prepare()
			if err != nil {
				t.Fatal(err)
			}
			err = tl.checkLimits(rs, decodeArgs(t, []byte(tc.raw)))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s %s: %v, want no error", tc.tool, tc.raw, err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("%s %s: %v, want %q", tc.tool, tc.raw, err, tc.want)
			}
		}
	}
}
