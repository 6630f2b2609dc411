package session

import "github.com/agentd/agentd/pkg/eventlog"

// Status is where a session is in its life.
type Status string

// The statuses, in life order.
const (
	// StatusStarting: the worker is starting the program.
	StatusStarting Status = "starting"
	// StatusRunning: the program runs and takes input.
	StatusRunning Status = "running"
	// StatusExiting: the program has been told to stop and has not ended yet.
	StatusExiting Status = "exiting"
	// StatusExited: the program ended (by itself or by Stop).
	StatusExited Status = "exited"
	// StatusFailed: the session ended without the program ending normally,
	// e.g. its worker died (host_death).
	StatusFailed Status = "failed"
	// StatusDestroying: Remove is deleting the session's files.
	StatusDestroying Status = "destroying"
	// StatusDestroyed: the session is gone (only ever reported, never stored
	// for long).
	StatusDestroyed Status = "destroyed"
	// StatusBroken: the session's manifest is missing or damaged, so what
	// it is cannot be told (Info.Reason says why). Never stored: it is how
	// such a directory is reported. Stop ends whatever of it runs; Remove
	// deletes it (with force while a worker of it lives).
	StatusBroken Status = "broken"
	// StatusUnresponsive: the session's worker has not answered a status
	// call within its deadline (it is stopped by SIGSTOP, or starved); its
	// program may run on. Never stored: it is how a live session is
	// reported until its worker answers again (then it is running) or
	// Stop with Force kills it.
	StatusUnresponsive Status = "unresponsive"
)

// Termination says how a session ended.
type Termination = eventlog.Termination

// The termination categories.
const (
	// TermNone: the session has not ended.
	TermNone Termination = ""
	// TermCleanExit: the program exited with status 0.
	TermCleanExit Termination = "clean_exit"
	// TermNonzeroExit: the program exited with a non-zero status.
	TermNonzeroExit Termination = "nonzero_exit"
	// TermSignalExit: the program was killed by a signal.
	TermSignalExit Termination = "signal_exit"
	// TermHostDeath: the session's worker died, taking the program with it.
	TermHostDeath Termination = "host_death"
	// TermSpawnFailure: the program could not be started.
	TermSpawnFailure Termination = "spawn_failure"
)

// Allows is what a status allows. It is data: StatusTable is the one place
// that says it, and every check reads it.
type Allows struct {
	Ask    bool `json:"ask"`    // Ask
	Send   bool `json:"send"`   // Send (text or keys)
	Resize bool `json:"resize"` // Resize
	Wait   bool `json:"wait"`   // Wait
	Attach bool `json:"attach"` // Attach
	Stop   bool `json:"stop"`   // Stop sends a signal (on an ended session it only reports)
	Remove bool `json:"remove"` // Remove without force
	// Terminal is a status the session leaves only to be removed or
	// restarted (restart.go).
	Terminal bool `json:"terminal"`
	// Live is a status with a worker process behind it.
	Live bool `json:"live"`
}

// StatusTable is what each status allows: input (ask, send, resize, wait,
// attach) only when running; rm only when ended.
var StatusTable = map[Status]Allows{
	StatusStarting:   {Stop: true, Live: true},
	StatusRunning:    {Ask: true, Send: true, Resize: true, Wait: true, Attach: true, Stop: true, Live: true},
	StatusExiting:    {Stop: true, Live: true},
	StatusExited:     {Remove: true, Terminal: true},
	StatusFailed:     {Remove: true, Terminal: true},
	StatusDestroying: {Terminal: true},
	StatusDestroyed:  {Terminal: true},
	// Broken is neither live nor terminal: it cannot be told whether a
	// worker runs until one is looked for. Remove handles it by itself
	// (without force when no worker of it lives).
	StatusBroken: {Stop: true},
	// Unresponsive allows only stop (with force, to kill what does not
	// answer): anything else would wait on a worker that does not answer.
	StatusUnresponsive: {Stop: true, Live: true},
}

// Allows returns what s allows; an unknown status allows nothing.
func (s Status) Allows() Allows { return StatusTable[s] }

// Terminal reports whether s is an ended status.
func (s Status) Terminal() bool { return StatusTable[s].Terminal }
