package agentstate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Screen is the rendered terminal a classifier reads: the visible rows as
// text (wide characters once, no attributes) and the cursor. The daemon
// fills it from termmodel.Screen; tests from testdata (ParseScreen).
type Screen struct {
	Lines         []string
	CursorX       int
	CursorY       int
	CursorVisible bool
	AltScreen     bool
}

// Text is the screen's rows joined by newlines.
func (s Screen) Text() string { return strings.Join(s.Lines, "\n") }

// Classify reads what agent a's screen shows. It never blocks and keeps
// nothing: the Tracker decides what a reading means over time. For None it
// returns Unknown (busy and ready come from the kernel).
func Classify(a Agent, s Screen) (State, Detail) {
	var st State
	var d Detail
	switch a {
	case Claude:
		st, d = classifyClaude(s)
	case Codex:
		st, d = classifyCodex(s)
	case Gemini:
		st, d = classifyGemini(s)
	default:
		return Unknown, Detail{}
	}
	if d.Kind != "" {
		d.PromptID = d.ID()
	}
	return st, d
}

// screenHeader is the first line of a testdata screen file.
var screenHeader = regexp.MustCompile(`^# agentstate screen cols=(\d+) rows=(\d+) cursor=(\d+),(\d+) visible=(true|false) alt=(true|false)$`)

// ParseScreen reads a screen saved as test/agentstate_capture_test.go
// writes it: a header line with the size and cursor, then the rows.
func ParseScreen(text string) (Screen, error) {
	head, body, _ := strings.Cut(text, "\n")
	m := screenHeader.FindStringSubmatch(head)
	if m == nil {
		return Screen{}, fmt.Errorf("not an agentstate screen: the first line must be %q, got %q", "# agentstate screen cols=C rows=R cursor=X,Y visible=B alt=B", head)
	}
	rows, _ := strconv.Atoi(m[2])
	x, _ := strconv.Atoi(m[3])
	y, _ := strconv.Atoi(m[4])
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for len(lines) < rows {
		lines = append(lines, "")
	}
	return Screen{Lines: lines[:rows], CursorX: x, CursorY: y, CursorVisible: m[5] == "true", AltScreen: m[6] == "true"}, nil
}

// find returns the index of the last row matching re at or after from, or -1.
func lastMatch(lines []string, re *regexp.Regexp) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return i
		}
	}
	return -1
}

// menuItem is a numbered option row: an optional highlight mark, "N. label".
var menuItem = regexp.MustCompile(`^\s*([❯›>●]?)\s*(\d+)\.\s+(.+?)\s*$`)

// readMenu reads the numbered options from row start on (inside a box
// too): it skips rows until option 1, joins continuation rows (indented
// deeper, not numbered) to the option above, and stops at a blank row, a
// number out of sequence or any other row.
func readMenu(lines []string, start int) (items []menuRow, end int) {
	i := max(start, 0)
	for ; i < len(lines); i++ {
		l := unbox(lines[i])
		if m := menuItem.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			if len(items) == 0 && n != 1 {
				continue
			}
			if len(items) > 0 && n != items[len(items)-1].n+1 {
				break
			}
			items = append(items, menuRow{n: n, label: m[3], selected: m[1] != ""})
			continue
		}
		if len(items) == 0 {
			continue
		}
		if t := strings.TrimSpace(l); t != "" && indent(l) >= 4 {
			items[len(items)-1].label += " " + t
			continue
		}
		break
	}
	return items, i
}

// boxLeft and boxRight are a box's borders around a row, nested or not.
var (
	boxLeft  = regexp.MustCompile(`^\s*(│ ?)+`)
	boxRight = regexp.MustCompile(`(\s*│)+\s*$`)
)

// unbox strips the borders of the boxes a row is drawn in (Gemini CLI
// draws its dialogs in boxes), keeping the indentation inside.
func unbox(l string) string {
	if !strings.Contains(l, "│") {
		return strings.TrimRight(l, " ")
	}
	l = boxLeft.ReplaceAllString(l, "")
	return strings.TrimRight(boxRight.ReplaceAllString(l, ""), " ")
}

type menuRow struct {
	n        int
	label    string
	selected bool
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// choices turns a menu's rows into Choices: the key that picks each is
// its shortcut when the label shows one in parentheses ("(y)", "(esc)"),
// else the arrows from the highlighted row, then enter.
func choices(items []menuRow, role func(label string) Role) []Choice {
	sel := 0
	for i, it := range items {
		if it.selected {
			sel = i
		}
	}
	var out []Choice
	for i, it := range items {
		label, short := splitShortcut(it.label)
		c := Choice{Label: label, Role: role(label), Selected: it.selected}
		switch {
		case short == "esc":
			c.Keys = []string{"esc"}
		case short != "":
			c.Text = short
		default:
			for j := sel; j < i; j++ {
				c.Keys = append(c.Keys, "down")
			}
			for j := sel; j > i; j-- {
				c.Keys = append(c.Keys, "up")
			}
			c.Keys = append(c.Keys, "enter")
		}
		out = append(out, c)
	}
	return out
}

// shortcutRe is a key a menu option names at its end: "(y)", "(esc)", "(p)".
var shortcutRe = regexp.MustCompile(`\s*\((esc|[a-z])\)$`)

// splitShortcut separates a label from the shortcut key it ends with.
func splitShortcut(label string) (string, string) {
	m := shortcutRe.FindStringSubmatchIndex(label)
	if m == nil {
		return label, ""
	}
	return strings.TrimSpace(label[:m[0]]), label[m[2]:m[3]]
}

// approvalRole reads a permission option's role from its words, which all
// three CLIs share: "Yes"/"Allow" once or for good, "No"/"Deny".
func approvalRole(label string) Role {
	l := strings.ToLower(label)
	switch {
	case strings.HasPrefix(l, "no") || strings.HasPrefix(l, "deny") || strings.HasPrefix(l, "reject") || strings.HasPrefix(l, "cancel"):
		return RoleDeny
	case strings.Contains(l, "auto mode") || strings.Contains(l, "modify with") || strings.Contains(l, "suggest changes"):
		return RoleOther
	case (strings.HasPrefix(l, "yes") || strings.HasPrefix(l, "allow")) &&
		(strings.Contains(l, "always") || strings.Contains(l, "don't ask") || strings.Contains(l, "session") || strings.Contains(l, "for all") || strings.Contains(l, "this project")):
		return RoleApproveAlways
	case strings.HasPrefix(l, "yes") || strings.HasPrefix(l, "allow") || strings.HasPrefix(l, "proceed") || strings.HasPrefix(l, "approve"):
		return RoleApprove
	}
	return RoleOther
}

// joinRows joins rows[i:j] trimmed, one space between.
func joinRows(rows []string) string {
	var parts []string
	for _, r := range rows {
		if t := strings.TrimSpace(unbox(r)); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}
