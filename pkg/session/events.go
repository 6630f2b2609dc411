package session

import (
	"errors"
	"fmt"

	"github.com/agentd/agentd/pkg/eventlog"
)

// The event log is pkg/eventlog's; these names keep the session's API
// whole for its callers.

// Event is one record of a session's event log.
type Event = eventlog.Event

// EventType is the kind of an Event.
type EventType = eventlog.Type

// The event types.
const (
	EventOutput = eventlog.Output
	EventInput  = eventlog.Input
	EventAsk    = eventlog.Ask
	EventAnswer = eventlog.Answer
	EventResize = eventlog.Resize
	EventSignal = eventlog.Signal
	EventExit   = eventlog.Exit
	EventMarker = eventlog.Marker
	EventGap    = eventlog.Gap
	EventState  = eventlog.State
)

// DecodeEvent decodes one line of the event log (without its newline).
func DecodeEvent(line []byte) (Event, error) { return eventlog.Decode(line) }

// logError turns an event log's refusal to follow a link into
// ErrInvalidStatus for session name, naming the file and the fix: it is the
// state of the session's files (someone replaced the log), which only a
// person can settle.
func logError(name string, err error) error {
	var le *eventlog.LinkError
	if errors.As(err, &le) {
		return &Error{Kind: ErrInvalidStatus, Msg: fmt.Sprintf("the event log of session %q, %s, is a symbolic link (to %s), which agentd never reads through (another program may have planted it); remove the link (rm %s): the log written after it is lost, the session goes on",
			name, le.Path, le.Target, le.Path)}
	}
	return err
}
