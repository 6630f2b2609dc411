package wire

import "github.com/agentd/agentd/internal/rpc"

// The envelopes and the frame cap are the engine's (internal/rpc reads and
// writes them); they are named here because they are the contract a client
// in another language implements. The package doc spells them out.
type (
	// Request is a call from a client: {"id", "method", "params"}. IDs are
	// chosen by the client, must be unique among its calls in flight, and
	// are at least 1: id 0 is reserved for error responses to frames whose
	// id could not be read.
	Request = rpc.Request
	// Response answers the Request with the same ID. Exactly one of Result
	// and Error is set; a success whose result is JSON null carries Result
	// "null".
	Response = rpc.Response
	// Notification is an unsolicited message from the daemon (a channel
	// delivery, a followed stream). It has no id and gets no response.
	Notification = rpc.Notification
)

// MaxFrameSize is the largest JSON body a frame may carry, in either
// direction: 16 MiB. A length prefix over it is refused before anything is
// allocated.
const MaxFrameSize = rpc.MaxFrameSize
