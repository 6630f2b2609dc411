package session

import (
	"strings"
)

// namedKeys are the keys Send accepts by name, as xterm sends them in normal
// cursor mode.
var namedKeys = map[string]string{
	"enter":     "\r",
	"return":    "\r",
	"esc":       "\x1b",
	"escape":    "\x1b",
	"tab":       "\t",
	"up":        "\x1b[A",
	"down":      "\x1b[B",
	"right":     "\x1b[C",
	"left":      "\x1b[D",
	"home":      "\x1b[H",
	"end":       "\x1b[F",
	"pageup":    "\x1b[5~",
	"pagedown":  "\x1b[6~",
	"insert":    "\x1b[2~",
	"backspace": "\x7f",
	"delete":    "\x1b[3~",
	"space":     " ",
	"f1":        "\x1bOP",
	"f2":        "\x1bOQ",
	"f3":        "\x1bOR",
	"f4":        "\x1bOS",
	"f5":        "\x1b[15~",
	"f6":        "\x1b[17~",
	"f7":        "\x1b[18~",
	"f8":        "\x1b[19~",
	"f9":        "\x1b[20~",
	"f10":       "\x1b[21~",
	"f11":       "\x1b[23~",
	"f12":       "\x1b[24~",
}

// KeyBytes returns the bytes a terminal sends for a key name: one of enter,
// esc, tab, up, down, left, right, home, end, pageup, pagedown, insert,
// backspace, delete, space, f1-f12, ctrl+<letter> (also ctrl+[ \ ] ^ _ and
// ctrl+space), alt+<key> (ESC then the key; the key is a single character or
// a name above). Names are case-insensitive. An unknown name is ErrInvalid.
func KeyBytes(name string) ([]byte, error) {
	k := strings.ToLower(strings.TrimSpace(name))
	if s, ok := namedKeys[k]; ok {
		return []byte(s), nil
	}
	if rest, ok := strings.CutPrefix(k, "ctrl+"); ok {
		if rest == "space" || rest == "@" {
			return []byte{0}, nil
		}
		if len(rest) == 1 {
			c := rest[0]
			switch {
			case c >= 'a' && c <= 'z':
				return []byte{c - 'a' + 1}, nil
			case c >= '[' && c <= '_':
				return []byte{c - '@'}, nil
			}
		}
	}
	if rest, ok := strings.CutPrefix(k, "alt+"); ok && rest != "" {
		if s, ok := namedKeys[rest]; ok {
			return append([]byte{0x1b}, s...), nil
		}
		// A single character, kept in its original case (alt+X differs from alt+x).
		orig := strings.TrimSpace(name)[len("alt+"):]
		if len([]rune(orig)) == 1 {
			return append([]byte{0x1b}, orig...), nil
		}
		if b, err := KeyBytes(rest); err == nil {
			return append([]byte{0x1b}, b...), nil
		}
	}
	return nil, errorf(ErrInvalid, "unknown key %q; use enter, esc, tab, up, down, left, right, home, end, pageup, pagedown, backspace, delete, space, ctrl+<letter>, alt+<key> or f1-f12", name)
}
