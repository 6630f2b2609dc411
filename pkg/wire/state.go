package wire

import "context"

// MethodApprove answers an agent CLI's permission prompt as a person
// would: the option that approves it, or with Deny the one that denies it.
// With PromptID it refuses (invalid_status, nothing typed) unless the
// prompt on the screen now is the one the caller saw (StateDetail.PromptID
// from agent.status). It is a person's act: the MCP servers never offer it.
const MethodApprove = "agent.approve"

// The agent states, in SessionRow.State and SessionStatus.State: an agent
// CLI (Claude Code, Codex, Gemini CLI) is working, waiting,
// needs_approval or needs_attention; wait's States also take ready and
// busy, which any program has (SessionRow.Input).
const (
	StateWorking        = "working"         // generating, or running a tool
	StateWaiting        = "waiting"         // its turn is over; it waits for the next prompt
	StateNeedsApproval  = "needs_approval"  // a tool permission prompt or a question menu
	StateNeedsAttention = "needs_attention" // a dialog it cannot pass alone (trust, API key, sign-in, an error or limit banner)
)

// StateDetail is what a needs_approval or needs_attention state asks.
type StateDetail struct {
	// Kind: permission, question, trust, api_key, sign_in, hooks, error,
	// usage_limit.
	Kind string `json:"kind,omitempty"`
	// Tool is the tool asked for ("Bash command"), Subject what it acts
	// on (the command, the file, the folder).
	Tool    string `json:"tool,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Question is the prompt's question line, Message a banner's text.
	Question string `json:"question,omitempty"`
	Message  string `json:"message,omitempty"`
	// Choices are the options on the screen.
	Choices []StateChoice `json:"choices,omitempty"`
	// PromptID identifies what is asked; agent.approve takes it.
	PromptID string `json:"prompt_id,omitempty"`
}

// StateChoice is one option of a prompt.
type StateChoice struct {
	Label string `json:"label"`
	// Role: approve, approve_always, deny or other.
	Role string `json:"role"`
}

// ApproveParams name the session and the answer.
type ApproveParams struct {
	Name     string `json:"name"`
	Deny     bool   `json:"deny,omitempty"`
	PromptID string `json:"prompt_id,omitempty"`
}

// ApproveResult says what was answered.
type ApproveResult struct {
	Name     string `json:"name"`
	PromptID string `json:"prompt_id"`
	// Choice is the option picked, as the prompt labels it.
	Choice  string `json:"choice"`
	Kind    string `json:"kind"`
	Tool    string `json:"tool,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// Approve answers a session's agent prompt (agent.approve).
func (c *Client) Approve(ctx context.Context, p ApproveParams) (*ApproveResult, error) {
	return call[ApproveResult](ctx, c, MethodApprove, p)
}
