// Package wire implements agentd's protocol: frames, messages, error codes,
// the exit-code table, method names with their parameter and result types,
// and a client. It is the whole contract a program needs to talk to agentd;
// a local service written in Go imports this package and nothing else.
// It knows nothing about sessions or the screen, and must not import the
// daemon side (pkg/daemon, pkg/session, pkg/capture).
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
// # Handshake
//
// agent.hello {version} answers the protocol version, the daemon's version
// and build fingerprint, its limits and the methods it serves. A version the
// daemon does not speak gets unsupported_version naming the ones it does.
package wire
