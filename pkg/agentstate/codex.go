package agentstate

import (
	"regexp"
	"strings"
)

// Codex's screen (0.16x, a Ratatui program on the alternate screen): the
// transcript, each prompt the person gave as "› text", then the composer
// ("› Ask Codex to do anything" or the text being typed) and a footer
// ("? for shortcuts"). While a turn runs a status row reads "• Working
// (3s • esc to interrupt)" ("Reconnecting... 3/5 (1s • esc to interrupt)"
// while it retries a failed request, with the error below it) — but not
// while the model's text streams: Codex hides the row then, and a turn
// that streams text shows neither the row nor an end. Only a marker tells
// an ended turn: "Worked for 7s • 03:22", "■ Conversation interrupted",
// "■ <error>", "✗ You canceled…"; without one the last turn reads
// Unknown, and the hooks decide (see the package doc). Dialogs replace the
// composer: the folder trust dialog ("Trust this folder?"), the hooks
// review ("Hooks need review"), a command's approval ("Would you like to
// run the following command?" with "› 1. Yes, proceed (y)", "2. Yes, and
// don't ask again … (p)", "3. No, and tell Codex what to do differently
// (esc)"), an edit's approval ("Would you like to make the following
// edits?"), the sign-in screen.
var (
	codexTrust       = regexp.MustCompile(`Trust this folder\?|Do you trust the contents of this directory\?`)
	codexHooksReview = regexp.MustCompile(`Hooks need review|hooks? needs? review before (they|it) can run`)
	codexSignIn      = regexp.MustCompile(`Sign in with ChatGPT|Provide your own API key|Welcome to Codex`)
	codexAsk         = regexp.MustCompile(`^\s*(Would you like to (run the following command|make the following edits|grant|allow)[^?]*\?|Allow .*\?|Do you want to .*\?)\s*$`)
	codexWorking     = regexp.MustCompile(`\(\d+[smh][^)]*• esc to interrupt\)`)
	codexRetry       = regexp.MustCompile(`Reconnecting\.\.\. \d+/\d+`)
	codexPrompt      = regexp.MustCompile(`^› `)
	codexError       = regexp.MustCompile(`^■ |^\s*└ Unexpected status|stream error|usage limit`)
	codexNoError     = regexp.MustCompile(`Conversation interrupted`)
	codexTurnEnd     = regexp.MustCompile(`^\s*Worked for \d|^■ |^✗ You (canceled|denied)`)
	codexNoPass      = regexp.MustCompile(`(?i)\b(401|403|429)\b|unauthori|forbidden|usage limit|rate limit|quota|api key`)
	codexLimit       = regexp.MustCompile(`(?i)\b429\b|usage limit|rate limit|quota`)
	codexComposer    = regexp.MustCompile(`\? for shortcuts|esc to interrupt|ctrl \+ j|tab to queue|⏎ send|send ⏎`)
)

func classifyCodex(s Screen) (State, Detail) {
	lines := s.Lines
	if i := lastMatch(lines, codexHooksReview); i >= 0 {
		items, _ := readMenu(lines, i+1)
		return NeedsAttention, Detail{Kind: KindHooks, Question: strings.TrimSpace(lines[i]), Choices: choices(items, hooksRole)}
	}
	if i := lastMatch(lines, codexTrust); i >= 0 {
		d := Detail{Kind: KindTrust, Question: "Trust this folder?"}
		for j := 0; j < i; j++ {
			if strings.TrimSpace(lines[j]) == "Folder access" {
				d.Subject = firstText(lines[j+1 : i])
			}
		}
		items, _ := readMenu(lines, i+1)
		d.Choices = choices(items, trustRole)
		return NeedsAttention, d
	}
	if i := lastMatch(lines, codexAsk); i >= 0 {
		if items, end := readMenu(lines, i+1); len(items) >= 2 {
			d := Detail{Kind: KindPermission, Tool: "command", Question: strings.TrimSpace(lines[i]), Choices: choices(items, approvalRole)}
			if strings.Contains(d.Question, "edits") {
				d.Tool = "edit"
			}
			codexSubject(lines[i+1:end], &d)
			return NeedsApproval, d
		}
	}
	input := codexInput(lines)
	if input < 0 {
		if lastMatch(lines, codexSignIn) >= 0 {
			return NeedsAttention, Detail{Kind: KindSignIn, Question: "Sign in"}
		}
		return Unknown, Detail{}
	}
	// The last turn: after the last prompt the person gave.
	from := 0
	for j := input - 1; j >= 0; j-- {
		if codexPrompt.MatchString(lines[j]) {
			from = j + 1
			break
		}
	}
	turn := lines[from:input]
	if lastMatch(turn, codexWorking) >= 0 {
		if lastMatch(turn, codexRetry) >= 0 {
			if j := lastMatch(turn, codexError); j >= 0 {
				if msg := codexMessage(turn[j:]); codexNoPass.MatchString(msg) {
					return NeedsAttention, codexErrorDetail(msg)
				}
			}
		}
		return Working, Detail{}
	}
	if j := lastMatch(turn, codexError); j >= 0 && !codexNoError.MatchString(turn[j]) {
		return NeedsAttention, codexErrorDetail(codexMessage(turn[j:]))
	}
	if from > 0 && lastMatch(turn, codexTurnEnd) < 0 {
		// A turn with no end marker: streaming text, the status row
		// hidden. The Stop hook or notify's agent-turn-complete tells.
		return Unknown, Detail{}
	}
	return Waiting, Detail{}
}

// codexInput returns the composer's row: the last "› " row with the
// footer ("? for shortcuts", or the key hints while typing) below it;
// -1 when a dialog replaced it.
func codexInput(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if !codexPrompt.MatchString(lines[i]) {
			continue
		}
		if menuItem.MatchString(lines[i]) {
			return -1 // "› 1. Yes, proceed": a dialog's highlighted option
		}
		if codexComposer.MatchString(strings.Join(lines[i+1:], "\n")) {
			return i
		}
		return -1
	}
	return -1
}

// codexSubject reads an approval's body: "$ command" rows (wrapped ones
// joined), "Reason: …" as the message.
func codexSubject(body []string, d *Detail) {
	var cmd []string
	for _, l := range body {
		t := strings.TrimSpace(l)
		switch {
		case menuItem.MatchString(l):
			d.Subject = strings.Join(cmd, " ")
			return
		case strings.HasPrefix(t, "Reason:"):
			d.Message = strings.TrimSpace(strings.TrimPrefix(t, "Reason:"))
		case strings.HasPrefix(t, "$ "):
			cmd = []string{strings.TrimPrefix(t, "$ ")}
		case len(cmd) > 0 && t != "":
			cmd = append(cmd, t)
		case len(cmd) > 0 && t == "":
			d.Subject = strings.Join(cmd, " ")
			return
		}
	}
	d.Subject = strings.Join(cmd, " ")
}

// codexMessage is an error's text from its first row to the next blank.
func codexMessage(rows []string) string {
	end := len(rows)
	for i, r := range rows {
		if i > 0 && strings.TrimSpace(r) == "" {
			end = i
			break
		}
	}
	msg := joinRows(rows[:end])
	return strings.TrimSpace(strings.TrimLeft(msg, "■└ "))
}

func codexErrorDetail(msg string) Detail {
	kind := KindError
	if codexLimit.MatchString(msg) {
		kind = KindUsageLimit
	}
	return Detail{Kind: kind, Message: msg}
}

// hooksRole: trusting all hooks is the approval, going on without them the
// denial; reviewing them one by one is other.
func hooksRole(label string) Role {
	l := strings.ToLower(label)
	switch {
	case strings.Contains(l, "without"):
		return RoleDeny
	case strings.HasPrefix(l, "trust"):
		return RoleApprove
	}
	return RoleOther
}
