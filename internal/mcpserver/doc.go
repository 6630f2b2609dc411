// Package mcpserver holds agentd's two MCP servers, built on the official
// MCP Go SDK and run by the agentctl-mcp binary:
//
//   - the tools server (`agentctl mcp [--yes]`): sessions and the screen as
//     MCP tools for a model, and
//   - the channel bridge (`agentctl channel mcp`): agentd's channels as
//     Claude Code channel events, with a reply tool.
//
// Both are surfaces over pkg/wire's typed client and add no logic
// underneath: consent, the kill switch, the limits and the audit log apply
// because the daemon applies them. What lives here is what only a model
// surface needs: scaling screenshots to a size models read well and
// converting act coordinates back from that image, and the loop guard.
//
// # Why a separate binary
//
// The SDK's package initialisation and size cost every process that links
// it about 1 ms at start, which agentctl's ordinary commands (run once per
// shell call) cannot afford. So agentctl does not import this package:
// `agentctl mcp` and `agentctl channel mcp` exec agentctl-mcp, found beside
// agentctl or on $PATH. A test keeps the SDK out of agentctl's dependencies.
//
// # Results and errors: one rule for both servers
//
// A refused or failed call is an answer: a normal tool result whose
// structured content has "ok": false, a code and a reason a model can relay
// to the user, with isError false. A model that sees a protocol error
// concludes the tool is broken and retries; one that reads a reason can act
// on it. Only a malformed call (unknown tool, unknown or missing argument,
// wrong type) is a JSON-RPC error (invalid params), and its message names
// what exists. Every tool result carries a top-level "ok". result.go is the
// one place both servers build these from.
//
// # The gate
//
// Without --yes the tools server is read-only. The acting tools (spawn,
// ask, send, stop, act) are still listed, with descriptions that say they
// are disabled and how the user enables them: a model that does not see a
// tool concludes it does not exist, one that sees it disabled can tell the
// user what to change. A per-call "confirm" argument would be written by
// the model itself, so there is none: the consent lives in the MCP config
// the user edits. Acting on the screen also needs the daemon's consent
// (agentd --allow-act); a refusal says which of the two is missing.
//
// It imports pkg/wire, internal/buildinfo and the SDK; never the daemon
// side (session, capture, daemon).
package mcpserver
