package eventlog

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// LinkError is the error for a part of the log that is a symbolic link:
// the log is never read or written through one (another program may have
// planted it), and only a person can settle it.
type LinkError struct {
	Path   string // the link
	Target string // where it points
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("the event log %s is a symbolic link (to %s), which agentd never follows", e.Path, e.Target)
}

// openNoFollow opens a part of the log without following a link (a
// *LinkError when path is one), creating it 0600 with O_CREATE.
func openNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		to, _ := os.Readlink(path)
		return nil, &LinkError{Path: path, Target: to}
	}
	return f, err
}
