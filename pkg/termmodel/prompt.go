package termmodel

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Prompt is a learned prompt.
type Prompt struct {
	text string         // as seen, e.g. "In [3]: "
	re   *regexp.Regexp // digit runs free: ^In \[\d+\]: $
	tail *regexp.Regexp // the same, anchored only at the end of the row
	end  string         // its last non-space character and the spaces after it
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// LearnPrompt returns the shape of a prompt seen as text (the cursor's row
// up to the cursor): the same text with its digit runs free.
func LearnPrompt(text string) *Prompt {
	parts := digitsRE.Split(text, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	trimmed := strings.TrimRight(text, " ")
	_, size := utf8.DecodeLastRuneInString(trimmed)
	shape := strings.Join(parts, `[0-9]+`) + "$"
	return &Prompt{text: text, re: regexp.MustCompile("^" + shape), tail: regexp.MustCompile(shape),
		end: text[len(trimmed)-size:]}
}

// Matches reports whether before (the cursor's row up to the cursor) shows
// this prompt: the same shape, or, for a prompt whose words change (a shell
// showing its directory), words and the same ending. A continuation prompt
// ("   ...: ", "...> ") has no words, so it never passes for the prompt.
func (p *Prompt) Matches(before string) bool {
	if p == nil {
		return false
	}
	if p.re.MatchString(before) {
		return true
	}
	return len(p.end) > 1 && strings.HasSuffix(before, p.end) && PromptLike(before) && hasWord(before) && hasWord(p.text)
}

func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// PromptLike reports whether before looks like a prompt: something other
// than spaces, ending in punctuation or a symbol, possibly followed by
// spaces (">>> ", "sqlite> ", "(gdb) ", "bash-5.2$ ", "In [3]: ", "❯ ").
func PromptLike(before string) bool {
	t := strings.TrimRight(before, " ")
	if t == "" {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(t)
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// EchoRows is the fewest rows the echo of q takes, typed at column x of a
// screen cols wide: continuation prompts can only add to it.
func EchoRows(q string, x, cols int) int {
	n := 0
	for i, l := range strings.Split(q, "\n") {
		if i > 0 {
			x = 0
		}
		n += max(1, (x+ansi.StringWidth(l)+cols-1)/cols)
	}
	return n
}

// EchoEndX is the column the cursor stands at after the echo of q typed at
// column x, and whether that is known: not for a line that fills the row
// to its end, nor for the lines after a line break, whose continuation
// prompt is unknown, unless there is none (exact only where no
// continuation prompt can shift it: one line, or a paste).
func EchoEndX(q string, x, cols int) (int, bool) {
	lines := strings.Split(q, "\n")
	if len(lines) > 1 {
		x = 0
	}
	end := x + ansi.StringWidth(lines[len(lines)-1])
	if end > 0 && end%cols == 0 {
		return 0, false
	}
	return end % cols, true
}

// ChangedBlock is the rows from the first to the last that differ between
// two screens of a full-screen program, trailing spaces removed.
func ChangedBlock(before, after []string) []string {
	first, last := -1, -1
	for i, l := range after {
		if i >= len(before) || before[i] != l {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	return after[first : last+1]
}

// Text is the prompt as it was seen; "" for no prompt.
func (p *Prompt) Text() string {
	if p == nil {
		return ""
	}
	return p.text
}
