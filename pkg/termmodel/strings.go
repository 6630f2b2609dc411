package termmodel

// charmbracelet/x/ansi's parser (under vt) ends a control string (OSC,
// DCS, APC, PM, SOS) at the byte 0x9C, the 8-bit string terminator, even
// when that byte is inside a UTF-8 character: Claude Code's window title
// starts with a spinner glyph (U+2722..U+273D, bytes E2 9C xx), so the title
// was cut short and its rest (" Claude Code") printed on the screen, where
// later frames, which only rewrite changed cells, left it as "4. Noe Code"
// (issue 26, item 7; upstream charmbracelet/x#848). Nothing a string
// carries is drawn, so stringFilter replaces its non-ASCII bytes with '?'
// before the parser sees them: a title or a link target reads differently,
// the screen is right.

// stringFilter rewrites the non-ASCII bytes inside control strings of the
// output fed to the emulator. It keeps its state between writes (a string
// goes on in the next). The zero value is ready.
type stringFilter struct {
	state stringState
	buf   []byte // the output when something was rewritten
}

type stringState uint8

const (
	sGround    stringState = iota
	sEsc                   // after ESC
	sString                // inside a control string
	sStringEsc             // ESC inside a control string: ST (ESC \) ends it
)

// filter returns p with the non-ASCII bytes of control strings replaced.
// It returns p itself when nothing is replaced, which is nearly always;
// otherwise a buffer valid until the next call.
func (f *stringFilter) filter(p []byte) []byte {
	out := p
	copied := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch f.state {
		case sGround:
			if c == 0x1b {
				f.state = sEsc
			}
		case sEsc:
			switch c {
			case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS
				f.state = sString
			case 0x1b:
			default:
				f.state = sGround
			}
		case sString:
			switch {
			case c == 0x07: // BEL ends an OSC
				f.state = sGround
			case c == 0x1b:
				f.state = sStringEsc
			case c == 0x18 || c == 0x1a: // CAN and SUB abort it
				f.state = sGround
			case c >= 0x80:
				if !copied {
					f.buf = append(f.buf[:0], p...)
					out, copied = f.buf, true
				}
				out[i] = '?'
			}
		case sStringEsc:
			if c == '\\' {
				f.state = sGround
			} else {
				// Any other escape aborts the string and starts anew.
				f.state = sEsc
				i--
			}
		}
	}
	return out
}
