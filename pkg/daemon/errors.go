package daemon

import (
	"context"
	"errors"

	"github.com/agentd/agentd/pkg/wire"
)

// errShuttingDown answers requests that arrive while the daemon stops.
var errShuttingDown = wire.Errorf(wire.CodeShuttingDown, "agentd is shutting down; retry once it is running again")

// toWireError is the one place that turns an error from any component into
// a wire error code. Components return their own sentinels; only this
// function knows the codes.
func toWireError(err error) *wire.Error {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeTimeout, "%v; give the call a longer --timeout", err)
	case errors.Is(err, context.Canceled):
		return wire.Errorf(wire.CodeShuttingDown, "the call was cancelled: %v", err)
	}
	return wire.Errorf(wire.CodeInternal, "internal error: %v", err)
}
