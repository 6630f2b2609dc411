package sdunit

import (
	"os"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMain runs the tests in a private home (HOME, XDG directories, TMPDIR),
// removed after; it fails the run if anything is left in the real ones.
func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }
