package capture

import (
	"fmt"
	"image"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of one batch (the act semantics agents are written against).
const (
	// MaxActions is the most actions one batch may hold, counting each
	// double click as two clicks: enough for a form, short enough that an
	// agent looks at the screen again before going on.
	MaxActions = 24
	// MaxTypeChars is the most characters all type actions of a batch may
	// hold together; longer text belongs in several batches (or a paste).
	MaxTypeChars = 1000
	// DefaultWaitMS is the wait when a wait action gives none: long enough
	// for a menu or a dialog to appear.
	DefaultWaitMS = 350
	// MaxWaitMS caps a single wait and the settle time; a longer one is
	// refused (not cut short, which would act on a screen the caller did
	// not wait for), since an agent should observe rather than sleep.
	MaxWaitMS = 5000
	// DefaultSettleMS is the pause before the closing screenshot when the
	// batch gives none, so the screen shows the effect of the last action.
	DefaultSettleMS = 300
	// DefaultScrollAmount is the wheel steps of a scroll that gives none.
	DefaultScrollAmount = 3
	// MaxScrollAmount caps the wheel steps of one scroll action; amounts
	// outside 1..MaxScrollAmount are clamped.
	MaxScrollAmount = 20
	// DefaultLockTimeout is how long a batch waits for the screen when the
	// request does not say: a little longer than a typical batch.
	DefaultLockTimeout = 10 * time.Second
)

// Time budget of a batch: the waits, the settle time and the typing it asks
// for, plus fixed allowances. A batch that overruns is stopped.
const (
	// workAllowance covers everything that is not an explicit wait:
	// X round trips, clicks, the closing screenshot.
	workAllowance = 30 * time.Second
	// launchAllowance is the time a focus action may take when it has to
	// start the application.
	launchAllowance = 40 * time.Second
	// keymapSettle is the time clients get to reread the keyboard mapping
	// after a temporary key binding changes.
	keymapSettle = 20 * time.Millisecond
	// roundTripAllowance covers the X round trips behind one typed
	// character.
	roundTripAllowance = 10 * time.Millisecond
	// typeCharAllowance is the time one typed character may take: it can
	// need its own binding, which costs two settle pauses.
	typeCharAllowance = 2*keymapSettle + roundTripAllowance
)

// Action kinds.
const (
	KindClick  = "click"
	KindMove   = "move"
	KindDown   = "down"
	KindUp     = "up"
	KindType   = "type"
	KindKey    = "key"
	KindScroll = "scroll"
	KindWait   = "wait"
	KindFocus  = "focus"
	// KindKeyDown and KindKeyUp hold a key (with modifiers) across the
	// actions between them, as hold_key and shift+drag need; whatever is
	// still held when the batch ends is released then.
	KindKeyDown = "key_down"
	KindKeyUp   = "key_up"
)

const kindList = "click, move, down, up, type, key, key_down, key_up, scroll, wait, focus"

// RawAction is an action as the agent writes it (JSON from the wire). Which
// fields apply depends on Kind. Numbers are float64 pointers because JSON
// numbers arrive that way; ParseBatch rejects NaN, infinities and fractional
// pixels.
type RawAction struct {
	// Kind is one of click, move, down, up, type, key, key_down, key_up,
	// scroll, wait, focus.
	Kind string `json:"kind"`
	// X and Y are a screen pixel: needed by click and move, optional for
	// down, up and scroll.
	X *float64 `json:"x,omitempty"`
	Y *float64 `json:"y,omitempty"`
	// Button for click, down and up: left (default), right or middle.
	Button string `json:"button,omitempty"`
	// Double makes a click a double click (it counts as two actions).
	Double bool `json:"double,omitempty"`
	// Text for type: any Unicode; "\n" presses Enter and "\t" Tab.
	Text *string `json:"text,omitempty"`
	// Key for key, key_down and key_up (which also take a modifier alone,
	// "shift"): a name (enter, esc, tab, backspace, delete, space, up,
	// down, left, right, home, end, pageup, pagedown, insert, f1-f12) or a
	// single character, optionally with modifiers: "ctrl+shift+t".
	Key string `json:"key,omitempty"`
	// Modifiers for key, key_down and key_up, in addition to those in Key:
	// ctrl, alt, shift, super (also cmd, meta, win, option). On click,
	// down, up and scroll they are held for that action only (a
	// shift+click); to hold one across several actions use key_down.
	Modifiers []string `json:"modifiers,omitempty"`
	// Direction for scroll: up, down, left or right.
	Direction string `json:"direction,omitempty"`
	// Amount for scroll: wheel steps 1-20, default 3.
	Amount *float64 `json:"amount,omitempty"`
	// MS for wait: milliseconds up to 5000, default 350.
	MS *float64 `json:"ms,omitempty"`
	// Application for focus: a window title or class to raise (substring,
	// any case), or a program to start when no window matches.
	Application string `json:"application,omitempty"`
	// URI for focus: passed to the program when it has to be started.
	URI string `json:"uri,omitempty"`
}

// Action is one validated action. A double click is two Actions with the
// same Number.
type Action struct {
	// Number is the action's 1-based position in the request.
	Number int
	Kind   string
	// At is the pointer position; HasAt tells whether one was given.
	At    image.Point
	HasAt bool
	// Button is 1 (left), 2 (middle) or 3 (right).
	Button int
	Text   string
	// Key is the canonical key name or the single character; Keysym its X
	// keysym; Modifiers the canonical modifier names (ctrl, alt, shift,
	// super), without duplicates.
	Key       string
	Keysym    uint32
	Modifiers []string
	// Direction and Amount for scroll.
	Direction string
	Amount    int
	// MS for wait.
	MS          int
	Application string
	URI         string
}

// Batch is a validated act request.
type Batch struct {
	Actions  []Action
	Observe  bool
	SettleMS int
}

// Budget is the longest the batch may take: its waits, the settle time,
// typing, launches and the gaps before presses in place, plus a fixed
// allowance for the rest.
func (b *Batch) Budget() time.Duration {
	d := workAllowance + time.Duration(b.SettleMS)*time.Millisecond
	for _, a := range b.Actions {
		switch a.Kind {
		case KindWait:
			d += time.Duration(a.MS) * time.Millisecond
		case KindType:
			d += typeCharAllowance * time.Duration(utf8.RuneCountInString(a.Text))
		case KindFocus:
			d += launchAllowance
		case KindClick, KindDown:
			d += pressGap
		}
	}
	return d
}

// ParseBatch validates raw actions against a screen of the given size and
// applies every limit. It is pure: it needs no X server. observe defaults to
// true and settleMS to DefaultSettleMS (clamped to 0..MaxWaitMS). Errors wrap
// ErrInvalid and name the action (1-based) and what to fix.
func ParseBatch(raw []RawAction, observe *bool, settleMS *float64, screen image.Rectangle) (*Batch, error) {
	if len(raw) == 0 {
		return nil, invalidf("actions must hold at least one action")
	}
	if len(raw) > MaxActions {
		return nil, invalidf("%d actions given, the limit is %d; split the batch", len(raw), MaxActions)
	}
	b := &Batch{Observe: true, SettleMS: DefaultSettleMS}
	if observe != nil {
		b.Observe = *observe
	}
	if settleMS != nil {
		v, ok := clamped(*settleMS, 0, MaxWaitMS)
		if !ok {
			return nil, invalidf("settle_ms is not a number; give milliseconds from 0 to %d", MaxWaitMS)
		}
		if *settleMS < 0 || *settleMS > MaxWaitMS {
			return nil, invalidf("settle_ms %v is not milliseconds from 0 to %d; observe again instead of settling longer", *settleMS, MaxWaitMS)
		}
		b.SettleMS = v
	}
	typed := 0
	held := map[uint32]bool{}
	for i := range raw {
		acts, err := parseAction(i+1, &raw[i], screen)
		if err != nil {
			return nil, err
		}
		b.Actions = append(b.Actions, acts...)
		for _, a := range acts {
			switch a.Kind {
			case KindType:
				typed += utf8.RuneCountInString(a.Text)
			case KindKeyDown:
				held[a.Keysym] = true
			case KindKeyUp:
				if !held[a.Keysym] {
					return nil, invalidf("action %d (key_up): %s is not held; press it with a key_down earlier in the batch (what a batch holds is released at its end anyway)", a.Number, a.Key)
				}
				delete(held, a.Keysym)
			}
		}
	}
	if len(b.Actions) > MaxActions {
		return nil, invalidf("the batch runs %d actions because each double click counts as two, the limit is %d; split the batch", len(b.Actions), MaxActions)
	}
	if typed > MaxTypeChars {
		return nil, invalidf("the batch types %d characters, the limit is %d; split the text across batches", typed, MaxTypeChars)
	}
	return b, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// clamped rounds v into lo..hi; false when v is NaN.
func clamped(v float64, lo, hi int) (int, bool) {
	if math.IsNaN(v) {
		return 0, false
	}
	v = math.Round(math.Max(float64(lo), math.Min(float64(hi), v)))
	return int(v), true
}

func parseAction(n int, r *RawAction, screen image.Rectangle) ([]Action, error) {
	kind := strings.ToLower(strings.TrimSpace(r.Kind))
	if kind == "" {
		return nil, invalidf("action %d has no kind; use one of %s", n, kindList)
	}
	a := Action{Number: n, Kind: kind, Button: 1}
	if len(r.Modifiers) > 0 {
		switch kind {
		case KindClick, KindDown, KindUp, KindScroll:
			mods, err := parseModifiers(r.Modifiers)
			if err != nil {
				return nil, invalidf("action %d (%s): %v", n, kind, err)
			}
			a.Modifiers = mods
		case KindKey, KindKeyDown, KindKeyUp:
		default:
			return nil, invalidf("action %d (%s): modifiers apply to key, key_down, key_up, click, down, up and scroll; to hold a key across other actions use key_down and key_up", n, kind)
		}
	}
	switch kind {
	case KindClick, KindMove, KindDown, KindUp, KindScroll:
		at, has, err := point(n, kind, r, screen)
		if err != nil {
			return nil, err
		}
		if !has && (kind == KindClick || kind == KindMove) {
			return nil, invalidf("action %d (%s) needs x and y, the pixel position on the screen", n, kind)
		}
		a.At, a.HasAt = at, has
	}
	switch kind {
	case KindClick, KindDown, KindUp:
		switch strings.ToLower(r.Button) {
		case "", "left":
			a.Button = 1
		case "middle":
			a.Button = 2
		case "right":
			a.Button = 3
		default:
			return nil, invalidf("action %d (%s): unknown button %q; use left, right or middle", n, kind, r.Button)
		}
		if kind == KindClick && r.Double {
			return []Action{a, a}, nil
		}
	case KindMove:
	case KindType:
		if r.Text == nil {
			return nil, invalidf("action %d (type) needs text to type", n)
		}
		for _, c := range *r.Text {
			if unicode.IsControl(c) && c != '\n' && c != '\t' && c != '\r' {
				return nil, invalidf("action %d (type): the text holds the control character %U, which cannot be typed; use a key action for special keys", n, c)
			}
		}
		a.Text = *r.Text
	case KindKey:
		k, err := parseKeySpec(r.Key, r.Modifiers)
		if err != nil {
			return nil, invalidf("action %d (key): %v", n, err)
		}
		a.Key, a.Keysym, a.Modifiers = k.name, k.keysym, k.mods
	case KindKeyDown, KindKeyUp:
		k, err := parseHeldKey(r.Key, r.Modifiers)
		if err != nil {
			return nil, invalidf("action %d (%s): %v", n, kind, err)
		}
		a.Key, a.Keysym, a.Modifiers = k.name, k.keysym, k.mods
	case KindScroll:
		switch d := strings.ToLower(r.Direction); d {
		case "up", "down", "left", "right":
			a.Direction = d
		case "":
			return nil, invalidf("action %d (scroll) needs a direction: up, down, left or right", n)
		default:
			return nil, invalidf("action %d (scroll): unknown direction %q; use up, down, left or right", n, r.Direction)
		}
		a.Amount = DefaultScrollAmount
		if r.Amount != nil {
			v, ok := clamped(*r.Amount, 1, MaxScrollAmount)
			if !ok {
				return nil, invalidf("action %d (scroll): amount is not a number; give wheel steps from 1 to %d", n, MaxScrollAmount)
			}
			a.Amount = v
		}
	case KindWait:
		a.MS = DefaultWaitMS
		if r.MS != nil {
			v, ok := clamped(*r.MS, 0, MaxWaitMS)
			if !ok {
				return nil, invalidf("action %d (wait): ms is not a number; give milliseconds from 0 to %d", n, MaxWaitMS)
			}
			if *r.MS < 0 || *r.MS > MaxWaitMS {
				return nil, invalidf("action %d (wait): ms %v is not milliseconds from 0 to %d; split a longer wait, or observe between batches", n, *r.MS, MaxWaitMS)
			}
			a.MS = v
		}
	case KindFocus:
		a.Application = strings.TrimSpace(r.Application)
		if a.Application == "" {
			return nil, invalidf("action %d (focus) needs the application name or window title to raise", n)
		}
		a.URI = r.URI
	default:
		return nil, invalidf("action %d has the unknown kind %q; use one of %s", n, r.Kind, kindList)
	}
	return []Action{a}, nil
}

// point validates the optional x, y pair of an action.
func point(n int, kind string, r *RawAction, screen image.Rectangle) (image.Point, bool, error) {
	if r.X == nil && r.Y == nil {
		return image.Point{}, false, nil
	}
	if r.X == nil || r.Y == nil {
		return image.Point{}, false, invalidf("action %d (%s): give both x and y, or neither", n, kind)
	}
	x, err := coordinate(n, kind, "x", *r.X, screen.Min.X, screen.Max.X, "wide")
	if err != nil {
		return image.Point{}, false, err
	}
	y, err := coordinate(n, kind, "y", *r.Y, screen.Min.Y, screen.Max.Y, "high")
	if err != nil {
		return image.Point{}, false, err
	}
	return image.Pt(x, y), true, nil
}

func coordinate(n int, kind, axis string, v float64, lo, hi int, dim string) (int, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, invalidf("action %d (%s): %s is not a number; give a screen pixel from %d to %d", n, kind, axis, lo, hi-1)
	}
	if v != math.Trunc(v) {
		return 0, invalidf("action %d (%s): %s must be a whole pixel, got %v", n, kind, axis, v)
	}
	if v < float64(lo) || v >= float64(hi) {
		return 0, invalidf("action %d (%s): %s %v is outside the screen, which is %d pixels %s; give %s from %d to %d", n, kind, axis, v, hi-lo, dim, axis, lo, hi-1)
	}
	return int(v), nil
}
