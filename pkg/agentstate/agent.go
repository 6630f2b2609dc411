package agentstate

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Agent names the agent CLI a session runs, or None.
type Agent string

// The agents recognised. None is every other program: its state is the
// kernel's busy or ready.
const (
	None   Agent = "none"
	Claude Agent = "claude"
	Codex  Agent = "codex"
	Gemini Agent = "gemini"
)

// Agents lists the agent CLIs, for messages and completion.
var Agents = []Agent{Claude, Codex, Gemini}

// ParseAgent reads spawn --agent's value: claude, codex, gemini or none.
func ParseAgent(s string) (Agent, error) {
	switch a := Agent(strings.ToLower(strings.TrimSpace(s))); a {
	case None, Claude, Codex, Gemini:
		return a, nil
	}
	return "", fmt.Errorf("unknown agent %q: use claude, codex, gemini or none", s)
}

// Detect says which agent CLI argv runs, by the base name of the program
// that is finally run: through env (its assignments and options), npx or
// pnpm dlx, node or bun running a script (node .../cli.js is looked up by
// the script's path: its package's directory names the CLI), and wrappers
// that run their arguments (unshare, nice, timeout, sudo, systemd-run...).
// It returns None when no agent is recognised: a wrong guess would show
// an agent's state for a program that has none, so unknown stays None and
// spawn --agent says otherwise.
func Detect(argv []string) Agent {
	for len(argv) > 0 {
		prog := filepath.Base(argv[0])
		if a, ok := agentNames[strings.TrimSuffix(prog, ".js")]; ok {
			return a
		}
		skip, known := wrappers[prog]
		if !known {
			if interpreters[prog] {
				return scriptAgent(argv[1:])
			}
			return None
		}
		argv = argv[1:]
		argv = skipOptions(argv, skip)
	}
	return None
}

// agentNames are the program names each CLI installs (npm bin names and
// package names, as npx is given them).
var agentNames = map[string]Agent{
	"claude": Claude, "claude-code": Claude, "@anthropic-ai/claude-code": Claude,
	"codex": Codex, "@openai/codex": Codex,
	"gemini": Gemini, "gemini-cli": Gemini, "@google/gemini-cli": Gemini,
}

// wrappers run their non-option arguments as a command. The value lists
// the options that take a separate argument, which must be skipped too.
var wrappers = map[string]map[string]bool{
	"env":         {"-u": true, "--unset": true, "-C": true, "--chdir": true, "-S": true, "--split-string": true},
	"npx":         {"-p": true, "--package": true, "-c": true, "--call": true},
	"pnpx":        {},
	"pnpm":        {},                                                          // pnpm dlx X, pnpm exec X
	"yarn":        {},                                                          // yarn dlx X
	"npm":         {"-p": true, "--package": true, "-c": true, "--call": true}, // npm exec X
	"bunx":        {},
	"dlx":         {},
	"unshare":     {"--setgroups": true, "-S": true, "--setuid": true, "-G": true, "--setgid": true, "--root": true, "-R": true, "--wd": true, "-w": true},
	"nice":        {"-n": true, "--adjustment": true},
	"ionice":      {"-c": true, "-n": true, "--class": true, "--classdata": true},
	"nohup":       {},
	"setsid":      {},
	"stdbuf":      {"-i": true, "-o": true, "-e": true},
	"timeout":     {"-s": true, "--signal": true, "-k": true, "--kill-after": true},
	"sudo":        {"-u": true, "--user": true, "-g": true, "--group": true, "-C": true, "-D": true, "--chdir": true},
	"doas":        {"-u": true},
	"chrt":        {},
	"taskset":     {},
	"firejail":    {},
	"systemd-run": {"-p": true, "--property": true, "-u": true, "--unit": true, "--slice": true, "-E": true, "--setenv": true, "--uid": true, "--gid": true, "-M": true, "--machine": true},
	"script":      {},
	"exec":        {},
	"command":     {},
}

// interpreters run a script file named by their first non-option argument.
var interpreters = map[string]bool{"node": true, "nodejs": true, "bun": true, "deno": true, "tsx": true}

// skipOptions drops leading options (and their separate arguments), env's
// NAME=value assignments, a "--" that ends them, and a number given as
// timeout's duration, taskset's mask or chrt's priority.
func skipOptions(argv []string, withArg map[string]bool) []string {
	for len(argv) > 0 {
		a := argv[0]
		switch {
		case a == "--":
			return argv[1:]
		case strings.HasPrefix(a, "-") && len(a) > 1:
			argv = argv[1:]
			if withArg[a] && len(argv) > 0 {
				argv = argv[1:]
			}
		case envAssign.MatchString(a):
			argv = argv[1:] // env NAME=value
		case a == "dlx" || a == "exec" || isNumber(a):
			argv = argv[1:] // pnpm dlx, npm exec, timeout 10, taskset 0x3
		default:
			return argv
		}
	}
	return nil
}

// envAssign is env's NAME=value.
var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "0x")
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF.smhd", c) {
			return false
		}
	}
	return s != ""
}

// scriptAgent recognises the script an interpreter runs: the CLI's own
// bin name (…/bin/claude), or its package directory anywhere in the path
// (…/@google/gemini-cli/bundle/gemini.js, …/@openai/codex/bin/codex.js).
func scriptAgent(args []string) Agent {
	args = skipOptions(args, map[string]bool{"-r": true, "--require": true, "--import": true, "--loader": true})
	if len(args) == 0 {
		return None
	}
	script := filepath.ToSlash(args[0])
	for _, pkg := range []struct {
		dir string
		a   Agent
	}{{"@anthropic-ai/claude-code", Claude}, {"@openai/codex", Codex}, {"@google/gemini-cli", Gemini}} {
		if strings.Contains(script, pkg.dir+"/") || strings.HasSuffix(script, pkg.dir) {
			return pkg.a
		}
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(script), ".js"), ".mjs")
	if a, ok := agentNames[base]; ok {
		return a
	}
	return None
}
