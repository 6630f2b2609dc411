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
  agentctl-mcp [--socket PATH] [--yes] [--max-output BYTES]   the tools server (agentctl mcp)
  agentctl-mcp channel [--socket PATH] [--session S] [--id ID]  the Claude Code channel bridge (agentctl channel mcp)`

// DefaultMaxOutput is the text cap of a tool result: about 25,000 tokens,
// where Claude Code starts warning about an MCP result's size.
const DefaultMaxOutput = 100000

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
	maxOutput := fs.Int("max-output", DefaultMaxOutput, "cap each tool result's text at this many bytes; 0: no cap")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || (channel && *yes) {
		fmt.Fprintf(stderr, "agentctl-mcp: %v\n%s\n", argProblem(err, fs.Args()), Usage)
		return exitUsage
	}
	if *maxOutput < 0 {
		fmt.Fprintf(stderr, "agentctl-mcp: --max-output %d: give 0 (no cap) or a number of bytes\n%s\n", *maxOutput, Usage)
		return exitUsage
	}
	var err error
	if channel {
		err = RunBridge(ctx, BridgeConfig{Socket: *socket, Session: *session, ID: *id, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	} else {
		err = Run(ctx, Config{Socket: *socket, Yes: *yes, MaxOutput: *maxOutput, Stdin: stdin, Stdout: stdout, Stderr: stderr})
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
