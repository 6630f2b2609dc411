package main

// agentctl mcp and agentctl channel mcp: the MCP servers live in a binary
// of their own, agentctl-mcp, which these commands exec. Linking the MCP
// SDK here would cost every agentctl command its start-up time (about 1 ms
// of package initialisation, a third of agentctl's whole run); see
// internal/mcpserver. agentctl checks the command line itself, so usage
// errors read like every other command's.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"
)

// mcpBinaryName is the MCP servers' binary, installed beside agentctl.
const mcpBinaryName = "agentctl-mcp"

// exitStatus is the exit status of a program agentctl ran in its place,
// which has already said what went wrong.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func mcpVerb() command {
	var yes bool
	maxOutput := -1
	return verb[*selfPrinted]{
		use:     "mcp [--yes] [--max-output BYTES]",
		summary: "serve sessions and the screen to a model as MCP tools on stdio (for an MCP config); read-only unless --yes",
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&yes, "yes", false, "enable the acting tools: spawn, ask, send, resize, stop, restart, rm, push, act, desktop_new, desktop_rm")
			fs.IntVar(&maxOutput, "max-output", 100000, "cap each tool result's text at this many bytes (the result says what was cut); 0: no cap")
		},
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			if maxOutput < 0 {
				return nil, usagef("mcp: --max-output %d: give 0 (no cap) or a number of bytes", maxOutput)
			}
			rest := []string{"--max-output", strconv.Itoa(maxOutput)}
			if yes {
				rest = append(rest, "--yes")
			}
			return nil, e.execMCP(ctx, rest...)
		},
	}
}

func channelMCPVerb() command {
	var session, id string
	return verb[*selfPrinted]{
		use:     "mcp [--session S] [--id ID]",
		summary: "the Claude Code channel bridge: a stdio MCP server bound to the session it runs in",
		long: "A stdio MCP server that binds a channel to $AGENTD_SESSION (or --session), turns each message\n" +
			"into a Claude Code channel event, and gives Claude a reply tool. Name it in .mcp.json:\n" +
			"  {\"mcpServers\": {\"agentd\": {\"command\": \"agentctl\", \"args\": [\"channel\", \"mcp\"]}}}",
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&session, "session", sessionFromEnv(), "the session to bind (default $AGENTD_SESSION)")
			fs.StringVar(&id, "id", "", "the channel id (default: one is made)")
		},
		flagComplete: map[string]completeKind{"session": completeSession},
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			if session == "" {
				return nil, usagef("channel mcp: no session to bind: run it inside a session agentd started (it sets AGENTD_SESSION), or give --session")
			}
			return nil, e.execMCP(ctx, "channel", "--session", session, "--id", id)
		},
	}
}

// mcpBinary finds agentctl-mcp: beside this agentctl (so an install or a
// build directory stays consistent), else on $PATH.
func mcpBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		self = "agentctl"
	}
	return mcpBinaryBeside(self)
}

// mcpBinaryBeside finds the agentctl-mcp that the agentctl at path runs.
func mcpBinaryBeside(path string) (string, error) {
	p := filepath.Join(filepath.Dir(path), mcpBinaryName)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p, nil
	}
	if p, err := exec.LookPath(mcpBinaryName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s is not installed beside agentctl (%s) or on $PATH; `make install` installs it with agentctl", mcpBinaryName, filepath.Dir(path))
}

// execMCP runs agentctl-mcp with args in agentctl's place. With the
// process's own stdio it replaces agentctl (exec), so the MCP client talks
// to the server directly and signals reach it; otherwise (agentctl driven
// in-process, as tests do) it runs it as a child and copies.
func (e *env) execMCP(ctx context.Context, args ...string) error {
	path, err := mcpBinary()
	if err != nil {
		return err
	}
	// The sub-command (channel) comes first, then the socket.
	argv := []string{path}
	if len(args) > 0 && args[0] == "channel" {
		argv, args = append(argv, "channel"), args[1:]
	}
	argv = append(append(argv, "--socket", e.socket), args...)
	if e.stdin == os.Stdin && e.stdout == os.Stdout && e.stderr == os.Stderr {
		return fmt.Errorf("exec %s: %w", path, syscall.Exec(path, argv, os.Environ()))
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitStatus(ee.ExitCode())
	}
	if err != nil {
		return err
	}
	return errPrinted
}
