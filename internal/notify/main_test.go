package notify

import (
	"io"
	"log"
	"os"
	"testing"

	"github.com/BurntSushi/xgb"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMain runs the tests in a private home (HOME, XDG directories, TMPDIR),
// removed after; it fails the run if anything is left in the real ones.
// xgb's log (no Xauthority in the private home, which Xvfb without -auth
// does not need) is silenced before any test runs.
func TestMain(m *testing.M) {
	xgb.Logger = log.New(io.Discard, "", 0)
	os.Exit(testhome.Main(m))
}
