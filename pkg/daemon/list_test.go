package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// TestListAnswerIsEncodingJSONs: agent.list's hand-written encoder writes
// byte for byte what encoding/json writes for the wire.ListResult of the
// same rows, so no client can tell them apart.
func TestListAnswerIsEncodingJSONs(t *testing.T) {
	code := 3
	zero := 0
	at := time.Date(2026, 11, 30, 20, 1, 2, 345678900, time.UTC)
	cases := map[string][]session.ListEntry{
		"no sessions": {},
		"rows": {
			{Name: "w1", Status: session.StatusRunning, PID: 42, Command: []string{"sleep", "3600"}, CreatedAt: at, Age: 1234567 * time.Microsecond, LastActivity: at.Add(time.Second)},
			{Name: "w2", Status: session.StatusExited, Command: []string{"sh", "-c", `echo "a\b" <x> & y`}, CreatedAt: at.In(time.FixedZone("X", 3600)),
				Termination: session.TermNonzeroExit, ExitCode: &code},
			{Name: "w3", Status: session.StatusExited, ExitCode: &zero, Termination: session.TermCleanExit},
			{Name: "w4", Status: session.StatusUnresponsive, PID: 7, Command: []string{"päth\u2028", "tab\there", "\x01", "bad\xffutf8"}, CreatedAt: at,
				Reason: "its worker (pid 7) has not answered for 4s", SilentFor: 4 * time.Second},
			{Name: "w5", Status: session.StatusFailed, Signal: "SIGKILL", Termination: session.TermSignalExit, Command: []string{}, Age: -time.Millisecond},
			{Name: "w6", Status: session.StatusUnresponsive, SilentFor: time.Microsecond},
		},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			res := wire.ListResult{Sessions: []wire.SessionRow{}}
			for i := range rows {
				res.Sessions = append(res.Sessions, sessionRow(&rows[i]))
			}
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			// AppendJSON itself, as the engine calls it: json.Marshal of
			// the answer would compact and escape it again.
			got := listAnswer{rows}.AppendJSON(nil)
			if string(got) != string(want) {
				t.Errorf("listAnswer wrote\n%s\nencoding/json writes\n%s", got, want)
			}
		})
	}
}
