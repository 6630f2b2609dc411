package agentstate

import (
	"regexp"
	"strings"
)

// Gemini CLI's screen (0.6x, Ink on the main screen): the transcript, each
// prompt the person gave drawn as " > text" between a ▄ row and a ▀ row,
// a status row ("⠙ Thinking... (esc to cancel, 3s)" while a turn runs,
// "? for shortcuts" at its right), then the input box (" >   Type your
// message…" between ▄ and ▀ rows) and the footer (workspace, sandbox,
// model). Dialogs are boxes that replace the input box: the folder trust
// dialog ("Do you trust the files in this folder?"), a tool's permission
// ("Allow execution of [Shell]?", "Apply this change?", "Do you want to
// proceed?") with numbered options and "(esc)" on the refusal, the
// sign-in dialog ("How would you like to authenticate"), a usage limit
// dialog. A failed turn leaves "✕ [API Error: …]" in the transcript.
var (
	geminiTrust    = regexp.MustCompile(`Do you trust (the files in )?this folder\?`)
	geminiAuth     = regexp.MustCompile(`How would you like to authenticate|Get started|Waiting for auth|Login with Google`)
	geminiAPIKey   = regexp.MustCompile(`Enter Gemini API Key|Gemini API Key`)
	geminiAsk      = regexp.MustCompile(`(Allow execution of .*\?|Apply this change\?|Do you want to proceed\?|Allow .*\?)\s*$`)
	geminiWorking  = regexp.MustCompile(`\(esc to cancel, \d+[smh]`)
	geminiHookRow  = regexp.MustCompile(`^\s*\S\s+Executing Hooks?: `)
	geminiInput    = regexp.MustCompile(`^ >\s+`)
	geminiBarTop   = regexp.MustCompile(`^▄{10,}$`)
	geminiToolHead = regexp.MustCompile(`^([?✓x✕o⊷-])\s+(\S+)\s+(.*)$`)
	geminiError    = regexp.MustCompile(`^✕ |API Error|Quota exceeded|RESOURCE_EXHAUSTED|usage limit`)
	geminiLimit    = regexp.MustCompile(`(?i)quota|RESOURCE_EXHAUSTED|usage limit|rate limit|429`)
	geminiLimitBox = regexp.MustCompile(`(?i)usage limit reached|quota (exceeded|reached)|Switch to .* for the rest of this session`)
)

func classifyGemini(s Screen) (State, Detail) {
	lines := make([]string, len(s.Lines))
	for i, l := range s.Lines {
		lines[i] = unbox(l)
	}
	input := geminiInputBox(lines)
	// A trust dialog above the input box is one answered already: Gemini
	// restarts itself after the answer and draws its new screen below the
	// old dialog, which stays on the screen.
	if i := lastMatch(lines, geminiTrust); i >= 0 && (input < 0 || i > input) {
		items, _ := readMenu(lines, i+1)
		return NeedsAttention, Detail{Kind: KindTrust, Question: strings.TrimSpace(unbox(lines[i])), Choices: choices(items, trustRole)}
	}
	if i := lastMatch(lines, geminiAsk); i >= 0 && (input < 0 || i > input) {
		if items, _ := readMenu(lines, i+1); len(items) >= 2 {
			d := Detail{Kind: KindPermission, Question: strings.TrimSpace(unbox(lines[i])), Choices: choices(items, approvalRole)}
			geminiToolAndSubject(lines[:i], &d)
			return NeedsApproval, d
		}
	}
	if input < 0 {
		if lastMatch(lines, geminiAuth) >= 0 {
			return NeedsAttention, Detail{Kind: KindSignIn, Question: "Sign in"}
		}
		if i := lastMatch(lines, geminiLimitBox); i >= 0 {
			items, _ := readMenu(lines, i+1)
			return NeedsAttention, Detail{Kind: KindUsageLimit, Message: strings.TrimSpace(unbox(lines[i])), Choices: choices(items, func(string) Role { return RoleOther })}
		}
		if i := lastMatch(lines, geminiAPIKey); i >= 0 {
			return NeedsAttention, Detail{Kind: KindAPIKey, Question: strings.TrimSpace(unbox(lines[i]))}
		}
		return Unknown, Detail{}
	}
	if lastMatch(lines[:input], geminiWorking) >= 0 {
		return Working, Detail{}
	}
	// While a hook runs, its command replaces the status row ("⠧ Executing
	// Hook: agentctl hook …"), at a turn's start, in its middle or at its
	// end: the screen does not say which, the hook itself does.
	if i := lastMatch(lines[:input], geminiHookRow); i >= 0 && i >= input-8 {
		return Unknown, Detail{}
	}
	// The last turn: after the last prompt the person gave.
	from := 0
	for j := input - 2; j >= 1; j-- {
		if geminiInput.MatchString(lines[j]) && geminiBarTop.MatchString(strings.TrimSpace(lines[j-1])) {
			from = j + 1
			break
		}
	}
	if j := lastMatch(lines[from:input], geminiError); j >= 0 {
		k := from + j
		for k > from && !strings.HasPrefix(lines[k], "✕") && strings.HasPrefix(lines[k], " ") {
			k--
		}
		end := k + 1
		for end < input && strings.HasPrefix(lines[end], "  ") {
			end++
		}
		msg := strings.TrimSpace(strings.TrimPrefix(joinRows(lines[k:end]), "✕"))
		kind := KindError
		if geminiLimit.MatchString(msg) {
			kind = KindUsageLimit
		}
		return NeedsAttention, Detail{Kind: kind, Message: msg}
	}
	return Waiting, Detail{}
}

// geminiInputBox returns the row of the input box's prompt (" >   Type
// your message", or the text being typed), the last " > " row right under
// a ▄ row with a ▀ row under it and nothing but the footer below; -1 when
// a dialog replaced it.
func geminiInputBox(lines []string) int {
	for i := len(lines) - 2; i >= 1; i-- {
		if geminiInput.MatchString(lines[i]) && geminiBarTop.MatchString(strings.TrimSpace(lines[i-1])) {
			// Rows below: the box's bottom and the footer, or (while
			// typing) more rows of the box; never another dialog.
			below := strings.Join(lines[i+1:], "\n")
			if geminiAsk.MatchString(below) || geminiTrust.MatchString(below) {
				return -1
			}
			if strings.Contains(below, "workspace") || strings.Contains(below, "no sandbox") || strings.Contains(below, "/model") ||
				strings.Contains(lines[i], "Type your message") {
				return i
			}
			return -1
		}
	}
	return -1
}

// geminiToolAndSubject reads the tool's header row in the dialog's box
// ("? Shell  touch approved.txt") above the question.
func geminiToolAndSubject(head []string, d *Detail) {
	for j := len(head) - 1; j >= 0 && j >= len(head)-30; j-- {
		l := strings.TrimSpace(unbox(head[j]))
		if m := geminiToolHead.FindStringSubmatch(l); m != nil && m[1] == "?" {
			d.Tool = m[2]
			d.Subject = strings.TrimSpace(m[3])
			// The command in full is in the inner box below the header.
			var inner []string
			for _, r := range head[j+1:] {
				if t := strings.TrimSpace(unbox(r)); t != "" && !strings.HasPrefix(t, "╭") && !strings.HasPrefix(t, "╰") {
					inner = append(inner, t)
				}
			}
			if s := strings.Join(inner, " "); s != "" {
				d.Subject = s
			}
			return
		}
	}
}
