package capture

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// X keysyms used by name.
const (
	ksBackSpace      = 0xff08
	ksTab            = 0xff09
	ksReturn         = 0xff0d
	ksEscape         = 0xff1b
	ksDelete         = 0xffff
	ksHome           = 0xff50
	ksLeft           = 0xff51
	ksUp             = 0xff52
	ksRight          = 0xff53
	ksDown           = 0xff54
	ksPageUp         = 0xff55
	ksPageDown       = 0xff56
	ksEnd            = 0xff57
	ksInsert         = 0xff63
	ksF1             = 0xffbe
	ksShiftL         = 0xffe1
	ksCapsLock       = 0xffe5
	ksShiftLock      = 0xffe6
	ksControlL       = 0xffe3
	ksAltL           = 0xffe9
	ksSuperL         = 0xffeb
	ksISOLevel3Shift = 0xfe03
	ksModeSwitch     = 0xff7e
	ksUnicodeBase    = 0x01000000
)

// keyNames maps the key names agents use to keysyms.
var keyNames = map[string]uint32{
	"enter": ksReturn, "return": ksReturn,
	"esc": ksEscape, "escape": ksEscape,
	"tab":       ksTab,
	"backspace": ksBackSpace,
	"delete":    ksDelete, "del": ksDelete,
	"space":  ' ',
	"up":     ksUp,
	"down":   ksDown,
	"left":   ksLeft,
	"right":  ksRight,
	"home":   ksHome,
	"end":    ksEnd,
	"pageup": ksPageUp, "page_up": ksPageUp, "pgup": ksPageUp,
	"pagedown": ksPageDown, "page_down": ksPageDown, "pgdn": ksPageDown,
	"insert": ksInsert,
	"f1":     ksF1, "f2": ksF1 + 1, "f3": ksF1 + 2, "f4": ksF1 + 3, "f5": ksF1 + 4, "f6": ksF1 + 5,
	"f7": ksF1 + 6, "f8": ksF1 + 7, "f9": ksF1 + 8, "f10": ksF1 + 9, "f11": ksF1 + 10, "f12": ksF1 + 11,
}

// modifierNames maps modifier names and their aliases to canonical names.
var modifierNames = map[string]string{
	"ctrl": "ctrl", "control": "ctrl",
	"alt": "alt", "option": "alt",
	"shift": "shift",
	"super": "super", "cmd": "super", "command": "super", "meta": "super", "win": "super",
}

// modifierKeysyms are the keys pressed for each canonical modifier.
var modifierKeysyms = map[string]uint32{"ctrl": ksControlL, "alt": ksAltL, "shift": ksShiftL, "super": ksSuperL}

// modifierOrder is the order modifiers are pressed in.
var modifierOrder = []string{"ctrl", "alt", "shift", "super"}

const keyHelp = "use a name such as enter, esc, tab, backspace, delete, space, up, down, left, right, home, end, pageup, pagedown, f1 to f12, or a single character"

type keySpec struct {
	name   string
	keysym uint32
	mods   []string
}

// parseKeySpec reads "ctrl+shift+t" style keys plus extra modifiers.
func parseKeySpec(key string, extra []string) (keySpec, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return keySpec{}, errors.New("needs a key such as enter, esc, tab, or a letter")
	}
	main, prefix := key, ""
	switch {
	case key == "+":
	case strings.HasSuffix(key, "++"):
		main, prefix = "+", key[:len(key)-2]
	default:
		if i := strings.LastIndexByte(key, '+'); i >= 0 {
			main, prefix = key[i+1:], key[:i]
		}
	}
	var names []string
	if prefix != "" {
		names = strings.Split(prefix, "+")
	}
	names = append(names, extra...)
	seen := map[string]bool{}
	for _, m := range names {
		canon, ok := modifierNames[strings.ToLower(strings.TrimSpace(m))]
		if !ok {
			return keySpec{}, fmt.Errorf("unknown modifier %q; use ctrl, alt, shift or super (also cmd, meta, win, option)", m)
		}
		seen[canon] = true
	}
	var mods []string
	for _, m := range modifierOrder {
		if seen[m] {
			mods = append(mods, m)
		}
	}
	main = strings.TrimSpace(main)
	if main == "" {
		main = " "
	}
	if utf8.RuneCountInString(main) == 1 {
		r, _ := utf8.DecodeRuneInString(main)
		ks, ok := runeKeysym(r)
		if !ok {
			return keySpec{}, fmt.Errorf("the character %U has no key; %s", r, keyHelp)
		}
		return keySpec{name: main, keysym: ks, mods: mods}, nil
	}
	name := strings.ToLower(main)
	ks, ok := keyNames[name]
	if !ok {
		return keySpec{}, fmt.Errorf("unknown key %q; %s", main, keyHelp)
	}
	return keySpec{name: name, keysym: ks, mods: mods}, nil
}

// runeKeysym maps a character to its keysym: Latin-1 directly, control keys
// typed as text to their keys, everything else to the Unicode keysym range.
func runeKeysym(r rune) (uint32, bool) {
	switch {
	case r == '\n' || r == '\r':
		return ksReturn, true
	case r == '\t':
		return ksTab, true
	case r == '\b':
		return ksBackSpace, true
	case r == 0x1b:
		return ksEscape, true
	case r == 0x7f:
		return ksDelete, true
	case r < 0x20 || (r >= 0x80 && r < 0xa0) || r > utf8.MaxRune || r == utf8.RuneError:
		return 0, false
	case r < 0x100:
		return uint32(r), true
	default:
		return ksUnicodeBase | uint32(r), true
	}
}

//go:generate go run gen_keysyms.go

// keysymRune is the character a keysym types, for finding characters in the
// keymap; 0 for keys that type none.
func keysymRune(ks uint32) rune {
	switch {
	case ks >= 0x20 && ks <= 0x7e, ks >= 0xa0 && ks <= 0xff:
		return rune(ks)
	case ks&0xff000000 == ksUnicodeBase:
		r := rune(ks & 0x00ffffff)
		if r >= 0x100 && r <= utf8.MaxRune {
			return r
		}
	}
	return legacyKeysymRunes[ks]
}

// parseModifiers reads the modifiers held around a click, scroll, down or
// up: canonical names, in press order, without duplicates.
func parseModifiers(names []string) ([]string, error) {
	seen := map[string]bool{}
	for _, m := range names {
		canon, ok := modifierNames[strings.ToLower(strings.TrimSpace(m))]
		if !ok {
			return nil, fmt.Errorf("unknown modifier %q; use ctrl, alt, shift or super (also cmd, meta, win, option)", m)
		}
		seen[canon] = true
	}
	var mods []string
	for _, m := range modifierOrder {
		if seen[m] {
			mods = append(mods, m)
		}
	}
	return mods, nil
}

// parseHeldKey reads the key of a key_down or key_up: a key as for key
// (with its modifiers), or a modifier alone ("shift", "ctrl"), held as its
// left key.
func parseHeldKey(key string, extra []string) (keySpec, error) {
	if canon, ok := modifierNames[strings.ToLower(strings.TrimSpace(key))]; ok {
		mods, err := parseModifiers(extra)
		if err != nil {
			return keySpec{}, err
		}
		mods = slices.DeleteFunc(mods, func(m string) bool { return m == canon })
		return keySpec{name: canon, keysym: modifierKeysyms[canon], mods: mods}, nil
	}
	k, err := parseKeySpec(key, extra)
	if err != nil && strings.HasPrefix(err.Error(), "unknown key") {
		return k, fmt.Errorf("%v, or a modifier: ctrl, alt, shift, super", err)
	}
	return k, err
}
