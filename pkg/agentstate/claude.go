package agentstate

import (
	"regexp"
	"strings"
)

// Claude Code's screen (2.1.x, an Ink program on the alternate screen):
// the transcript, then the prompt box between two rules ("❯ " in it) and
// a footer line below. Its footer says what it is doing: "esc to
// interrupt" while a turn runs, "? for shortcuts" (or nothing) while it
// waits. A dialog replaces the prompt box: the trust dialog ("Yes, I trust
// this folder"), the API key dialog ("Do you want to use this API key?"),
// a tool's permission prompt ("Do you want to proceed?", "Do you want to
// make this edit to …?", with numbered options and "Esc to cancel").
var (
	claudeTrust      = regexp.MustCompile(`Yes, I trust this folder`)
	claudeAPIKey     = regexp.MustCompile(`(?i)Do you want to use this API key\?|Detected a custom API key`)
	claudeSignIn     = regexp.MustCompile(`(?i)Select login method|Log in with|Paste code here if prompted|Choose the text style`)
	claudeQuestion   = regexp.MustCompile(`^\s*Do you want to .*\?\s*$|^\s*(Would you like to|Allow .*\?)`)
	claudeWorking    = regexp.MustCompile(`esc to interrupt`)
	claudeRule       = regexp.MustCompile(`^─{20,}$`)
	claudeDashed     = regexp.MustCompile(`^\s*╌{20,}\s*$`)
	claudeUserLine   = regexp.MustCompile(`^❯ \S`)
	claudeError      = regexp.MustCompile(`API Error|Invalid API key|Please run /login|usage limit|rate limit|Credit balance is too low|OAuth token has expired|overloaded`)
	claudeEscCancels = regexp.MustCompile(`Esc to cancel`)
	claudeMenuFooter = regexp.MustCompile(`Enter to select|Esc to cancel`)
	claudeRetry      = regexp.MustCompile(`retrying in \d+\w* · attempt \d+/\d+`)
	claudeNoPass     = regexp.MustCompile(`(?i)\b(401|403|429)\b|auth|api key|usage limit|rate limit|credit`)
	claudeLimit      = regexp.MustCompile(`(?i)usage limit|rate limit|limit reached|Credit balance is too low|\(429\)|\b429\b`)
)

func classifyClaude(s Screen) (State, Detail) {
	lines := s.Lines
	if i := lastMatch(lines, claudeTrust); i >= 0 {
		d := Detail{Kind: KindTrust, Question: "Trust this folder?"}
		for j := 0; j < i; j++ {
			if strings.Contains(lines[j], "Accessing workspace:") {
				d.Subject = firstText(lines[j+1 : i])
			}
		}
		items, _ := readPlainMenu(lines, i-3, i+2)
		d.Choices = choices(items, trustRole)
		return NeedsAttention, d
	}
	if i := lastMatch(lines, claudeAPIKey); i >= 0 {
		d := Detail{Kind: KindAPIKey, Question: "Do you want to use this API key?"}
		q := i
		for j := range lines {
			if strings.Contains(lines[j], "Do you want to use this API key?") {
				q = j
			}
			if t := strings.TrimSpace(lines[j]); strings.Contains(t, "_API_KEY:") || strings.HasPrefix(t, "sk-") {
				d.Subject = t
			}
		}
		end := q + 1
		for end < len(lines) && !strings.Contains(lines[end], "Enter to confirm") {
			end++
		}
		items, _ := readPlainMenu(lines, q+1, end)
		d.Choices = choices(items, approvalRole)
		return NeedsAttention, d
	}
	if lastMatch(lines, claudeSignIn) >= 0 {
		return NeedsAttention, Detail{Kind: KindSignIn, Question: "Sign in"}
	}
	if i := lastMatch(lines, claudeQuestion); i >= 0 {
		if items, _ := readMenu(lines, i+1); len(items) >= 2 {
			d := Detail{Kind: KindPermission, Question: strings.TrimSpace(lines[i]), Choices: choices(items, approvalRole)}
			if lastMatch(lines[i:], claudeEscCancels) >= 0 {
				// Esc refuses whatever is highlighted: it does not
				// depend on where the highlight is when it is sent.
				for k := range d.Choices {
					if d.Choices[k].Role == RoleDeny {
						d.Choices[k].Keys = []string{"esc"}
					}
				}
			}
			claudeToolAndSubject(lines[:i], &d)
			return NeedsApproval, d
		}
	}
	box := claudePromptBox(lines)
	if box < 0 {
		// A menu with no prompt box and no permission question: the
		// model's question (AskUserQuestion) or another picker.
		if i := lastMatch(lines, claudeMenuFooter); i >= 0 {
			for j := i - 1; j >= 0; j-- {
				if items, _ := readMenu(lines, j); len(items) >= 2 {
					// The question: the paragraph above the options.
					end := j
					for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
						end--
					}
					start := end
					for start > 0 && strings.TrimSpace(lines[start-1]) != "" && !claudeRule.MatchString(strings.TrimSpace(lines[start-1])) {
						start--
					}
					d := Detail{Kind: KindQuestion, Tool: "AskUserQuestion", Question: joinRows(lines[start:end]),
						Choices: choices(items, func(string) Role { return RoleOther })}
					for k := j - 1; k >= 0 && k >= j-12; k-- {
						if h := strings.TrimSpace(lines[k]); strings.HasPrefix(h, "☐") || strings.HasPrefix(h, "☒") || strings.HasPrefix(h, "✔") {
							d.Subject = strings.TrimSpace(strings.TrimLeft(h, "☐☒✔ "))
							break
						}
					}
					return NeedsApproval, d
				}
			}
		}
		return Unknown, Detail{}
	}
	// The last turn's output: from the last prompt the person gave to
	// the prompt box.
	from := 0
	for j := box - 1; j >= 0; j-- {
		if claudeUserLine.MatchString(lines[j]) {
			from = j
			break
		}
	}
	footer := strings.Join(lines[box:], "\n")
	if claudeWorking.MatchString(footer) {
		// A request the API refused, retried: a key or a limit will not
		// pass by itself, an outage may.
		if j := lastMatch(lines[from:box], claudeRetry); j >= 0 {
			msg := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[from+j]), "✻✽✶✳✢·*"))
			if claudeNoPass.MatchString(msg) {
				kind := KindError
				if claudeLimit.MatchString(msg) || strings.Contains(msg, "429") {
					kind = KindUsageLimit
				}
				return NeedsAttention, Detail{Kind: kind, Message: msg}
			}
		}
		return Working, Detail{}
	}
	if j := lastMatch(lines[from:box], claudeError); j >= 0 {
		msg := joinRows(lines[from+j : box])
		msg = strings.TrimSpace(strings.TrimPrefix(msg, "⎿"))
		kind := KindError
		if claudeLimit.MatchString(msg) {
			kind = KindUsageLimit
		}
		return NeedsAttention, Detail{Kind: kind, Message: msg}
	}
	return Waiting, Detail{}
}

// claudePromptBox returns the row of the prompt box's top rule: a rule,
// then "❯" rows, then a rule; -1 when none is drawn (a dialog replaced it).
func claudePromptBox(lines []string) int {
	for i := len(lines) - 1; i >= 2; i-- {
		if !claudeRule.MatchString(strings.TrimSpace(lines[i])) {
			continue
		}
		for j := i - 1; j >= 0 && j >= i-12; j-- {
			if claudeRule.MatchString(strings.TrimSpace(lines[j])) {
				if strings.HasPrefix(lines[j+1], "❯") || strings.HasPrefix(lines[j+1], ">") {
					return j
				}
				break
			}
		}
	}
	return -1
}

// claudeToolAndSubject reads a permission prompt's head: the tool's title
// on the row after the rule ("Bash command", "Edit file", "Fetch"), and
// the subject between the dashed rules (the command, or the diff) or
// else on the rows after the title.
func claudeToolAndSubject(head []string, d *Detail) {
	rule := -1
	for j := len(head) - 1; j >= 0; j-- {
		if claudeRule.MatchString(strings.TrimSpace(head[j])) {
			rule = j
			break
		}
	}
	if rule < 0 || rule+1 >= len(head) {
		return
	}
	d.Tool = strings.TrimSpace(head[rule+1])
	var dashes []int
	for j := rule + 1; j < len(head); j++ {
		if claudeDashed.MatchString(head[j]) {
			dashes = append(dashes, j)
		}
	}
	if len(dashes) >= 2 {
		d.Subject = joinRows(head[dashes[0]+1 : dashes[1]])
		return
	}
	var body []string
	for _, l := range head[rule+2:] {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "Tip:") {
			body = append(body, l)
		}
	}
	d.Subject = joinRows(body)
}

// readPlainMenu reads an unnumbered menu (Claude Code's trust dialog:
// "❯ No, exit" / "  Yes, I trust this folder") in rows [from, to).
func readPlainMenu(lines []string, from, to int) ([]menuRow, int) {
	var items []menuRow
	for i := max(from, 0); i < min(to, len(lines)); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.Contains(t, "Enter to confirm") || strings.Contains(t, "Security guide") {
			continue
		}
		sel := strings.HasPrefix(t, "❯")
		t = strings.TrimSpace(strings.TrimPrefix(t, "❯"))
		items = append(items, menuRow{n: len(items) + 1, label: t, selected: sel})
	}
	return items, to
}

// trustRole: trusting is the approval, exiting the denial.
func trustRole(label string) Role {
	l := strings.ToLower(label)
	switch {
	case strings.Contains(l, "don't trust") || strings.HasPrefix(l, "no") || strings.Contains(l, "exit") || strings.Contains(l, "quit") || strings.HasPrefix(l, "back"):
		return RoleDeny
	case strings.Contains(l, "trust") || strings.HasPrefix(l, "yes"):
		return RoleApprove
	}
	return RoleOther
}

// firstText is the first non-blank row, trimmed.
func firstText(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "│")); t != "" {
			return t
		}
	}
	return ""
}
