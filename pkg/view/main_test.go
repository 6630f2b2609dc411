package view

import (
	"os"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

// TestMain runs the tests in a private home, removed after.
func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }
