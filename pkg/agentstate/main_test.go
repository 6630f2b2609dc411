package agentstate

import (
	"os"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }
