package ttyready

import (
	"os"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMain runs the tests in a private home (HOME, XDG directories, TMPDIR),
// removed after; it fails the run if anything is left in the real ones.
// With $TTYREADY_HELPER set, the test binary is instead a small program on
// the test's terminal (see helper).
func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h))
	}
	os.Exit(testhome.Main(m))
}
