package termmodel

import (
	"strings"
	"unicode/utf8"
)

// When the kernel says a program is waiting for input (a ready point), what
// stands between the end of its answer and the cursor is its prompt. A
// PromptModel learns that prompt by comparing ready points, so a prompt of
// two rows, a right prompt, a prompt with a clock, a directory or a counter,
// and text printed before the prompt on its row (output without a final
// newline) all split into answer and prompt as a person would read them.

// MaxPromptRows bounds how many rows a prompt may take.
const MaxPromptRows = 3

// PromptModel is one program's prompt, learned from its ready points. It is
// not safe for concurrent use.
type PromptModel struct {
	first   []string // the rows of the first ready point, the last cut at the cursor
	height  int      // rows the prompt takes, 1 until learned
	learned bool     // height was learned from a second ready point
	last    *Prompt  // the shape of the prompt's last row
}

// NewPromptModel starts a model from a program's first ready point: the
// screen's last rows down to the cursor's row, that one cut at the cursor
// (its spaces kept), oldest first. Its last row is taken for the primary
// prompt. Only a first ready point at the program's start (nothing typed
// into it yet) can teach a prompt of more than one row: there, what stands
// above the prompt is a banner or the prompt itself; later, it may be an
// answer that the next answer repeats.
func NewPromptModel(first []string, atStart bool) *PromptModel {
	m := &PromptModel{first: append([]string(nil), first...), height: 1, learned: !atStart}
	if len(first) > 0 {
		m.last = LearnPrompt(first[len(first)-1])
	}
	return m
}

// Last is the shape of the prompt's last row (the one the cursor is on).
func (m *PromptModel) Last() *Prompt { return m.last }

// Split divides the rows of a ready point after a question, from the row
// after the question's echo down to the cursor's row (cut at the cursor),
// into the answer and the prompt. primary is false when the row at the
// cursor is not the program's primary prompt (a continuation prompt, or a
// question the program asks): then the answer is the rows above it and
// prompt is that row.
func (m *PromptModel) Split(rows []string) (answer []string, prompt string, primary bool) {
	if len(rows) == 0 {
		return nil, "", false
	}
	cur := rows[len(rows)-1]
	before, ok := m.splitLast(cur)
	if !ok {
		return rows[:len(rows)-1], strings.TrimSpace(cur), false
	}
	above := rows[:len(rows)-1]
	upper := min(m.height-1, len(above))
	answer = above[:len(above)-upper]
	if before != "" {
		answer = append(answer[:len(answer):len(answer)], before)
	}
	p := append(append([]string(nil), above[len(above)-upper:]...), cur[len(before):])
	return answer, strings.TrimRight(strings.Join(p, "\n"), " "), true
}

// splitLast finds the primary prompt on the cursor's row: the text before
// it (output that did not end its line) and whether it is there.
func (m *PromptModel) splitLast(cur string) (before string, ok bool) {
	if m.last == nil {
		return "", false
	}
	if m.last.re.MatchString(cur) {
		return "", true
	}
	// The prompt after text on its row: the same shape, ending the row,
	// after something that is not more of the prompt's own first
	// character (lua's continuation ">> " is not "> " after ">").
	if loc := m.last.tail.FindStringIndex(cur); loc != nil && loc[0] > 0 && !repeatsFirst(cur[:loc[0]], m.last.text) {
		return cur[:loc[0]], true
	}
	return "", m.last.Matches(cur)
}

// repeatsFirst reports whether s is only the first character of prompt,
// repeated (so s+prompt is a longer prompt of the same kind).
func repeatsFirst(s, prompt string) bool {
	r, _ := utf8.DecodeRuneInString(prompt)
	return strings.Trim(s, string(r)) == ""
}

// Learn takes a ready point after a question whose rows (as for Split)
// ended at the primary prompt: the prompt's last row is what it is now
// (digits free), and, the first time, its height is the rows that match
// between this ready point and the first one, counted up from the cursor
// and never into the echo.
func (m *PromptModel) Learn(rows []string) {
	if len(rows) == 0 {
		return
	}
	cur := rows[len(rows)-1]
	before, ok := m.splitLast(cur)
	if !ok {
		return
	}
	m.last = LearnPrompt(cur[len(before):])
	if m.learned {
		return // the height is learned once
	}
	m.learned = true
	h := 1
	for j := 1; j < MaxPromptRows && before == ""; j++ {
		ai, bi := len(rows)-1-j, len(m.first)-1-j
		if ai < 0 || bi < 0 {
			break
		}
		a, b := rows[ai], m.first[bi]
		if strings.TrimSpace(a) == "" || !LearnPrompt(b).re.MatchString(a) {
			break
		}
		h = j + 1
	}
	m.height = h
}
