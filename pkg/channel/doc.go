// Package channel owns agentd's channels: the registry of channels local
// services register, their bounded delivery queues, acknowledgements, and
// asks routed to a session's channel instead of its terminal. The daemon
// serves it like sessions and the screen: its handlers decode the wire
// parameters, call a Registry method and turn the errors, sentinels of this
// package, into wire codes (pkg/daemon's toWireError).
//
// A channel belongs to the Listener (a daemon connection) that registered
// it and ends with it. Each channel has a bounded FIFO of messages waiting
// to be written and, only while that queue is not empty, one writer
// goroutine: it writes the messages in seq order with Listener.Notify, so a
// listener sees them in the order they were pushed, each once. Delivery is
// asynchronous: a push answers as soon as its message is queued (queued
// true), so a pusher never waits on a listener's socket; a full queue
// answers busy at once. Only a push with ack waits, for the listener's
// acknowledgement, within its own timeout. Nothing is retried, so nothing
// is delivered twice.
//
// A listener that does not read is cut off by its connection's write
// timeout (the daemon's write_timeout): the write fails, the connection
// closes, and the registry drops the listener (Staller tells it from one
// that left). Its channels end; what they still held is lost, and the loss
// is not silent: OnDrop's function logs it, and channel.list keeps a row
// for each dropped channel (DroppedAt, Dropped) for DroppedKeep, or until a
// listener registers the id again and carries the count on. A push to it
// meanwhile is channel_unknown saying the listener was dropped. A listener
// that leaves by itself with messages queued is reported to OnDrop too.
//
// Like pkg/session and pkg/capture it has its own types (Registration,
// PushRequest, Message, Row, AskRequest, ...) and errors, and imports
// nothing of the contract: the daemon turns the wire's parameters into
// them, a Message into a channel.message notification (Listener.Deliver),
// and the errors into wire codes; a test there holds the values both
// spell (limits, ask routes, the ask message) equal. It must not import
// pkg/wire, pkg/daemon, pkg/session or pkg/capture (asks are recorded in a
// session's log through a function the daemon passes); TestChannelStandsAlone
// checks.
//
// Decisions:
//   - Channel ids (and cc_session_ids) are 1-128 characters of
//     [A-Za-z0-9._:-]; a generated id is "ch-" and 16 hex digits.
//   - An id, a session or a cc_session_id held by a live channel is refused
//     busy (retryable: it is free again once that connection ends).
//   - One listener holds at most MaxPerListener channels, the daemon at
//     most MaxChannels; beyond, register is busy.
//   - Queues are bounded per channel (messages and bytes) and, through
//     Memory (the daemon's memory budget), all together: a queued message
//     holds its bytes from its push until it is written or its channel
//     ends, and a push that finds no room is busy at once.
//   - Unregistering or acknowledging another listener's channel is
//     denied (permission_denied).
//   - Binding a channel to a session (by name, or through the session its
//     process claims with a cc_session_id) needs the session's word that
//     the caller runs inside it: Register's mayBind, which the daemon
//     answers from the session component (ancestry or the session's
//     secret). Without it, permission_denied: otherwise any program of the
//     user could take a session's asks. A cc_session_id from a caller
//     that claims no session is denied outright: the id would otherwise
//     be bound with no proof and take the pushes and asks for it. The
//     daemon's mayBind also refuses a cc_session_id that is another
//     session's name (find falls back from names to cc ids).
//   - channel.reply is accepted only from the listener holding the channel
//     the ask went to; another connection's reply is permission_denied and
//     leaves the ask waiting.
//   - channel.ack is cumulative: it acknowledges seq and every earlier
//     message.
//   - A reply to an ask that is not waiting (unknown, answered, timed out)
//     is invalid: the ask_id is wrong, no channel is missing.
//   - agent.ask through a channel: when the ask message cannot be written
//     (the listener went away) and via is auto, the ask falls back to the
//     terminal; when the channel ends before the reply, the ask fails with
//     ErrUnknown.
package channel
