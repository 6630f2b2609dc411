package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
			{Name: "w3", Status: session.StatusExited, ExitCode: &zero, Termination: session.TermCleanExit, Restarts: 2},
			{Name: "w4", Status: session.StatusUnresponsive, PID: 7, Command: []string{"päth\u2028", "tab\there", "\x01", "bad\xffutf8"}, CreatedAt: at,
				Reason: "its worker (pid 7) has not answered for 4s", SilentFor: 4 * time.Second},
			{Name: "w5", Status: session.StatusFailed, Signal: "SIGKILL", Termination: session.TermSignalExit, Command: []string{}, Age: -time.Millisecond},
			{Name: "w6", Status: session.StatusUnresponsive, SilentFor: time.Microsecond},
			{Name: "w7", Status: session.StatusRunning, Command: []string{"sh", strings.Repeat("é", 5000), "more"}, CreatedAt: at},
			{Name: "w8", Status: session.StatusRunning, Lease: &session.Lease{ID: "secret", Holder: "the person in the view page (page 1) \"é\"", Since: at}},
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

// TestListRowsCutLongCommands: a list row carries at most
// wire.ListCommandBytes of a session's command, cut at a character
// boundary, and says it was cut; a short command is untouched.
func TestListRowsCutLongCommands(t *testing.T) {
	long := []string{"sh", "-c", strings.Repeat("é", 100_000)}
	for range 13 {
		long = append(long, strings.Repeat("x", 100_000))
	}
	r := sessionRow(&session.ListEntry{Name: "w", Command: long})
	n := 0
	for _, a := range r.Command {
		n += len(a)
		if !utf8.ValidString(a) {
			t.Errorf("cut argument %.20q... is not valid UTF-8", a)
		}
	}
	if !r.CommandCut || n > wire.ListCommandBytes || n < wire.ListCommandBytes-4 || len(r.Command) != 3 || r.Command[1] != "-c" {
		t.Errorf("a 1.4 MB command: cut %v, %d bytes in %d arguments; want cut to %d bytes, its first two arguments whole", r.CommandCut, n, len(r.Command), wire.ListCommandBytes)
	}
	short := sessionRow(&session.ListEntry{Name: "w", Command: []string{"sleep", "60"}})
	if short.CommandCut || len(short.Command) != 2 {
		t.Errorf("a short command: %q, cut %v", short.Command, short.CommandCut)
	}
}
