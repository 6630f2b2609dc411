package termmodel

import (
	"unicode"
	"unicode/utf8"
)

// maxCellMarks is the most combining characters a screen cell keeps after
// its base character. Terminals bound a cell the same way: xterm keeps at
// most 10 combining characters (its combiningChars resource, 2 by
// default) and tmux a cell's UTF-8 in UTF8_SIZE (21) bytes. Without a
// bound, a program printing a letter and then 150,000 accents made one
// cell hold them all, and every snapshot, wait and ask of the session an
// answer of megabytes. Eight is more than any script needs (Vietnamese
// stacks two, Indic syllables about four, an emoji tag sequence six).
const maxCellMarks = 8

// markLimiter drops, from the output fed to the screen model, the
// combining characters past maxCellMarks in one run after a base
// character. It keeps its state between writes (a run, or a character
// split across two writes, goes on in the next). The zero value is ready.
type markLimiter struct {
	marks int     // combining characters since the last base character
	carry [4]byte // the start of a character split across writes
	nc    int
	buf   []byte // the output when something was dropped
}

// filter returns p without the combining characters past the bound. It
// returns p itself when nothing is dropped and no character was split,
// which is nearly always; otherwise a buffer that is valid until the next
// call.
func (l *markLimiter) filter(p []byte) []byte {
	if l.nc > 0 {
		joined := append(append(make([]byte, 0, l.nc+len(p)), l.carry[:l.nc]...), p...)
		l.nc = 0
		p = joined
	}
	out := p[:0:0] // unused unless something is dropped
	copying := false
	for i := 0; i < len(p); {
		b := p[i]
		if b < utf8.RuneSelf {
			l.marks = 0
			if copying {
				out = append(out, b)
			}
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			// The rest comes with the next write.
			l.nc = copy(l.carry[:], p[i:])
			if !copying {
				out = append(l.buf[:0], p[:i]...)
				copying = true
			}
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		keep := true
		if joinsCluster(r) {
			l.marks++
			keep = l.marks <= maxCellMarks
		} else {
			l.marks = 0
		}
		switch {
		case !keep && !copying:
			out = append(l.buf[:0], p[:i]...)
			copying = true
		case keep && copying:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	if !copying {
		return p
	}
	l.buf = out
	return out
}

// joinsCluster reports whether r extends the grapheme cluster before it
// without starting a cell of its own: combining marks, format characters
// (ZWJ, emoji tags), emoji skin-tone modifiers and Hangul medial and final
// jamo. A run of any of them is one cluster, one cell.
func joinsCluster(r rune) bool {
	switch {
	case r >= 0x1F3FB && r <= 0x1F3FF, // emoji modifiers
		r >= 0x1160 && r <= 0x11FF, r >= 0xD7B0 && r <= 0xD7FF: // Hangul V and T jamo
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc, unicode.Cf)
}
