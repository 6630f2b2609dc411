package mcpserver

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentd/agentd/pkg/wire"
)

// Exit statuses of agentctl-mcp; the same numbers agentctl uses.
const (
	exitOK    = wire.ExitOK
	exitUsage = wire.ExitUsage
	exitFail  = 1
)

// Usage is agentctl-mcp's command line. agentctl passes its --socket on.
const Usage = `usage:
  agentctl-mcp [--socket PATH] [--yes]                        the tools server (agentctl mcp)
  agentctl-mcp channel [--socket PATH] [--session S] [--id ID]  the Claude Code channel bridge (agentctl channel mcp)`

// Main runs agentctl-mcp with args (without the program name) and returns
// its exit status. Stdout carries the MCP protocol only.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	channel := len(args) > 0 && args[0] == "channel"
	if channel {
		args = args[1:]
	}
	fs := flag.NewFlagSet("agentctl-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	socket := fs.String("socket", wire.DefaultSocketPath(), "agentd's socket")
	yes := fs.Bool("yes", false, "enable the acting tools")
	session := fs.String("session", os.Getenv("AGENTD_SESSION"), "the session to bind (channel)")
	id := fs.String("id", "", "the channel id (channel)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || (channel && *yes) {
		fmt.Fprintf(stderr, "agentctl-mcp: %v\n%s\n", argProblem(err, fs.Args()), Usage)
		return exitUsage
	}
	var err error
	if channel {
		err = RunBridge(ctx, BridgeConfig{Socket: *socket, Session: *session, ID: *id, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	} else {
		err = Run(ctx, Config{Socket: *socket, Yes: *yes, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentctl-mcp: %v\n", err)
		return exitFail
	}
	return exitOK
}

func argProblem(err error, rest []string) string {
	switch {
	case err != nil:
		return err.Error()
	case len(rest) > 0:
		return fmt.Sprintf("unexpected argument %q", rest[0])
	}
	return "--yes belongs to the tools server, not the channel bridge"
}
