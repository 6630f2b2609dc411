package session

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// Limits and defaults, each with its reason.
const (
	// MaxNameLen is the longest session name: it is a file name and part of
	// a socket path, which must fit in sun_path (108 bytes).
	MaxNameLen = 63
	// MaxCols and MaxRows bound a terminal size; beyond them a screen model
	// costs memory for no screen anyone has.
	MaxCols = 1000
	MaxRows = 500
	// DefaultCols and DefaultRows are the size when none is given.
	DefaultCols = 120
	DefaultRows = 40
	// MaxAskText is the longest text an ask or send may deliver: longer
	// pastes are better written to a file and referenced.
	MaxAskText = 64 << 10
	// MaxArgs and MaxEnv bound a spawn request.
	MaxArgs = 4096
	MaxEnv  = 4096
	// DefaultAskTimeout, DefaultWaitTimeout, DefaultAskIdle and
	// DefaultLockTimeout are DefaultTimeouts, what a Manager applies
	// when neither the request nor SetTimeouts says otherwise. agentd's
	// config starts from the same values (a test in cmd/agentd holds them
	// equal).
	//
	// DefaultAskTimeout is an ask's deadline.
	DefaultAskTimeout = 10 * time.Minute
	// DefaultWaitTimeout is a wait's deadline.
	DefaultWaitTimeout = 10 * time.Minute
	// DefaultAskIdle is how long the program must be quiet after it started
	// answering, when an ask gives neither idle nor until and the
	// program's prompt could not be learned.
	DefaultAskIdle = 1500 * time.Millisecond
	// DefaultLockTimeout is how long an ask waits for the ask before it.
	DefaultLockTimeout = 10 * time.Second
	// DefaultStopGrace is how long Stop waits after the first signal before
	// it kills.
	DefaultStopGrace = 5 * time.Second
	// DefaultLogCap is the event log's size cap per session, both parts
	// together.
	DefaultLogCap = 64 << 20
	// MinLogCap keeps rotation from thrashing on a tiny cap.
	MinLogCap = eventlog.MinCap
	// DefaultMaxSessions bounds the live sessions of one Manager: each is a
	// process, a PTY and a few file descriptors.
	DefaultMaxSessions = 256
	// confirmWindow is how long an ask waits for any reaction to its Enter
	// before it sends Enter once more.
	confirmWindow = time.Second
	// settleQuiet is the quiet an ask waits for before it types, so it does
	// not type into a program still printing; settleMax bounds that wait
	// for programs that never stop (spinners, clocks).
	settleQuiet = 150 * time.Millisecond
	settleMax   = 3 * time.Second
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidateName checks a session name: lower-case letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most MaxNameLen characters.
func ValidateName(name string) error {
	if nameRE.MatchString(name) && name != "." && name != ".." {
		return nil
	}
	shown := name
	if len(shown) > 80 {
		shown = shown[:80] + "..."
	}
	var why string
	switch {
	case name == "":
		why = "it is empty"
	case len(name) > MaxNameLen:
		why = fmt.Sprintf("it is %d characters long, over the %d-character limit", len(name), MaxNameLen)
	case strings.Contains(name, "/"):
		why = "it contains '/'"
	case strings.ContainsAny(name, " \t\r\n"):
		why = "it contains white space"
	default:
		why = "it has characters outside a-z, 0-9, '.', '_' and '-', or does not start with a letter or digit"
	}
	return errorf(ErrInvalid, "session name %q is not valid: %s; use 1 to %d characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit (e.g. \"w1\")", shown, why, MaxNameLen)
}

// validateSize checks a terminal size (already defaulted).
func validateSize(cols, rows int) error {
	if cols < 1 || cols > MaxCols || rows < 1 || rows > MaxRows {
		return errorf(ErrInvalid, "terminal size %dx%d is not valid; use 1 to %d columns and 1 to %d rows (default %dx%d)", cols, rows, MaxCols, MaxRows, DefaultCols, DefaultRows)
	}
	return nil
}

// validateText checks text to deliver.
func validateText(what, text string) error {
	if len(text) > MaxAskText {
		return errorf(ErrInvalid, "%s text is %d bytes, over the %d-byte limit; write long input to a file and refer to it", what, len(text), MaxAskText)
	}
	return nil
}

// compileUntil compiles an until expression; empty is no pattern.
func compileUntil(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errorf(ErrInvalid, "until expression %q is not a valid regular expression (%v); use Go RE2 syntax, e.g. \"^>>> $\" or \"(?m)done\"", expr, err)
	}
	return re, nil
}

// checkSpawnSize refuses a spawn whose argv, environment or working
// directory is over its bound (MaxSpawnBytes, MaxCwdBytes), saying by how
// much and what to do instead.
func checkSpawnSize(req SpawnRequest) error {
	size := func(ss []string) int {
		n := 0
		for _, s := range ss {
			n += len(s) + 1
		}
		return n
	}
	if n := size(req.Argv); n > MaxSpawnBytes {
		return errorf(ErrInvalid, "spawn of %q: the command is %d bytes, over the %d-byte (256 KiB) limit; put long input in a file the program reads", req.Name, n, MaxSpawnBytes)
	}
	if n := size(req.Env); n > MaxSpawnBytes {
		return errorf(ErrInvalid, "spawn of %q: the environment given is %d bytes, over the %d-byte (256 KiB) limit; pass long values in a file", req.Name, n, MaxSpawnBytes)
	}
	if len(req.Cwd) > MaxCwdBytes {
		return errorf(ErrInvalid, "spawn of %q: the working directory is %d bytes, over the %d bytes a path may have", req.Name, len(req.Cwd), MaxCwdBytes)
	}
	return nil
}
