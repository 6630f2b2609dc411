package daemon

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

func (d *Daemon) helloRoutes() []Route {
	return []Route{{Method: wire.MethodHello, Handle: d.hello}}
}

func (d *Daemon) hello(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.HelloParams](call)
	if err != nil {
		return nil, err
	}
	if p.Version != 0 && !slices.Contains(wire.SupportedVersions, p.Version) {
		return nil, wire.Errorf(wire.CodeUnsupportedVersion,
			"protocol version %d is not supported; this agentd speaks %v — upgrade the older side", p.Version, wire.SupportedVersions)
	}
	return &wire.HelloResult{
		Protocol:          wire.ProtocolVersion,
		SupportedVersions: wire.SupportedVersions,
		Version:           buildinfo.Version,
		Build:             d.build(),
		PID:               os.Getpid(),
		UptimeMS:          time.Since(d.started).Milliseconds(),
		StartedAt:         d.started.UTC().Format(time.RFC3339),
		Socket:            d.cfg.SocketPath,
		StateDir:          d.cfg.StateDir,
		Limits: wire.Limits{
			MaxFrameBytes:  wire.MaxFrameSize,
			MaxConnections: d.live.Load().MaxConnections,
			ReadTimeoutMS:  d.live.Load().ReadTimeout.Milliseconds(),
		},
		Methods: d.router.methods(),
	}, nil
}
