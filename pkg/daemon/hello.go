package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

func (d *Daemon) helloRoutes() []Route {
	return []Route{{Method: wire.MethodHello, Quick: true, Handle: d.hello}}
}

// usualHello is the params every client of this protocol version sends;
// they need no decoder (a strict one costs about a sixth of a hello).
var usualHello = []byte(`{"version":1}`)

func (d *Daemon) hello(ctx context.Context, call *Call) (any, error) {
	p := wire.HelloParams{Version: wire.ProtocolVersion}
	if !bytes.Equal(call.Params, usualHello) {
		var err error
		if p, err = decodeParams[wire.HelloParams](call); err != nil {
			return nil, err
		}
	}
	if p.Version != 0 && !slices.Contains(wire.SupportedVersions, p.Version) {
		return nil, wire.Errorf(wire.CodeUnsupportedVersion,
			"protocol version %d is not supported; this agentd speaks %v — upgrade the older side", p.Version, wire.SupportedVersions)
	}
	// Everything but the uptime changes only on reload: encode it once.
	cached := d.helloJSON.Load()
	if cached == nil {
		b, err := json.Marshal(d.helloResult(-1))
		if err != nil {
			return nil, err
		}
		prefix, suffix, ok := bytes.Cut(b, []byte(`"uptime_ms":-1`))
		if !ok {
			return d.helloResult(time.Since(d.started).Milliseconds()), nil
		}
		cached = &helloTemplate{prefix: append(prefix, `"uptime_ms":`...), suffix: suffix}
		d.helloJSON.Store(cached)
	}
	return helloAnswer{cached, time.Since(d.started).Milliseconds()}, nil
}

// helloTemplate is the encoded hello result around its uptime.
type helloTemplate struct{ prefix, suffix []byte }

// helloAnswer is one hello's result: the template with this uptime,
// appended straight into the response (rpc.JSONAppender).
type helloAnswer struct {
	t        *helloTemplate
	uptimeMS int64
}

// AppendJSON appends the answer's JSON.
func (h helloAnswer) AppendJSON(dst []byte) []byte {
	dst = append(dst, h.t.prefix...)
	dst = strconv.AppendInt(dst, h.uptimeMS, 10)
	return append(dst, h.t.suffix...)
}

// MarshalJSON is the same JSON for any other encoder (tests call the
// handler directly).
func (h helloAnswer) MarshalJSON() ([]byte, error) { return h.AppendJSON(nil), nil }

func (d *Daemon) helloResult(uptimeMS int64) *wire.HelloResult {
	return &wire.HelloResult{
		Protocol:          wire.ProtocolVersion,
		SupportedVersions: wire.SupportedVersions,
		Version:           buildinfo.Version,
		Build:             d.build(),
		PID:               os.Getpid(),
		UptimeMS:          uptimeMS,
		StartedAt:         d.started.UTC().Format(time.RFC3339),
		Socket:            d.cfg.SocketPath,
		StateDir:          d.cfg.StateDir,
		Limits: wire.Limits{
			MaxFrameBytes:  wire.MaxFrameSize,
			MaxConnections: d.live.Load().MaxConnections,
			ReadTimeoutMS:  d.live.Load().ReadTimeout.Milliseconds(),
		},
		Methods:       d.router.methods(),
		Notifications: d.notificationsStatus(),
	}
}
