package rpc

// Codes from agentd's table (pkg/wire) that the golden messages of these
// tests carry: the engine never raises them, it only moves them.
const (
	CodeAgentNotFound Code = "agent_not_found"
	CodeTimeout       Code = "timeout"
	CodeBusy          Code = "busy"
)
