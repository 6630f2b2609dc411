package mcpserver

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/agentd/agentd/pkg/wire"
)

// The box a screenshot is scaled into for a model: XGA. Models that act on
// screens are trained and evaluated around that size, and Anthropic
// recommends it for computer use; clients that send larger screenshots lose
// about a quarter of their clicks above it, because the model's API resizes
// the image and the model then points in a space the server does not know.
// It also keeps the image small, which is most of a click-then-observe
// round trip: a 1920x1080 screen comes back as 1024x576.
const (
	modelMaxWidth  = 1024
	modelMaxHeight = 768
)

// fitScale returns the max_width that scales an area of w x h pixels into
// the model box, keeping its aspect; an area already inside keeps its size.
func fitScale(w, h int) int {
	if w <= 0 || h <= 0 {
		return 0
	}
	s := min(1, float64(modelMaxWidth)/float64(w), float64(modelMaxHeight)/float64(h))
	return max(1, int(math.Floor(float64(w)*s)))
}

// space is the coordinate space of the last image the model received: its
// size in image pixels, and where it lies on the screen.
type space struct {
	width, height int         // image pixels
	area          wire.Region // screen pixels the image shows
	scale         float64     // image pixels per screen pixel
}

// spaceOf is the space a screenshot's image defines.
func spaceOf(s *wire.ScreenshotResult) space {
	return space{width: s.Width, height: s.Height, area: s.Area, scale: s.Scale}
}

// toScreen converts image point (x, y) to a screen pixel: the screen pixel
// under the centre of the image pixel, clamped into the area. A point
// outside the image is an error naming the image's size, so the model
// learns which space it is in.
func (sp space) toScreen(n int, kind string, x, y float64) (sx, sy float64, err error) {
	if math.IsNaN(x) || math.IsNaN(y) || x < 0 || y < 0 || x >= float64(sp.width) || y >= float64(sp.height) {
		return 0, 0, fmt.Errorf("action %d (%s): point %g,%g is outside the last screenshot, which is %dx%d pixels (x 0 to %d, y 0 to %d); "+
			"act takes coordinates in that image's pixels", n, kind, x, y, sp.width, sp.height, sp.width-1, sp.height-1)
	}
	conv := func(v float64, origin, size int) float64 {
		s := float64(origin) + math.Round((math.Floor(v)+0.5)/sp.scale-0.5)
		return math.Min(math.Max(s, float64(origin)), float64(origin+size-1))
	}
	if sp.scale <= 0 {
		return 0, 0, fmt.Errorf("the last screenshot has no usable scale; take a screenshot again")
	}
	return conv(x, sp.area.X, sp.area.Width), conv(y, sp.area.Y, sp.area.Height), nil
}

// toImage converts screen pixel p to the image pixel showing it; ok is
// false when p lies outside the image's area.
func (sp space) toImage(p wire.Point) (x, y int, ok bool) {
	if sp.scale <= 0 || p.X < sp.area.X || p.Y < sp.area.Y || p.X >= sp.area.X+sp.area.Width || p.Y >= sp.area.Y+sp.area.Height {
		return 0, 0, false
	}
	x = int(math.Floor((float64(p.X-sp.area.X) + 0.5) * sp.scale))
	y = int(math.Floor((float64(p.Y-sp.area.Y) + 0.5) * sp.scale))
	return min(x, sp.width-1), min(y, sp.height-1), true
}

// expand turns a model's actions into the daemon's, in screen pixels: the
// computer-use actions become the daemon's primitives (a triple_click is a
// double click and a click on one point; a left_click_drag is move, press,
// each step apart by a pause: move, pause, press, pause, move half way,
// move, pause, release. Window managers and toolkits start a drag only on
// motion they saw after the press and end it where the release finds the
// pointer),
// a hold_key is key_down, waits of at most 5 s, key_up; a drag's modifiers
// are held by a key_down before it and a key_up after it),
// and every point is converted from the image space. origin gives, for
// each daemon action, the 1-based number of the model's action it came
// from.
func (sp space) expand(actions []mcpAction) (out []wire.Action, origin []int, err error) {
	for i, a := range actions {
		n, kind := i+1, string(a.Kind)
		w := wire.Action(a.actionIn)
		if a.X != nil && a.Y != nil {
			x, y, err := sp.toScreen(n, kind, *a.X, *a.Y)
			if err != nil {
				return nil, nil, err
			}
			w.X, w.Y = &x, &y
		}
		before := len(out)
		switch a.Kind {
		case "triple_click":
			w.Kind, w.Double = "click", true
			one := w
			one.Double = false
			out = append(out, w, one)
		case "left_click_drag":
			tx, ty, err := sp.toScreen(n, kind+" to", *a.ToX, *a.ToY)
			if err != nil {
				return nil, nil, err
			}
			mx, my := math.Round((*w.X+tx)/2), math.Round((*w.Y+ty)/2)
			button := w.Button
			if button == "" {
				button = "left"
			}
			pause := dragPauseMS
			mods := w.Modifiers
			if len(mods) > 0 {
				out = append(out, wire.Action{Kind: wire.ActionKeyDown, Key: mods[0], Modifiers: mods[1:]})
			}
			out = append(out,
				wire.Action{Kind: "move", X: w.X, Y: w.Y},
				wire.Action{Kind: "wait", MS: &pause},
				wire.Action{Kind: "down", Button: button},
				wire.Action{Kind: "wait", MS: &pause},
				wire.Action{Kind: "move", X: &mx, Y: &my},
				wire.Action{Kind: "move", X: &tx, Y: &ty},
				wire.Action{Kind: "wait", MS: &pause},
				wire.Action{Kind: "up", Button: button})
			if len(mods) > 0 {
				out = append(out, wire.Action{Kind: wire.ActionKeyUp, Key: mods[0], Modifiers: mods[1:]})
			}
		case "hold_key":
			// checkActions made sure of key and duration.
			out = append(out, wire.Action{Kind: wire.ActionKeyDown, Key: w.Key, Modifiers: w.Modifiers})
			for left := math.Round(*a.Duration * 1000); left > 0; left -= maxWaitMS {
				ms := math.Min(left, maxWaitMS)
				out = append(out, wire.Action{Kind: wire.ActionWait, MS: &ms})
			}
			out = append(out, wire.Action{Kind: wire.ActionKeyUp, Key: w.Key, Modifiers: w.Modifiers})
		default:
			out = append(out, w)
		}
		for range len(out) - before {
			origin = append(origin, n)
		}
	}
	return out, origin, nil
}

// maxWaitMS is the daemon's longest wait action.
const maxWaitMS = 5000.0

// actionRef is "action N (kind)" as the daemon names an action of a batch.
var actionRef = regexp.MustCompile(`action (\d+) \(([a-z_]+)\)`)

// renumber rewrites the daemon's "action N (kind)" into the model's
// numbering and kinds: a hold_key or a drag is several daemon actions.
func renumber(msg string, origin []int, actions []mcpAction) string {
	return actionRef.ReplaceAllStringFunc(msg, func(ref string) string {
		m := actionRef.FindStringSubmatch(ref)
		i, err := strconv.Atoi(m[1])
		if err != nil || i < 1 || i > len(origin) {
			return ref
		}
		n := origin[i-1]
		return fmt.Sprintf("action %d (%s)", n, actions[n-1].Kind)
	})
}

// dragPauseMS is the pause around a drag's press and before its release.
// Without pauses openbox, pressed and released within one batch's burst of
// events, does not move the window at all; with 50 ms it still missed one
// drag in four on a loaded machine.
const dragPauseMS = 100.0

// loopGuardLimit is how many batches in a row may repeat the same actions
// without the screen changing: the next one is refused. A model that
// clicks the same spot three times and sees nothing happen is stuck, and
// a fourth identical click only burns its budget (and sometimes the
// user's data); telling it to look again breaks the loop.
const loopGuardLimit = 3

// loopGuard counts batches in a row whose actions are the same and after
// which the screen did not change.
type loopGuard struct {
	key     string // the last batch's actions, as the model sent them
	streak  int    // batches in a row with key and an unchanged screen
	refused int    // batches with key refused since the last that ran
}

// refuse records a refused batch and returns its place in the run of
// identical batches and how many of them ran without a change.
func (g *loopGuard) refuse() (nth, unchanged int) {
	g.refused++
	return g.streak + g.refused, g.streak
}

// allow reports whether a batch with key may run.
func (g *loopGuard) allow(key string) bool {
	return key != g.key || g.streak < loopGuardLimit
}

// ran records a batch that ran; changed is whether its observation showed
// a change. An unobserved batch counts as unchanged: nothing says it did
// anything.
func (g *loopGuard) ran(key string, changed bool) {
	g.refused = 0
	switch {
	case changed:
		g.key, g.streak = key, 0
	case key == g.key:
		g.streak++
	default:
		g.key, g.streak = key, 1
	}
}

// reset forgets the streak: the model looked and the screen had changed.
func (g *loopGuard) reset() { g.key, g.streak, g.refused = "", 0, 0 }
