// Package rpc is the connection engine every agentd socket shares: frames
// (a 4-byte little-endian length, then that many bytes of JSON, checked
// against MaxFrameSize before anything is allocated), the request, response
// and notification envelopes, and one connection type for both ends, Conn
// (golang.org/x/tools' jsonrpc2 Connection, with FrameReader and
// frameWriter as its Framer). agentctl's client (through pkg/wire), the
// daemon and the session workers all use it.
//
// A Conn has one reading loop (Serve) that dispatches every frame it
// reads: a request to the handler, if this end serves, inline or on a
// pooled goroutine; a response to the Call waiting for its id; a
// notification to the notification handler. It has one write path (a frame
// per write, bounded by a timeout or the caller's context), one set of
// deadlines and one end (Err, Done, the pending calls released). Either end
// can Call and Notify. The two constructors differ only in their bounds:
// NewServerConn gives the serving end the server's (MaxInFlight, the
// memory Budget, IdleTimeout and KeepAlive, the read deadline of a begun
// frame, the WriteTimeout that drops a peer which stops reading, the raw
// Upgrade) and is run by Serve; NewClient and Dial give the calling end
// none of its own (each call is bounded by its context) and run its loop
// with no handler. ServerConn and Client remain as names of Conn. A
// serving end reads requests first: a frame that is not one is taken as a
// response only when one of its own calls waits for that id, or as a
// notification when it has an OnNotification; else it is answered as a bad
// request, as it always was. DialUpgrade opens a connection that turns
// into a raw stream after its one request, and CallOnce one that carries a
// single call whose answer the caller reads itself: a process that makes a
// call and exits needs no reading loop, and not waking its caller from one
// is a fifth of a millisecond of agentctl's start.
//
// The memory Budget counts every byte a serving end holds for its peers:
// each request frame from before its body is allocated until its handler
// returns, each answer from when it is built until it is written, and
// what a handler gathers for a large answer (Reserve, then WithLease: the
// lease becomes the answer's). Each of those is a Lease, which its owner
// releases itself, exactly once. Past the budget a large frame or answer
// is answered busy; frames and answers up to Tiny always pass.
//
// It owns no vocabulary: error codes are strings the protocol on top
// chooses (pkg/wire's table for agentd, the session's kind names for its
// workers). The engine itself raises only internal, malformed_frame and
// invalid_params, for faults of the stream. It must not import anything of
// agentd; pkg/wire names its envelopes as aliases, so the contract a client
// in another language implements is still read in one place.
//
// Which errors close the connection: on the serving end, a broken frame (length 0 or over the
// cap, truncated, or not completed within the read timeout once begun) is
// answered with malformed_frame and id 0 where possible, then the
// connection is closed, since the reader has lost its place. A frame that is
// whole but holds no valid request is answered and the connection goes on.
// A connection with no request being read or handled for the IdleTimeout is
// closed (unless KeepAlive holds it), and one whose peer leaves a frame
// unread for the WriteTimeout is closed with WriteFailure saying so. A
// server context cancelled with an *Error cause sends that error (id 0) as
// its last frame: a client sees why it was closed (shutting_down). The
// calling end closes on a broken frame or a message it cannot read, without
// answering, and on an error answer with id 0, which becomes its Err.
package rpc
