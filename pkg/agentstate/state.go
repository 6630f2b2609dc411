package agentstate

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// State is what a session is doing, as `agentctl list` shows it.
type State string

// The states. An agent CLI is Working, Waiting, NeedsApproval or
// NeedsAttention; any other program is Busy or Ready, which the kernel
// tells (the same signal as agentctl ask), not this package. Unknown is a
// reading that says nothing: a blank or half-drawn screen, a hook that
// carries only facts; the Tracker keeps its state on it.
const (
	Unknown        State = "unknown"
	Working        State = "working"         // generating, or running a tool
	Waiting        State = "waiting"         // the turn is over; the CLI waits for the next prompt
	NeedsApproval  State = "needs_approval"  // a tool permission prompt or a question menu
	NeedsAttention State = "needs_attention" // a dialog the agent cannot pass alone
	Busy           State = "busy"            // a program that is no agent, running
	Ready          State = "ready"           // a program that is no agent, reading its terminal
)

// Asks a person: the states whose entry is worth a notification.
func (s State) Asks() bool { return s == NeedsApproval || s == NeedsAttention }

// Kind says what a NeedsApproval or NeedsAttention screen asks.
type Kind string

// The kinds of question. Permission and Question are NeedsApproval; the
// rest are NeedsAttention.
const (
	KindPermission Kind = "permission"  // may the agent run this tool (command, edit, fetch)?
	KindQuestion   Kind = "question"    // a menu the model asked (Claude Code's AskUserQuestion)
	KindTrust      Kind = "trust"       // trust this folder?
	KindAPIKey     Kind = "api_key"     // use this API key?
	KindSignIn     Kind = "sign_in"     // log in / choose how to authenticate
	KindHooks      Kind = "hooks"       // review the hooks found (Codex)
	KindError      Kind = "error"       // the turn failed: an API error banner
	KindUsageLimit Kind = "usage_limit" // a rate or usage limit was hit
)

// Detail is what a NeedsApproval or NeedsAttention state is about, and how
// to answer it.
type Detail struct {
	Kind Kind `json:"kind,omitempty"`
	// Tool is the tool asked for as the screen or hook names it
	// ("Bash command", "Bash", "Shell"), Subject what it would act on: the
	// command, the file, the folder to trust.
	Tool    string `json:"tool,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Question is the prompt's question line ("Do you want to proceed?"),
	// Message a banner's text.
	Question string `json:"question,omitempty"`
	Message  string `json:"message,omitempty"`
	// Choices are the menu's options in order, each with the keys that
	// pick it from the screen as it was read.
	Choices []Choice `json:"choices,omitempty"`
	// PromptID identifies what is asked (ID): approve --prompt refuses
	// when the screen's PromptID is another.
	PromptID string `json:"prompt_id,omitempty"`
}

// Choice is one option of a menu.
type Choice struct {
	Label string `json:"label"`
	// Role says what the option does: approve (this once), approve_always
	// (and do not ask again, for the session or the project), deny, or
	// other (amend, switch mode, exit).
	Role Role `json:"role"`
	// Text, typed first, and Keys, agentctl's key names (send --keys)
	// pressed after it in order, pick this option: the shortcut the menu
	// shows (Codex's "(y)" is the text y, "(esc)" the key esc), else the
	// arrows from the highlighted option and enter.
	Text string   `json:"text,omitempty"`
	Keys []string `json:"keys,omitempty"`
	// Selected says the option is highlighted: enter picks it.
	Selected bool `json:"selected,omitempty"`
}

// Role is what a menu option does.
type Role string

// The roles of a menu option.
const (
	RoleApprove       Role = "approve"
	RoleApproveAlways Role = "approve_always"
	RoleDeny          Role = "deny"
	RoleOther         Role = "other"
)

// Choice returns the first option with role r, if any.
func (d Detail) Choice(r Role) (Choice, bool) {
	for _, c := range d.Choices {
		if c.Role == r {
			return c, true
		}
	}
	return Choice{}, false
}

// ID is a stable hash of what is asked: the kind, tool, subject, question
// and the options' labels, with runs of white space made one (so a redraw
// or a wrap at another width gives the same ID), not the highlight. Two
// prompts for the same command in a row share an ID; that is the point:
// the caller saw that question.
func (d Detail) ID() string {
	if d.Kind == "" {
		return ""
	}
	h := sha256.New()
	for _, s := range []string{string(d.Kind), d.Tool, d.Subject, d.Question} {
		h.Write([]byte(squash(s)))
		h.Write([]byte{0})
	}
	for _, c := range d.Choices {
		h.Write([]byte(squash(c.Label)))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// squash removes all white space: a wrapped path or command reads the
// same at every width.
func squash(s string) string {
	return strings.Join(strings.Fields(s), "")
}
