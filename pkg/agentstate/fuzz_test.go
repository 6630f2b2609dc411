package agentstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzClassify: no screen makes a classifier panic, and what it reports
// is one of the agent states.
func FuzzClassify(f *testing.F) {
	files, _ := filepath.Glob("testdata/screens/*.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			if _, body, ok := strings.Cut(string(b), "\n"); ok {
				f.Add(body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		scr := Screen{Lines: strings.Split(text, "\n")}
		for _, a := range Agents {
			st, d := Classify(a, scr)
			switch st {
			case Unknown, Working, Waiting:
				if d.Kind != "" {
					t.Errorf("%s: %s with a detail %+v", a, st, d)
				}
			case NeedsApproval, NeedsAttention:
				if d.PromptID == "" {
					t.Errorf("%s: %s without a prompt id", a, st)
				}
			default:
				t.Errorf("%s: state %q", a, st)
			}
		}
	})
}

// FuzzFromHook: no payload makes FromHook panic.
func FuzzFromHook(f *testing.F) {
	files, _ := filepath.Glob("testdata/hooks/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			parts := strings.SplitN(strings.TrimSuffix(filepath.Base(p), ".json"), "-", 4)
			f.Add(parts[0], parts[3], b)
		}
	}
	f.Fuzz(func(t *testing.T, agent, event string, payload []byte) {
		e, err := FromHook(Agent(agent), event, payload)
		if err == nil && e.Agent != Agent(agent) {
			t.Errorf("event of %s for agent %s", e.Agent, agent)
		}
	})
}
