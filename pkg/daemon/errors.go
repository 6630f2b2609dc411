package daemon

import (
	"context"
	"errors"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/desktop"
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
	case errors.Is(err, session.ErrNotFound):
		return wire.Errorf(wire.CodeAgentNotFound, "%v", err)
	case errors.Is(err, session.ErrExists):
		return wire.Errorf(wire.CodeAgentExists, "%v", err)
	case errors.Is(err, session.ErrInvalid):
		return wire.Errorf(wire.CodeInvalidParams, "%v", err)
	case errors.Is(err, session.ErrSpawnFailed):
		return wire.Errorf(wire.CodeSpawnFailed, "%v", err)
	case errors.Is(err, session.ErrInvalidStatus):
		return wire.Errorf(wire.CodeInvalidStatus, "%v", err)
	case errors.Is(err, session.ErrLockTimeout):
		return wire.Errorf(wire.CodeLockTimeout, "%v", err)
	case errors.Is(err, session.ErrTimeout):
		return wire.Errorf(wire.CodeTimeout, "%v", err)
	case errors.Is(err, session.ErrBusy):
		return wire.Errorf(wire.CodeBusy, "%v", err)
	case errors.Is(err, channel.ErrUnknown):
		return wire.Errorf(wire.CodeChannelUnknown, "%v", err)
	case errors.Is(err, channel.ErrBusy):
		return wire.Errorf(wire.CodeBusy, "%v", err)
	case errors.Is(err, channel.ErrInvalid):
		return wire.Errorf(wire.CodeInvalidParams, "%v", err)
	case errors.Is(err, channel.ErrDenied):
		return wire.Errorf(wire.CodePermissionDenied, "%v", err)
	case errors.Is(err, channel.ErrTimeout):
		return wire.Errorf(wire.CodeTimeout, "%v", err)
	case errors.Is(err, capture.ErrInvalid), errors.Is(err, capture.ErrTooLarge):
		return wire.Errorf(wire.CodeInvalidParams, "%v", err)
	case errors.Is(err, capture.ErrRefused):
		return wire.Errorf(wire.CodeRefused, "%v", err)
	case errors.Is(err, capture.ErrLockTimeout):
		return wire.Errorf(wire.CodeLockTimeout, "%v", err)
	case errors.Is(err, capture.ErrBusy):
		return wire.Errorf(wire.CodeBusy, "%v", err)
	case errors.Is(err, capture.ErrUnavailable):
		return wire.Errorf(wire.CodeScreenUnavailable, "%v", err)
	case errors.Is(err, capture.ErrTimeout):
		return wire.Errorf(wire.CodeTimeout, "%v", err)
	case errors.Is(err, desktop.ErrInvalid):
		return wire.Errorf(wire.CodeInvalidParams, "%v", err)
	case errors.Is(err, desktop.ErrExists):
		return wire.Errorf(wire.CodeAgentExists, "%v", err)
	case errors.Is(err, desktop.ErrNotFound):
		return wire.Errorf(wire.CodeScreenUnavailable, "%v", err)
	case errors.Is(err, desktop.ErrBusy):
		return wire.Errorf(wire.CodeBusy, "%v", err)
	case errors.Is(err, desktop.ErrStartFailed):
		return wire.Errorf(wire.CodeSpawnFailed, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeTimeout, "%v; give the call a longer --timeout", err)
	case errors.Is(err, context.Canceled):
		return wire.Errorf(wire.CodeShuttingDown, "the call was cancelled: %v", err)
	}
	return wire.Errorf(wire.CodeInternal, "internal error: %v", err)
}
