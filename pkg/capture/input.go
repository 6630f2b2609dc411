package capture

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/xgb/xproto"
	"github.com/BurntSushi/xgb/xtest"
)

// X core event types XTEST fakes.
const (
	evKeyPress      = 2
	evKeyRelease    = 3
	evButtonPress   = 4
	evButtonRelease = 5
	evMotionNotify  = 6
)

// Key levels: which modifiers select a keysym on its key (core keymap
// columns 0, 1, 4 and 5 under XKB: group 1 levels 1-4).
const (
	levelPlain = iota
	levelShift
	levelThree
	levelThreeShift
)

// settlePerStroke and maxSettle size the pause before bindings change (see
// inputRun.settle); within typeCharAllowance, which budgets two
// keymapSettle pauses for every character.
const (
	settlePerStroke = 5 * time.Millisecond
	maxSettle       = 2 * time.Second
)

// syncEvery bounds the keystrokes sent without a round trip, so the
// server's input queue never holds more than a few hundred of ours.
const syncEvery = 64

type keyPos struct {
	code  xproto.Keycode
	level int
}

// keyboard is the keymap of one connection, loaded at the start of each
// batch and again after a MappingNotify.
type keyboard struct {
	seen      uint64 // xconn.mappings when loaded
	loaded    bool
	perCode   int
	syms      map[xproto.Keycode][]xproto.Keysym
	byRune    map[rune]keyPos
	byKeysym  map[uint32]keyPos
	spare     []xproto.Keycode // keycodes without symbols, then media keys (see borrowable)
	shiftCode xproto.Keycode
	lvl3Code  xproto.Keycode // 0 when level 3 cannot be reached
}

// load reads the keyboard and modifier mappings.
func (x *xconn) loadKeyboard() (*keyboard, error) {
	seen := x.mappings.Load()
	count := int(x.maxKey) - int(x.minKey) + 1
	km, err := xproto.GetKeyboardMapping(x.c, x.minKey, byte(count)).Reply()
	if err != nil || !x.alive() {
		return nil, x.fail(err)
	}
	mm, err := xproto.GetModifierMapping(x.c).Reply()
	if err != nil || !x.alive() {
		return nil, x.fail(err)
	}
	kb := &keyboard{seen: seen, loaded: true, perCode: int(km.KeysymsPerKeycode),
		syms: map[xproto.Keycode][]xproto.Keysym{}, byRune: map[rune]keyPos{}, byKeysym: map[uint32]keyPos{}}
	n := kb.perCode
	columns := [4]int{0, 1, 4, 5}
	var media []xproto.Keycode
	for i := 0; i < count && (i+1)*n <= len(km.Keysyms); i++ {
		code := xproto.Keycode(int(x.minKey) + i)
		syms := km.Keysyms[i*n : (i+1)*n]
		kb.syms[code] = syms
		switch borrowable(syms) {
		case borrowEmpty:
			kb.spare = append(kb.spare, code)
			continue
		case borrowMedia:
			media = append(media, code)
		}
		for level, col := range columns {
			if col >= n || syms[col] == 0 {
				continue
			}
			ks := uint32(syms[col])
			if old, ok := kb.byKeysym[ks]; !ok || level < old.level {
				kb.byKeysym[ks] = keyPos{code, level}
			}
			if r := keysymRune(ks); r != 0 {
				if old, ok := kb.byRune[r]; !ok || level < old.level {
					kb.byRune[r] = keyPos{code, level}
				}
			}
		}
	}
	kb.spare = append(kb.spare, media...)
	// Shift is the first keycode of the Shift modifier row; level 3 is
	// usable when a key holding ISO_Level3_Shift sits on a modifier row.
	k := int(mm.KeycodesPerModifier)
	for mod := 0; mod < 8 && (mod+1)*k <= len(mm.Keycodes); mod++ {
		for _, code := range mm.Keycodes[mod*k : (mod+1)*k] {
			if code == 0 {
				continue
			}
			if mod == 0 && kb.shiftCode == 0 {
				kb.shiftCode = code
			}
			for _, s := range kb.syms[code] {
				if s == ksISOLevel3Shift && kb.lvl3Code == 0 && mod >= 3 {
					kb.lvl3Code = code
				}
			}
		}
	}
	if kb.lvl3Code == 0 {
		// Level 3 unreachable: forget those positions so the characters
		// get a temporary binding instead.
		for r, p := range kb.byRune {
			if p.level >= levelThree {
				delete(kb.byRune, r)
			}
		}
		for s, p := range kb.byKeysym {
			if p.level >= levelThree {
				delete(kb.byKeysym, s)
			}
		}
	}
	return kb, nil
}

const (
	borrowNo = iota
	borrowEmpty
	borrowMedia
)

// borrowable tells whether a keycode may carry a temporary binding: keycodes
// without symbols first; when those run out (an X server has about 20), the
// keycodes of vendor media and launcher keys (XF86 keysyms, about 95 on
// a PC keymap), which no typing needs and which are restored with the rest.
// More slots mean fewer rebindings of a keycode within a batch, and a
// rebinding is the one moment a slow client can misread a key.
func borrowable(syms []xproto.Keysym) int {
	empty, media := true, true
	for _, s := range syms {
		if s != 0 {
			empty = false
			if s&0xffffff00 != 0x1008ff00 {
				media = false
			}
		}
	}
	switch {
	case empty:
		return borrowEmpty
	case media:
		return borrowMedia
	}
	return borrowNo
}

// inputRun is the input state of one batch: what it pressed (released when
// it ends, whatever happens) and the temporary key bindings it made.
type inputRun struct {
	x       *xconn
	kb      *keyboard
	pressed []pressedInput                     // in press order
	bound   map[uint32]keyPos                  // keysyms on borrowed keycodes
	orig    map[xproto.Keycode][]xproto.Keysym // what borrowed keycodes held before
	writes  map[xproto.Keycode][]xproto.Keysym // keycode changes not yet sent (see flush)
	free    []xproto.Keycode                   // spare keycodes not bound yet
	lastKey time.Time
	strokes int // keys pressed since the bindings were last changed
	sent    int // events since the last round trip
	// held modifier levels while typing
	shiftHeld, lvl3Held bool
	// capsLock is the Caps Lock key pressed to turn it off for the batch,
	// to be pressed again at its end; 0 when Caps Lock was off.
	capsLock    xproto.Keycode
	capsChecked bool
	// held maps the keysyms key_down holds to the keycodes pressed for
	// them, so key_up lets go of the same key even if bindings moved.
	held map[uint32]xproto.Keycode
}

type pressedInput struct {
	button bool
	detail byte
}

func newInputRun(x *xconn) *inputRun {
	return &inputRun{x: x, bound: map[uint32]keyPos{},
		orig: map[xproto.Keycode][]xproto.Keysym{}, writes: map[xproto.Keycode][]xproto.Keysym{},
		held: map[uint32]xproto.Keycode{}}
}

// refresh reloads the keymap when it changed (or was never read).
func (in *inputRun) refresh() error {
	if in.kb != nil && in.kb.seen == in.x.mappings.Load() {
		return nil
	}
	kb, err := in.x.loadKeyboard()
	if err != nil {
		return err
	}
	// Keycodes this run borrowed are its own whatever they hold now: a
	// binding left from before a recycle must not be found as a layout key.
	for r, p := range kb.byRune {
		if _, ours := in.orig[p.code]; ours {
			delete(kb.byRune, r)
		}
	}
	for ks, p := range kb.byKeysym {
		if _, ours := in.orig[p.code]; ours {
			delete(kb.byKeysym, ks)
		}
	}
	in.kb = kb
	in.findFree()
	return nil
}

// findFree lists the keycodes a binding may take: the spare ones and those
// this run borrowed, less those holding a binding in use, in order, so that
// a chunk's bindings fall on runs of adjacent keycodes (see flush).
func (in *inputRun) findFree() {
	inUse := map[xproto.Keycode]bool{}
	for _, p := range in.bound {
		inUse[p.code] = true
	}
	codes := slices.Clone(in.kb.spare)
	for c := range in.orig {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	in.free = in.free[:0]
	for _, c := range codes {
		if !inUse[c] {
			in.free = append(in.free, c)
		}
	}
}

func (in *inputRun) fake(typ, detail byte, x, y int16) error {
	xtest.FakeInput(in.x.c, typ, detail, 0, in.x.root, x, y, 0)
	in.sent++
	if in.sent >= syncEvery {
		in.sent = 0
		return in.x.sync()
	}
	if !in.x.alive() {
		return in.x.fail(fmt.Errorf("fake input"))
	}
	return nil
}

func (in *inputRun) press(code xproto.Keycode) error {
	in.strokes++
	in.pressed = append(in.pressed, pressedInput{detail: byte(code)})
	in.lastKey = time.Now()
	return in.fake(evKeyPress, byte(code), 0, 0)
}

func (in *inputRun) release(code xproto.Keycode) error {
	in.forget(false, byte(code))
	in.lastKey = time.Now()
	return in.fake(evKeyRelease, byte(code), 0, 0)
}

func (in *inputRun) forget(button bool, detail byte) {
	for i := len(in.pressed) - 1; i >= 0; i-- {
		if in.pressed[i].button == button && in.pressed[i].detail == detail {
			in.pressed = append(in.pressed[:i], in.pressed[i+1:]...)
			return
		}
	}
}

func (in *inputRun) move(x, y int) error { return in.fake(evMotionNotify, 0, int16(x), int16(y)) }

func (in *inputRun) buttonDown(b int) error {
	in.pressed = append(in.pressed, pressedInput{button: true, detail: byte(b)})
	return in.fake(evButtonPress, byte(b), 0, 0)
}

func (in *inputRun) buttonUp(b int) error {
	in.forget(true, byte(b))
	return in.fake(evButtonRelease, byte(b), 0, 0)
}

// releaseAll lets go of everything the batch still holds, newest first. It
// runs when a batch ends for any reason; on a dead connection there is
// nothing left to release. unbindAll follows it.
func (in *inputRun) releaseAll() {
	if !in.x.alive() {
		return
	}
	for i := len(in.pressed) - 1; i >= 0; i-- {
		p := in.pressed[i]
		typ := byte(evKeyRelease)
		if p.button {
			typ = evButtonRelease
		}
		xtest.FakeInput(in.x.c, typ, p.detail, 0, in.x.root, 0, 0, 0)
	}
	in.pressed = nil
	in.shiftHeld, in.lvl3Held = false, false
	clear(in.held)
}

// suspendCapsLock turns Caps Lock off for the batch when it is on: it would
// turn the case of every letter typed through the layout's keys. Num Lock
// needs nothing: text is never typed through keypad keys. resumeCapsLock
// turns it back on.
func (in *inputRun) suspendCapsLock() error {
	if in.capsChecked {
		return nil
	}
	in.capsChecked = true
	_, mask, err := in.x.pointer()
	if err != nil || mask&xproto.ModMaskLock == 0 {
		return err
	}
	if err := in.refresh(); err != nil {
		return err
	}
	p, ok := in.kb.byKeysym[ksCapsLock]
	if !ok {
		if p, ok = in.kb.byKeysym[ksShiftLock]; !ok {
			return fmt.Errorf("caps lock is on and the keymap has no Caps Lock key to turn it off; turn it off and retry")
		}
	}
	if err := in.tap(p.code); err != nil {
		return err
	}
	in.capsLock = p.code
	return nil
}

// resumeCapsLock turns Caps Lock back on if the batch turned it off.
func (in *inputRun) resumeCapsLock() error {
	if in.capsLock == 0 || !in.x.alive() {
		return nil
	}
	code := in.capsLock
	in.capsLock = 0
	return in.tap(code)
}

// tap presses and releases a key.
func (in *inputRun) tap(code xproto.Keycode) error {
	if err := in.press(code); err != nil {
		return err
	}
	return in.release(code)
}

// setLevel holds exactly the modifiers a key level needs.
func (in *inputRun) setLevel(level int) error {
	wantShift := level == levelShift || level == levelThreeShift
	wantL3 := level >= levelThree
	if wantShift != in.shiftHeld && in.kb.shiftCode == 0 {
		return fmt.Errorf("the keyboard has no Shift key")
	}
	if err := in.hold(in.kb.shiftCode, wantShift, &in.shiftHeld); err != nil {
		return err
	}
	return in.hold(in.kb.lvl3Code, wantL3, &in.lvl3Held)
}

// hold presses or releases the modifier code so that it is down exactly
// when want is; *held says whether it is down now.
func (in *inputRun) hold(code xproto.Keycode, want bool, held *bool) error {
	if want == *held {
		return nil
	}
	var err error
	if want {
		err = in.press(code)
	} else {
		err = in.release(code)
	}
	if err != nil {
		return err
	}
	*held = want
	return nil
}

// lookup finds the key for a keysym typed as rune r (0 for none).
func (in *inputRun) lookup(ks uint32, r rune) (keyPos, bool) {
	if p, ok := in.bound[ks]; ok {
		return p, true
	}
	if r != 0 && ks != ksReturn && ks != ksTab {
		p, ok := in.kb.byRune[r]
		return p, ok
	}
	p, ok := in.kb.byKeysym[ks]
	return p, ok
}

// bind puts keysyms on spare keycodes, one per keycode on every level, so
// that no modifier held changes what they type. The caller made sure they
// fit.
func (in *inputRun) bind(syms []uint32) error {
	for _, ks := range syms {
		in.bindLevels(ks, ks)
	}
	return in.flush()
}

// bindLevels puts plain on the first level of a spare keycode and shifted on
// the second (in both groups), like a letter key: a letter the layout lacks
// still answers to shift.
func (in *inputRun) bindLevels(plain, shifted uint32) {
	code := in.free[0]
	in.free = in.free[1:]
	list := make([]xproto.Keysym, in.kb.perCode)
	for i := range list {
		list[i] = xproto.Keysym(plain)
		if i%2 == 1 && i < 4 { // columns 1 and 3: group 1 and 2, level 2
			list[i] = xproto.Keysym(shifted)
		}
	}
	if _, ok := in.orig[code]; !ok {
		in.orig[code] = in.kb.syms[code]
	}
	in.writes[code] = list
	in.bound[plain] = keyPos{code, levelPlain}
	if shifted != plain {
		in.bound[shifted] = keyPos{code, levelShift}
	}
}

// unbindAll restores the spare keycodes to no symbols, once the client has
// handled the keys already sent with the bindings in place.
func (in *inputRun) unbindAll() error {
	if len(in.orig) == 0 || !in.x.alive() {
		return nil
	}
	if err := in.awaitClient(); err != nil {
		return err
	}
	for code, orig := range in.orig {
		if len(orig) != in.kb.perCode {
			orig = make([]xproto.Keysym, in.kb.perCode)
		}
		in.writes[code] = orig
	}
	clear(in.orig)
	clear(in.bound)
	err := in.flush()
	in.findFree()
	return err
}

// recycle makes every borrowed keycode free for new bindings once the
// client has handled the keys sent through them. The new bindings
// overwrite the old ones in place; what is not overwritten is restored at
// the end of the batch.
func (in *inputRun) recycle() error {
	if err := in.awaitClient(); err != nil {
		return err
	}
	clear(in.bound)
	in.findFree()
	return nil
}

// flush writes the pending keycode changes with one ChangeKeyboardMapping
// per run of adjacent keycodes. Every request makes the server send every
// client a MappingNotify, after which a client rereads the keymap; one per
// binding cost xterm more than the typing itself.
func (in *inputRun) flush() error {
	codes := slices.Sorted(maps.Keys(in.writes))
	for len(codes) > 0 {
		n := 1
		for n < len(codes) && codes[n] == codes[0]+xproto.Keycode(n) {
			n++
		}
		list := make([]xproto.Keysym, 0, n*in.kb.perCode)
		for _, c := range codes[:n] {
			list = append(list, in.writes[c]...)
		}
		xproto.ChangeKeyboardMapping(in.x.c, byte(n), codes[0], byte(in.kb.perCode), list)
		codes = codes[n:]
	}
	clear(in.writes)
	return in.x.sync()
}

// awaitClient returns once the client receiving our keys has handled every
// event sent so far, so that the keycodes those events used may change (see
// keyclient.go). When the client cannot be watched it waits the timed
// settle instead.
func (in *inputRun) awaitClient() error {
	if err := in.x.sync(); err != nil {
		return err
	}
	defer func() { in.strokes = 0 }()
	if pid := in.x.keyClientPID(); pid != 0 {
		// Idle twice in a row: a toolkit may hand events from a reader
		// thread to its main thread, which sleeps until told.
		deadline := time.Now().Add(maxClientWait)
		for idle := 0; idle < 2; {
			switch readClientState(pid) {
			case clientIdle:
				idle++
			case clientBusy:
				idle = 0
			default:
				pid = 0
			}
			if pid == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(clientPoll)
		}
		if pid != 0 {
			return nil
		}
	}
	if wait := in.settle() - time.Since(in.lastKey); wait > 0 {
		time.Sleep(wait)
	}
	return nil
}

// settle is how long to leave the bindings in place after the last key:
// clients look a key up when they process its event, and a terminal drawing
// unfamiliar glyphs can be behind by a few milliseconds per key.
func (in *inputRun) settle() time.Duration {
	return min(keymapSettle+time.Duration(in.strokes)*settlePerStroke, maxSettle)
}

// typeText types s exactly: every character through the key that produces
// it in the current layout, or through a temporary binding.
func (in *inputRun) typeText(s string, stop func() error) error {
	if err := in.refresh(); err != nil {
		return err
	}
	type stroke struct {
		ks uint32
		r  rune
	}
	var strokes []stroke
	prevCR := false
	for _, r := range s {
		if r == '\n' && prevCR {
			prevCR = false
			continue // "\r\n" is one Enter
		}
		prevCR = r == '\r'
		ks, ok := runeKeysym(r)
		if !ok {
			return fmt.Errorf("the character %U cannot be typed", r)
		}
		if ks == ksReturn || ks == ksTab {
			r = 0
		}
		strokes = append(strokes, stroke{ks, r})
	}
	for i := 0; i < len(strokes); {
		// The longest run from i whose missing keysyms fit the free
		// keycodes.
		var need []uint32
		needSet := map[uint32]bool{}
		j := i
		for ; j < len(strokes); j++ {
			st := strokes[j]
			if _, ok := in.lookup(st.ks, st.r); ok || needSet[st.ks] {
				continue
			}
			if len(need) == len(in.free) {
				break
			}
			needSet[st.ks] = true
			need = append(need, st.ks)
		}
		if j == i {
			if len(in.bound) == 0 {
				return fmt.Errorf("the keymap has no spare keycode to bind %U to", strokes[i].r)
			}
			if err := in.setLevel(levelPlain); err != nil {
				return err
			}
			if err := in.recycle(); err != nil {
				return err
			}
			continue
		}
		if len(need) > 0 {
			if err := in.bind(need); err != nil {
				return err
			}
		}
		for k := i; k < j; k++ {
			if k%syncEvery == 0 {
				if err := stop(); err != nil {
					return err
				}
			}
			p, _ := in.lookup(strokes[k].ks, strokes[k].r)
			if err := in.setLevel(p.level); err != nil {
				return err
			}
			if err := in.press(p.code); err != nil {
				return err
			}
			if err := in.release(p.code); err != nil {
				return err
			}
		}
		i = j
	}
	if err := in.setLevel(levelPlain); err != nil {
		return err
	}
	return in.x.sync()
}

// key presses a key with modifiers, like a person pressing ctrl+shift+t.
func (in *inputRun) key(a Action) error {
	if err := in.refresh(); err != nil {
		return err
	}
	r := rune(0)
	if len([]rune(a.Key)) == 1 {
		r = []rune(a.Key)[0]
	}
	want := []uint32{a.Keysym}
	for _, m := range a.Modifiers {
		if m != "shift" {
			want = append(want, modifierKeysyms[m])
		}
	}
	var missing []uint32
	for i, ks := range want {
		rr := rune(0)
		if i == 0 {
			rr = r
		}
		if _, ok := in.lookup(ks, rr); !ok {
			missing = append(missing, ks)
		}
	}
	if len(missing) > len(in.free) {
		if err := in.recycle(); err != nil {
			return err
		}
		if len(missing) > len(in.free) {
			return fmt.Errorf("the keymap has no spare keycode to bind %s to", a.Key)
		}
	}
	if len(missing) > 0 {
		for _, ks := range missing {
			if lower, upper, ok := casePair(r); ok && ks == a.Keysym {
				in.bindLevels(lower, upper)
				continue
			}
			in.bindLevels(ks, ks)
		}
		if err := in.flush(); err != nil {
			return err
		}
	}
	main, _ := in.lookup(a.Keysym, r)
	var mods []xproto.Keycode
	level := main.level
	for _, m := range a.Modifiers {
		if m == "shift" {
			// Shift is held through the key's level, like a Shift the
			// character itself needs.
			if level == levelPlain || level == levelThree {
				level++
			}
			continue
		}
		p, _ := in.lookup(modifierKeysyms[m], 0)
		mods = append(mods, p.code)
	}
	for _, c := range mods {
		if err := in.press(c); err != nil {
			return err
		}
	}
	if err := in.setLevel(level); err != nil {
		return err
	}
	if err := in.press(main.code); err != nil {
		return err
	}
	if err := in.release(main.code); err != nil {
		return err
	}
	if err := in.setLevel(levelPlain); err != nil {
		return err
	}
	for i := len(mods) - 1; i >= 0; i-- {
		if err := in.release(mods[i]); err != nil {
			return err
		}
	}
	return in.x.sync()
}

// casePair gives the keysyms of r's lower and upper case, for a key the
// layout lacks: bound on two levels, it answers to shift like a letter key.
func casePair(r rune) (lower, upper uint32, ok bool) {
	lo, up := unicode.ToLower(r), unicode.ToUpper(r)
	if r == 0 || lo == up {
		return 0, 0, false
	}
	lower, ok1 := runeKeysym(lo)
	upper, ok2 := runeKeysym(up)
	return lower, upper, ok1 && ok2
}

// codes finds the keycodes of keysyms pressed as keys (not typed as
// characters), binding spare keycodes to those the layout lacks. Shift is
// the layout's Shift key.
func (in *inputRun) codes(syms []uint32, name string) ([]xproto.Keycode, error) {
	if err := in.refresh(); err != nil {
		return nil, err
	}
	var missing []uint32
	for _, ks := range syms {
		if ks == ksShiftL && in.kb.shiftCode != 0 {
			continue
		}
		if _, ok := in.lookup(ks, 0); !ok {
			missing = append(missing, ks)
		}
	}
	if len(missing) > len(in.free) {
		if err := in.recycle(); err != nil {
			return nil, err
		}
		if len(missing) > len(in.free) {
			return nil, fmt.Errorf("the keymap has no spare keycode to bind %s to", name)
		}
	}
	if len(missing) > 0 {
		if err := in.bind(missing); err != nil {
			return nil, err
		}
	}
	out := make([]xproto.Keycode, 0, len(syms))
	for _, ks := range syms {
		if ks == ksShiftL && in.kb.shiftCode != 0 {
			out = append(out, in.kb.shiftCode)
			continue
		}
		p, _ := in.lookup(ks, 0)
		out = append(out, p.code)
	}
	return out, nil
}

// modifierSyms are the keysyms of canonical modifier names, in press order.
func modifierSyms(mods []string) []uint32 {
	out := make([]uint32, 0, len(mods))
	for _, m := range mods {
		out = append(out, modifierKeysyms[m])
	}
	return out
}

// holdModifiers presses the modifier keys of a click, scroll, down or up;
// the returned function lets go of them, newest first. What it pressed is
// also released by releaseAll if the action fails half way.
func (in *inputRun) holdModifiers(mods []string) (func() error, error) {
	if len(mods) == 0 {
		return func() error { return nil }, nil
	}
	codes, err := in.codes(modifierSyms(mods), strings.Join(mods, "+"))
	if err != nil {
		return nil, err
	}
	for _, c := range codes {
		if err := in.press(c); err != nil {
			return nil, err
		}
	}
	return func() error {
		for i := len(codes) - 1; i >= 0; i-- {
			if err := in.release(codes[i]); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// keyDown presses a key_down's modifiers and then its key, and leaves them
// pressed: a key_up or the end of the batch lets go of them. The key goes
// down as the key it is, at no shift level: a held "a" is the a key (give
// shift in modifiers for its upper case).
func (in *inputRun) keyDown(a Action) error {
	syms := append(modifierSyms(a.Modifiers), a.Keysym)
	codes, err := in.codes(syms, a.Key)
	if err != nil {
		return err
	}
	for i, c := range codes {
		if _, down := in.held[syms[i]]; down {
			continue // already held by an earlier key_down
		}
		if err := in.press(c); err != nil {
			return err
		}
		in.held[syms[i]] = c
	}
	return in.x.sync()
}

// keyUp lets go of a key_up's key and then of its modifiers; keys not held
// are skipped (validation makes sure the key itself was).
func (in *inputRun) keyUp(a Action) error {
	syms := append(modifierSyms(a.Modifiers), a.Keysym)
	for i := len(syms) - 1; i >= 0; i-- {
		c, down := in.held[syms[i]]
		if !down {
			continue
		}
		delete(in.held, syms[i])
		if err := in.release(c); err != nil {
			return err
		}
	}
	return in.x.sync()
}
