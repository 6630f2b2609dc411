package agentstate

import (
	"os/exec"
	"strings"
	"testing"
)

func TestDetectFindsTheCLIThroughWrappers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		argv []string
		want Agent
	}{
		{[]string{"claude"}, Claude},
		{[]string{"/usr/local/bin/claude", "--resume", "x"}, Claude},
		{[]string{"/w/node_modules/@anthropic-ai/claude-code-linux-x64/claude"}, Claude},
		{[]string{"codex", "--no-daemon"}, Codex},
		{[]string{"/w/node_modules/.bin/codex"}, Codex},
		{[]string{"gemini"}, Gemini},
		{[]string{"node", "/w/node_modules/@google/gemini-cli/bundle/gemini.js"}, Gemini},
		{[]string{"node", "--no-warnings", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}, Claude},
		{[]string{"node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"}, Codex},
		{[]string{"npx", "@google/gemini-cli"}, Gemini},
		{[]string{"npx", "-y", "@openai/codex", "--model", "x"}, Codex},
		{[]string{"pnpm", "dlx", "@anthropic-ai/claude-code"}, Claude},
		{[]string{"npm", "exec", "--", "@openai/codex"}, Codex},
		{[]string{"npm", "install"}, None},
		{[]string{"env", "FOO=1", "ANTHROPIC_BASE_URL=http://x", "claude"}, Claude},
		{[]string{"env", "-u", "CI", "-i", "codex"}, Codex},
		{[]string{"unshare", "-n", "--", "claude"}, Claude},
		{[]string{"unshare", "-r", "-n", "sh"}, None},
		{[]string{"nice", "-n", "10", "timeout", "600", "gemini"}, Gemini},
		{[]string{"sudo", "-u", "bob", "claude"}, Claude},
		{[]string{"bash", "-c", "claude"}, None}, // a shell runs what it likes: say --agent
		{[]string{"python3", "-i"}, None},
		{[]string{"node", "server.js"}, None},
		{[]string{"vim", "claude"}, None},
		{nil, None},
		{[]string{"env"}, None},
	} {
		if got := Detect(tc.argv); got != tc.want {
			t.Errorf("Detect(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

func TestParseAgent(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"claude", "codex", "gemini", "none", " Claude "} {
		if _, err := ParseAgent(s); err != nil {
			t.Errorf("ParseAgent(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "gpt", "claude-code"} {
		_, err := ParseAgent(s)
		if err == nil || !strings.Contains(err.Error(), "claude, codex, gemini or none") {
			t.Errorf("ParseAgent(%q): got %v, want an error naming the choices", s, err)
		}
	}
}

// TestImportsNothingOfAgentd keeps the package a leaf: the daemon, a
// worker or a test can use it alone.
func TestImportsNothingOfAgentd(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/agentd/agentd/") && dep != "github.com/agentd/agentd/pkg/agentstate" {
			t.Errorf("pkg/agentstate depends on %s", dep)
		}
	}
}
