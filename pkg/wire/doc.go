// Package wire is agentd's contract: the envelopes, the error codes and the
// exit-code table (Codes), the method names (one list, Methods) with their
// parameter and result types, every status, reason and outcome a client
// compares against as typed constants, and a thin typed client. A local
// service written in Go imports this package and nothing else. It knows
// nothing about sessions or the screen, and must not import the daemon side
// (pkg/daemon, pkg/session, pkg/capture).
//
// The connection engine (reading and writing frames, matching responses to
// calls, in-flight bounds, deadlines, the raw upgrade) is internal/rpc,
// shared with the daemon and the session workers; the envelope types here
// are its types under the contract's names. Adding a method touches three
// places: its name in Methods and its types here, its route in pkg/daemon
// (a test fails when the two lists differ), and the domain method it calls.
//
// # Whom the client talks to
//
// Before it sends anything, the client checks the socket (CheckSocketDir,
// then SO_PEERCRED in the engine's dial): its directory must be the
// user's own, 0700 and not a symbolic link, as agentd makes it, and the
// process listening must run as the user. Anything else is an
// *UnreachableError holding an *UntrustedSocketError that names what was
// found and the fix; nothing was written. The costs are one lstat and one
// getsockopt per connection. The check matters most for the fallback
// under the temporary directory (no XDG_RUNTIME_DIR), a name another user
// can take first.
//
// # Frames
//
// Every message in either direction is one frame: a 4-byte little-endian
// unsigned length, then that many bytes of UTF-8 JSON. The length is at
// least 1 and at most MaxFrameSize (16 MiB); a reader checks it before
// allocating anything. End of stream at a frame boundary is a clean close;
// inside a frame it is a truncated frame.
//
// # Messages
//
//	request       {"id": 7, "method": "agent.hello", "params": {"version": 1}}
//	response      {"id": 7, "result": {...}}
//	error         {"id": 7, "error": {"code": "invalid_params", "message": "...", "retryable": false, "details": {...}}}
//	notification  {"method": "channel.message", "params": {...}}
//
// A request's id is an integer from 1 to 2^64-1 chosen by the client; a
// response carries the id of the request it answers, and responses may come
// in any order, since one connection may have many requests in flight.
// Exactly one of result and error is present in a response; "result": null
// is a valid success. Notifications have no id and get no answer.
//
// # Errors and the connection
//
// A frame that holds no valid request (not JSON, not an object, a missing
// or non-integer id, no method) is answered with malformed_frame, using the
// request's id when it could be read and 0 otherwise, and the connection
// goes on. A broken frame (length 0 or over the cap, truncated, or not
// completed within the read timeout once begun) is answered with
// malformed_frame and id 0 where the connection still allows it, and then
// the connection is closed: the reader has lost its place in the stream.
// Error codes, their retryability and agentctl's exit codes are in Codes.
//
// # Raw streaming
//
// agent.attach switches its connection from frames to a raw terminal
// stream. The client sends the attach request as the only request in flight
// on a fresh connection; the daemon answers it with a normal response frame
// (an AttachResult, or an error, after which the connection stays framed).
// After a successful answer there are no more frames in either direction:
// bytes from the client are the session's keyboard input (dropped when
// read_only), and bytes from the daemon are the program's output, starting
// with a repaint of the current screen. The stream ends when either side
// closes the connection or the session ends.
//
// An attach with framed_input sends its input as attach frames instead:
// a kind byte, a 4-byte little-endian length, then that many bytes of
// payload (at most MaxAttachFrame). Kind AttachFrameInput carries keyboard
// bytes; kind AttachFrameWindow carries the window's new size as the JSON
// of a WindowSize ({"cols":C,"rows":R}), and the daemon resizes the
// session in order with the keys around it. A frame that is not one of
// these, or a size the session refuses, ends the stream with a line on
// the terminal naming the problem. The output direction is bare bytes
// either way. Without framed_input, resizing is done with agent.resize on
// another connection.
//
// # Methods
//
// Sessions: agent.spawn, agent.ask, agent.list, agent.status, agent.stop,
// agent.rm, agent.reconcile, agent.logs (pages, or notifications agent.log_event when
// streaming or following), agent.send, agent.snapshot, agent.wait, agent.resize,
// agent.attach, agent.diff, agent.restart. The screen: agent.screenshot, agent.act, agent.screen.
// Channels: channel.register_channel (then channel.message notifications
// on that connection), channel.unregister_channel, channel.push_to_channel,
// channel.ack, channel.list, channel.reply. Agent CLIs' hooks: agent.hook
// (agentctl hook, from inside a session, with its token). State changes:
// agent.subscribe (notifications agent.state_change, resumable with a
// cursor; events.go). Their parameter and result types are in this
// package, named after the method.
//
// # Handshake
//
// agent.hello {version} answers the protocol version, the daemon's version
// and build fingerprint, its limits and the methods it serves. A version the
// daemon does not speak gets unsupported_version naming the ones it does.
package wire
