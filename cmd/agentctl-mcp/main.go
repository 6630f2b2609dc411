// Command agentctl-mcp is agentd's MCP servers: the tools server that
// `agentctl mcp` runs and the Claude Code channel bridge that `agentctl
// channel mcp` runs. It is a binary of its own so that the MCP SDK's start-up
// cost stays out of every other agentctl command; see internal/mcpserver.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd/agentd/internal/mcpserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := mcpserver.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
