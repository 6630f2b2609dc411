// Package rpc is the connection engine every agentd socket shares: frames
// (a 4-byte little-endian length, then that many bytes of JSON, checked
// against MaxFrameSize before anything is allocated), the request, response
// and notification envelopes, a server side (ServerConn: in-flight bounds,
// read and write deadlines, per-request contexts, the raw upgrade) and a
// calling side (Client, DialUpgrade). agentctl's client (through pkg/wire),
// the daemon and the session workers all use it.
//
// It owns no vocabulary: error codes are strings the protocol on top
// chooses (pkg/wire's table for agentd, the session's kind names for its
// workers). The engine itself raises only internal, malformed_frame and
// invalid_params, for faults of the stream. It must not import anything of
// agentd; pkg/wire names its envelopes as aliases, so the contract a client
// in another language implements is still read in one place.
//
// Which errors close the connection: a broken frame (length 0 or over the
// cap, truncated, or not completed within the read timeout once begun) is
// answered with malformed_frame and id 0 where possible, then the
// connection is closed, since the reader has lost its place. A frame that is
// whole but holds no valid request is answered and the connection goes on.
// A connection with no request being read or handled for the IdleTimeout is
// closed (unless KeepAlive holds it), and one whose peer leaves a frame
// unread for the WriteTimeout is closed with WriteFailure saying so. A
// server context cancelled with an *Error cause sends that error (id 0) as
// its last frame: a client sees why it was closed (shutting_down).
package rpc
