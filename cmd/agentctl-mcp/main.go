// Command agentctl-mcp is agentd's MCP servers: the tools server that
// `agentctl mcp` runs and the Claude Code channel bridge that `agentctl
// channel mcp` runs. It is a binary of its own so that the MCP SDK's start-up
// cost stays out of every other agentctl command; see internal/mcpserver.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agentd/agentd/internal/mcpserver"
)

// gcPercent is the server's garbage collection target (GOGC). A tools/call
// allocates its message several times over (the framing's and the SDK's
// decoding, the argument checks, the result's encoding) while the live heap
// stays a few MiB, so at Go's default (a collection each time the heap
// doubles) collecting took about a sixth of the server's CPU in an act
// loop. Four times the live heap between collections keeps it off the
// critical path for tens of MiB at most. GOGC in the environment still wins.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := mcpserver.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
