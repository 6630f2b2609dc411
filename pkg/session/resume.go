package session

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Resuming an agent CLI's conversation on restart. Claude Code, Codex and
// Gemini CLI keep each conversation in a store of their own under the
// user's home, and each has a form of its command line that continues one
// by its id (checked against the pinned versions in test/agentcli:
// Claude Code 2.1 `claude --resume ID`, Codex 0.169 `codex resume ID`,
// Gemini CLI 0.61 `gemini --resume ID`). A restart finds the newest
// conversation of the session's working directory in the store of the
// HOME the program runs with, and restarts the CLI on it; with none there
// (or the one the session last resumed gone) the CLI starts fresh and the
// restarted record says so. When the CLI's hooks told the session's own
// conversation (Manifest.ConversationID, hooks.go), that one is resumed,
// and only that one: two sessions of one CLI in one directory each get
// their own back.
//
// The stores, as those versions write them:
//
//	Claude Code  $CLAUDE_CONFIG_DIR (else ~/.claude)/projects/<cwd, every
//	             character but [A-Za-z0-9] as '-'>/<id>.jsonl
//	Codex        $CODEX_HOME (else ~/.codex)/sessions/YYYY/MM/DD/
//	             rollout-<time>-<id>.jsonl, the first line naming the cwd
//	Gemini CLI   ~/.gemini/tmp/<the project's short id, from
//	             ~/.gemini/projects.json>/chats/session-*.json[l], holding
//	             "sessionId"
//
// Decision: the id the hooks reported is checked against the store at
// restart time: the store is the CLI's own word on which conversations
// exist. Without hooks (turned off, or a CLI that never ran one) the
// newest conversation of the directory is taken, and two sessions of one
// CLI in one directory with one HOME then share it.

// The agent CLIs a restart resumes (RestartState.Agent).
const (
	AgentClaude = "claude"
	AgentCodex  = "codex"
	AgentGemini = "gemini"
)

// scriptRunners run a CLI given as a script (node gemini.js).
var scriptRunners = []string{"node", "nodejs", "bun", "deno"}

// agentIndex is the index in argv of the agent CLI's own word (the program,
// or the script a runner runs), and which CLI it is; -1 and "" for other
// programs.
func agentIndex(argv []string) (int, string) {
	if len(argv) == 0 {
		return -1, ""
	}
	i := 0
	if slices.Contains(scriptRunners, filepath.Base(argv[0])) && len(argv) > 1 {
		i = 1
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(argv[i]), ".js"), ".mjs")
	switch base {
	case AgentClaude, AgentCodex, AgentGemini:
		return i, base
	}
	return -1, ""
}

// agentOf is the agent CLI argv runs, "" for another program.
func agentOf(argv []string) string {
	_, a := agentIndex(argv)
	return a
}

// resumeForm is the command a restart runs for the session spawned with
// spawned: an agent CLI's resume form on its newest conversation, with the
// conversation's id; otherwise spawned itself. note is for the restarted
// record ("" when there is nothing to say).
func resumeForm(man *Manifest, spawned, env []string) (argv []string, id, note string) {
	i, agent := agentIndex(spawned)
	if agent == "" {
		return spawned, "", ""
	}
	home := envValue(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var store string
	if man.ConversationID != "" {
		// The CLI's hooks said which conversation this session holds:
		// that one, never another session's newer one in the same store.
		id, store = knownConversation(agent, home, man, env)
		if id == "" {
			return spawned, "", fmt.Sprintf("the %s conversation %s its hooks reported is no longer in %s; started fresh", agent, man.ConversationID, store)
		}
	} else {
		id, store = findConversation(agent, home, man.Cwd, env)
	}
	if id == "" {
		if man.ResumeID != "" {
			return spawned, "", fmt.Sprintf("the %s conversation %s is no longer in %s; started fresh", agent, man.ResumeID, store)
		}
		return spawned, "", fmt.Sprintf("no %s conversation of %s in %s; started fresh", agent, man.Cwd, store)
	}
	head, rest := spawned[:i+1], withoutResume(agent, spawned[i+1:])
	switch agent {
	case AgentCodex:
		argv = append(append(append(slices.Clone(head), "resume"), rest...), id)
	default: // Claude Code, Gemini CLI
		argv = append(append(slices.Clone(head), rest...), "--resume", id)
	}
	return argv, id, fmt.Sprintf("resumed the %s conversation %s", agent, id)
}

// withoutResume drops the resume and continue options agent's spawned
// arguments may already hold (Claude Code's --resume ID, -r ID,
// --continue, -c; Gemini CLI's --resume ID, -r ID; Codex's resume
// subcommand and its id), so the restart's own is the only one.
func withoutResume(agent string, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		takesID := false
		switch {
		case agent == AgentCodex && i == 0 && a == "resume":
			takesID = true
		case agent != AgentCodex && (a == "--resume" || a == "-r"):
			takesID = true
		case agent != AgentCodex && strings.HasPrefix(a, "--resume="):
		case agent == AgentClaude && (a == "--continue" || a == "-c"):
		default:
			out = append(out, a)
			continue
		}
		if takesID && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
		}
	}
	return out
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// findConversation is the id of agent's newest conversation of cwd in
// its store under home, and the store's directory (for messages).
func findConversation(agent, home, cwd string, env []string) (id, store string) {
	switch agent {
	case AgentClaude:
		dir := envValue(env, "CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".claude")
		}
		store = filepath.Join(dir, "projects", claudeSlug(cwd))
		if f := newest(store, func(name string) bool { return strings.HasSuffix(name, ".jsonl") }); f != "" {
			return strings.TrimSuffix(filepath.Base(f), ".jsonl"), store
		}
		return "", store
	case AgentCodex:
		store = codexStore(home, env)
		return codexConversation(store, cwd), store
	case AgentGemini:
		return geminiConversation(filepath.Join(home, ".gemini"), cwd)
	}
	return "", ""
}

var notSlug = regexp.MustCompile(`[^A-Za-z0-9]`)

// claudeSlug is Claude Code's directory name for a project's
// conversations.
func claudeSlug(cwd string) string { return notSlug.ReplaceAllString(cwd, "-") }

// newest is the most recently modified regular file in dir whose name
// keep accepts, "" when none.
func newest(dir string, keep func(string) bool) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var best string
	var bestT time.Time
	for _, e := range ents {
		if !e.Type().IsRegular() || !keep(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(bestT) {
			best, bestT = filepath.Join(dir, e.Name()), fi.ModTime()
		}
	}
	return best
}

var codexRollout = regexp.MustCompile(`^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// codexConversation is the id of the newest Codex rollout under store
// whose first record names cwd.
func codexConversation(store, cwd string) string {
	var best string
	var bestT time.Time
	filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		mm := codexRollout.FindStringSubmatch(d.Name())
		if mm == nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !bestT.IsZero() && !fi.ModTime().After(bestT) {
			return nil
		}
		var meta struct {
			Payload struct {
				Cwd string `json:"cwd"`
			} `json:"payload"`
		}
		if json.Unmarshal([]byte(firstLine(p)), &meta) == nil && meta.Payload.Cwd == cwd {
			best, bestT = mm[1], fi.ModTime()
		}
		return nil
	})
	return best
}

// firstLine is the first line of the file at p, at most 1 MiB of it.
func firstLine(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	s, _ := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadString('\n')
	return s
}

var geminiSessionID = regexp.MustCompile(`"sessionId"\s*:\s*"([^"]+)"`)

// geminiConversation is the id of Gemini CLI's newest conversation of the
// project holding cwd (the deepest one projects.json names), and its
// chats directory.
func geminiConversation(dir, cwd string) (id, store string) {
	store = filepath.Join(dir, "tmp")
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "projects.json")); err == nil {
		json.Unmarshal(b, &reg)
	}
	root, short := "", ""
	for p, s := range reg.Projects {
		if (cwd == p || strings.HasPrefix(cwd, strings.TrimSuffix(p, "/")+"/")) && len(p) > len(root) {
			root, short = p, s
		}
	}
	if short == "" {
		return "", store
	}
	store = filepath.Join(store, short, "chats")
	f := newest(store, func(name string) bool {
		return strings.HasPrefix(name, "session-") && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl"))
	})
	if f == "" {
		return "", store
	}
	b := make([]byte, 64<<10)
	fh, err := os.Open(f)
	if err != nil {
		return "", store
	}
	defer fh.Close()
	n, _ := io.ReadFull(fh, b)
	if mm := geminiSessionID.FindSubmatch(b[:n]); mm != nil {
		return string(mm[1]), store
	}
	return "", store
}

// knownConversation checks that the conversation the session's hooks
// reported (man.ConversationID, man.TranscriptPath) is still in agent's
// store; it returns its id ("" when gone) and the store, for messages.
func knownConversation(agent, home string, man *Manifest, env []string) (id, store string) {
	want := man.ConversationID
	if man.TranscriptPath != "" {
		store = filepath.Dir(man.TranscriptPath)
		if fi, err := os.Stat(man.TranscriptPath); err == nil && fi.Mode().IsRegular() {
			return want, store
		}
		return "", store
	}
	switch agent {
	case AgentClaude:
		_, store = findConversation(agent, home, man.Cwd, env)
		if fi, err := os.Stat(filepath.Join(store, want+".jsonl")); err == nil && fi.Mode().IsRegular() {
			return want, store
		}
	case AgentCodex:
		store = codexStore(home, env)
		if codexRolloutOf(store, want) != "" {
			return want, store
		}
	case AgentGemini:
		// Gemini CLI's hooks always give the transcript; without it, the
		// id is looked for in the project's chats.
		var found string
		if found, store = geminiConversation(filepath.Join(home, ".gemini"), man.Cwd); found == want {
			return want, store
		}
	}
	return "", store
}

// codexStore is Codex's sessions directory.
func codexStore(home string, env []string) string {
	dir := envValue(env, "CODEX_HOME")
	if dir == "" {
		dir = filepath.Join(home, ".codex")
	}
	return filepath.Join(dir, "sessions")
}

// codexRolloutOf is the rollout file of Codex's conversation id under
// store (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl), "" when none.
func codexRolloutOf(store, id string) string {
	if id == "" || strings.ContainsAny(id, "/*?[\\") {
		return ""
	}
	m, _ := filepath.Glob(filepath.Join(store, "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}
