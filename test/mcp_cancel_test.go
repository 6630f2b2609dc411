package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// A cancelled act is cancelled in agentd: the batch stops (its audit record
// says canceled, well before its waits were over), the screen is free for
// the next batch at once, and the cancelled request gets no response. A
// cancelled wait ends in agentd too (its request is logged as canceled).
func TestMCPRawCancelActInDaemon(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 800, Height: 600})
	h := newHome(t)
	d := h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	h.ctl(0, "spawn", "s1", "--", "sh")
	m := h.startRawMCP(t, "mcp", "--yes")
	m.send([]byte(initLine))
	for string(m.next("initialize").ID) != `"init"` {
	}
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

	// Four 5 s waits: 20 s of batch, holding the screen.
	start := time.Now()
	m.send([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"act","arguments":{"actions":[{"kind":"wait","ms":5000},{"kind":"wait","ms":5000},{"kind":"wait","ms":5000},{"kind":"wait","ms":5000}],"observe":false}}}`))
	await(t, 10*time.Second, "the batch holding the screen", func() bool {
		out, _, _ := h.agentctl("", "screen", "--json")
		return strings.Contains(out, `"holder"`)
	})
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"test"}}`))
	await(t, 10*time.Second, "the screen free again", func() bool {
		out, _, _ := h.agentctl("", "screen", "--json")
		return !strings.Contains(out, `"holder"`)
	})
	audit := filepath.Join(h.state, "agentd", "audit.jsonl")
	await(t, 10*time.Second, "a canceled batch in the audit log", func() bool {
		b, _ := os.ReadFile(audit)
		return strings.Contains(string(b), `"outcome":"canceled"`)
	})
	m.send([]byte(`{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"act","arguments":{"actions":[{"kind":"key","key":"a"}],"observe":false}}}`))
	for {
		r := m.next("the next batch")
		if string(r.ID) == `"a"` {
			t.Fatalf("the cancelled act was answered: %s", r.raw)
		}
		if string(r.ID) == `"k"` {
			if strings.Contains(string(r.raw), `"isError":true`) {
				t.Fatalf("the batch after the cancelled one: %s", r.raw)
			}
			break
		}
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the cancelled batch and the next took %v: the 20 s batch was not stopped", took)
	}

	// The wait's second progress notification comes a second after it
	// began: by then its request is in agentd. Its token, a number, comes
	// back exactly as written.
	m.send([]byte(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait","arguments":{"name":"s1","text":"never shown"},"_meta":{"progressToken":1.50}}}`))
	for {
		r := m.next("the wait's second progress notification")
		if r.Method != "notifications/progress" {
			continue
		}
		if !strings.Contains(string(r.Params), `"progressToken":1.50`) {
			t.Fatalf("progress notification %s, want the token 1.50 as sent", r.raw)
		}
		if strings.Contains(string(r.Params), `"progress":2`) {
			break
		}
	}
	m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`))
	await(t, 10*time.Second, "the wait logged as canceled by agentd", func() bool {
		for _, l := range strings.Split(d.stderr.String(), "\n") {
			if strings.Contains(l, `"method":"agent.wait"`) && strings.Contains(l, `"outcome":"canceled"`) {
				return true
			}
		}
		return false
	})
	for _, r := range m.ping("the cancels") {
		if string(r.ID) == `"a"` || string(r.ID) == `"w"` {
			t.Fatalf("a cancelled request was answered: %s", r.raw)
		}
	}
}
