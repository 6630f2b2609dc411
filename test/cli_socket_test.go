package test

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

// TestCLISocketPathTooLongSaysSo: a socket path over the 108 bytes of a
// Unix socket address is named as the problem, with where it came from,
// not reported as a daemon that is not running.
func TestCLISocketPathTooLongSaysSo(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	long := "/tmp/" + strings.Repeat("d", 120)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"--socket", nil, []string{"--socket", long + "/x.sock", "list"}, []string{"is 132 bytes", "(from --socket)", "108"}},
		{"AGENTD_SOCKET", []string{"AGENTD_SOCKET=" + long + "/x.sock"}, []string{"list"}, []string{"(from $AGENTD_SOCKET)"}},
		{"XDG_RUNTIME_DIR", []string{"XDG_RUNTIME_DIR=" + long}, []string{"status", "x"}, []string{"(from $XDG_RUNTIME_DIR)", "shorter $XDG_RUNTIME_DIR", "--socket"}},
	} {
		_, errOut, code := h.agentctlAt(t.TempDir(), tc.env, tc.args...)
		if code != wire.ExitUsage || strings.Contains(errOut, "is agentd running") {
			t.Errorf("%s: exit %d, stderr %q; want %d and the path's length as the problem", tc.name, code, errOut, wire.ExitUsage)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q does not say %q", tc.name, errOut, w)
			}
		}
	}
}
