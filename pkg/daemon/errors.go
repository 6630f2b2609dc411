package daemon

import (
	"context"
	"errors"

	"github.com/agentd/agentd/internal/errkind"
	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// errShuttingDown answers requests that arrive while the daemon stops.
var errShuttingDown = wire.Errorf(wire.CodeShuttingDown, "agentd is shutting down; retry once it is running again")

// errCallCanceled ends a call whose caller went away (its connection
// closed, e.g. Ctrl-C on agentctl): its own outcome, not shutting_down,
// since the daemon is not stopping. Nobody is left to read an answer, so
// none is written (rpc.Canceled); the request log records it as canceled.
var errCallCanceled = rpc.Canceled

// kindCodes is the wire code of each kind of domain error (internal/errkind):
// every domain declares its sentinels by kind, so one row here serves them
// all.
var kindCodes = map[errkind.Kind]wire.Code{
	errkind.Invalid:        wire.CodeInvalidParams,
	errkind.NotFound:       wire.CodeAgentNotFound,
	errkind.Exists:         wire.CodeAgentExists,
	errkind.Busy:           wire.CodeBusy,
	errkind.Timeout:        wire.CodeTimeout,
	errkind.LockTimeout:    wire.CodeLockTimeout,
	errkind.Refused:        wire.CodeRefused,
	errkind.Denied:         wire.CodePermissionDenied,
	errkind.Unavailable:    wire.CodeScreenUnavailable,
	errkind.ChannelUnknown: wire.CodeChannelUnknown,
	errkind.StartFailed:    wire.CodeSpawnFailed,
	errkind.InvalidStatus:  wire.CodeInvalidStatus,
}

// toWireError is the one place that turns an error from any component into
// a wire error code. Components return their own sentinels; only this
// function knows the codes.
func toWireError(err error) *wire.Error {
	var we *wire.Error
	var te *session.TimeoutError
	var pte *channel.PushTimeoutError
	var ate *channel.AskTimeoutError
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, &te):
		return wire.Errorf(wire.CodeTimeout, "%s", te.Error()).WithDetails(wire.TimeoutDetails{
			Name: te.Name, Op: te.Op, TimeoutMS: te.Timeout.Milliseconds(), Partial: te.Partial,
			Screen: te.Screen, FromSeq: te.FromSeq, ToSeq: te.ToSeq, Hint: te.Hint})
	case errors.As(err, &pte):
		return wire.Errorf(wire.CodeTimeout, "%s", pte.Error()).WithDetails(wire.PushTimeoutDetails{
			ChannelID: pte.ChannelID, Seq: pte.Seq, Written: pte.Written, TimeoutMS: pte.Timeout.Milliseconds()})
	case errors.As(err, &ate):
		return wire.Errorf(wire.CodeTimeout, "%s", ate.Error()).WithDetails(wire.TimeoutDetails{
			Name: ate.Session, Op: "ask", TimeoutMS: ate.Timeout.Milliseconds(), Screen: []string{}})
	}
	// Every domain's sentinels are of a kind.
	if k, ok := errkind.Of(err); ok {
		if c, ok := kindCodes[k]; ok {
			return wire.Errorf(c, "%v", err)
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeTimeout, "%v; give the call a longer --timeout", err)
	case errors.Is(err, context.Canceled):
		return wire.Errorf(wire.CodeShuttingDown, "the call was cancelled: %v", err)
	}
	return wire.Errorf(wire.CodeInternal, "internal error: %v", err)
}
