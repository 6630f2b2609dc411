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
// # Targets
//
// The screen tools take an optional desktop: the user's display when it is
// empty, else an agent desktop's name (pkg/wire's Desktop fields). What
// the model last saw is kept per target (a view: act's space, the shot to
// observe with, the last image's hash, the loop guard), so a screenshot of
// one desktop never moves act's coordinates on another and batches on two
// desktops do not add up in one guard. A removed desktop's view is
// forgotten.
//
// # Why a separate binary
//
// The SDK's package initialisation and size cost every process that links
// it about 1 ms at start, which agentctl's ordinary commands (run once per
// shell call) cannot afford. So agentctl does not import this package:
// `agentctl mcp` and `agentctl channel mcp` exec agentctl-mcp, found beside
// agentctl or on $PATH. A test keeps the SDK out of agentctl's dependencies.
//
// # Stdin: a framing layer of their own
//
// Both servers read stdin through framing.go, not the SDK's stream
// decoder: one line that is not a JSON-RPC message is answered (-32700 or
// -32600, id null when it cannot be read) and costs only itself; request
// ids and progress tokens go back exactly as the client wrote them; a
// cancelled request gets no response. See framing.go.
//
// # Results and errors: one rule for both servers
//
// A refused or failed call, and a call whose arguments do not fit the
// tool (unknown, missing, wrong type, out of the schema's limits), is a
// tool result with isError set (MCP's tool-level error, 2025-11-25), whose
// structured content has "ok": false, a code and a reason naming the fix:
// the model sees it and can correct the call or relay it, where a protocol
// error would read as a broken tool. Only an unknown tool is a JSON-RPC
// error (invalid params), its message naming the tools that exist. Every
// structured content carries a top-level "ok" and fits the tool's
// outputSchema, generated from the contract's Go types. result.go is the
// one place both servers build these from.
//
// # Schemas from Go types
//
// Both schemas of a tool are generated: the output schema from its result
// type (the contract's, mostly), the input schema from its argument type
// in args.go, whose tags describe each argument and give its limits, with
// the contract's enumerations and limits taken from pkg/wire and
// internal/limits by name, never copied (schema.go). The server checks
// every call against that same input schema, so a declared limit is an
// enforced one.
//
// # Long calls
//
// ask, wait and act run on a connection no other call shares (kept for
// the next long call when they end normally): when the client cancels, the
// SDK cancels the handler's context, that connection closes, and agentd
// cancels the call as it does for agentctl's one-shot connections.
// ask and wait send progress notifications when the call has a
// progressToken.
//
// # The gate
//
// Without --yes the tools server is read-only. The acting tools (spawn,
// ask, send, resize, stop, restart, rm, push, act, desktop_new, desktop_rm) are still listed, with descriptions that say they
// are disabled and how the user enables them: a model that does not see a
// tool concludes it does not exist, one that sees it disabled can tell the
// user what to change. A per-call "confirm" argument would be written by
// the model itself, so there is none: the consent lives in the MCP config
// the user edits. Acting on the screen also needs the daemon's consent
// (agentd --allow-act); a refusal says which of the two is missing.
//
// It imports pkg/wire, internal/buildinfo, internal/limits, the SDK and the SDK's schema
// package (google/jsonschema-go); never the daemon side (session,
// capture, daemon).
package mcpserver
