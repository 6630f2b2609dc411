package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestListAnswerIsEncodingJSONs: agent.list's hand-written encoder writes
// byte for byte what encoding/json writes for the same wire.ListResult, so
// no client can tell them apart.
func TestListAnswerIsEncodingJSONs(t *testing.T) {
	code := 3
	zero := 0
	at := time.Date(2026, 11, 30, 20, 1, 2, 345678900, time.UTC)
	cases := map[string]*wire.ListResult{
		"no sessions":  {Sessions: []wire.SessionRow{}},
		"nil sessions": {},
		"rows": {Sessions: []wire.SessionRow{
			{Name: "w1", Status: wire.StatusRunning, PID: 42, Command: []string{"sleep", "3600"}, CreatedAt: at, AgeMS: 1234, LastActivity: at.Add(time.Second)},
			{Name: "w2", Status: wire.StatusExited, Command: []string{"sh", "-c", `echo "a\b" <x> & y`}, CreatedAt: at.In(time.FixedZone("X", 3600)),
				Termination: wire.TermNonzeroExit, ExitCode: &code},
			{Name: "w3", Status: wire.StatusExited, ExitCode: &zero, Termination: wire.TermCleanExit},
			{Name: "w4", Status: wire.StatusUnresponsive, PID: 7, Command: []string{"päth\u2028", "tab\there", "\x01", "bad\xffutf8"}, CreatedAt: at,
				Reason: "its worker (pid 7) has not answered for 4s", SilentMS: 4000},
			{Name: "w5", Status: wire.StatusFailed, Signal: "SIGKILL", Termination: wire.TermSignalExit, Command: []string{}, AgeMS: -1},
		}},
	}
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			// AppendJSON itself, as the engine calls it: json.Marshal of
			// the answer would compact and escape it again.
			got := listAnswer{res}.AppendJSON(nil)
			if string(got) != string(want) {
				t.Errorf("listAnswer wrote\n%s\nencoding/json writes\n%s", got, want)
			}
		})
	}
}
