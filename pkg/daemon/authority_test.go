package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentd/agentd/pkg/wire"
)

// lockedBuffer is a log sink the daemon's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestChannelAuthority: a binding the session does not vouch for is
// permission_denied with the reason, the refused connection holds nothing,
// and refusals are logged with the peer's pid, uid and executable, at most
// one per interval however many come.
func TestChannelAuthority(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	cfg := Config{SocketPath: filepath.Join(shortTempDir(t), "run", "agentd.sock"), StateDir: filepath.Join(t.TempDir(), "state"),
		Logger: zerolog.New(logs)}
	d := New(cfg)
	d.vouch = func(_ context.Context, name string, peer Peer, token string) error {
		if name == "vic" && token == "right" {
			return nil
		}
		return fmt.Errorf("process %d is not one of session %q's processes and gave no token", peer.PID, name)
	}
	td := serveDaemon(t, d, cfg.SocketPath)
	c := td.client(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		_, err := c.RegisterChannel(ctx, wire.RegisterChannelParams{Session: "vic", SessionToken: "wrong"})
		wantCode(t, "binding without proof", err, wire.CodePermissionDenied)
		if i == 0 && !strings.Contains(err.Error(), "not one of session \"vic\"'s processes") {
			t.Errorf("refusal %q does not say why", err)
		}
	}
	if l, err := c.ListChannels(ctx); err != nil || len(l.Channels) != 0 {
		t.Fatalf("channels after refusals: %+v %v, want none", l, err)
	}
	if _, err := c.RegisterChannel(ctx, wire.RegisterChannelParams{Session: "vic", SessionToken: "right"}); err != nil {
		t.Fatalf("binding with proof: %v", err)
	}
	out := logs.String()
	n := strings.Count(out, `"permission denied"`)
	if n < 1 || n > 10 {
		t.Errorf("50 refusals logged %d times, want at least one and rate-limited\n%s", n, out)
	}
	for _, field := range []string{`"peer_pid":`, `"peer_uid":`, `"peer_exe":`} {
		if !strings.Contains(out, field) {
			t.Errorf("refusal log lacks %s:\n%s", field, out)
		}
	}
}
