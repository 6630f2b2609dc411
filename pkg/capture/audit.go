package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// AuditRecord is one line of the audit log: one batch.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	Caller Caller    `json:"caller"`
	// Desktop names the agent's desktop the batch ran on; absent for the
	// person's display.
	Desktop  string        `json:"desktop,omitempty"`
	Actions  []AuditAction `json:"actions"`
	Ran      int           `json:"actions_run"`
	Outcome  string        `json:"outcome"` // ok, refused, invalid, lock_timeout, unavailable, timeout, canceled, error
	Message  string        `json:"message,omitempty"`
	Duration float64       `json:"duration_ms"`
	// Observation names the image kept of the screen after the batch, in
	// screen/ beside the log, when the screen is recorded.
	Observation string `json:"observation,omitempty"`
}

// AuditAction records one action without its text: typing is recorded as the
// number of characters only.
type AuditAction struct {
	Kind      string   `json:"kind"`
	X         *int     `json:"x,omitempty"`
	Y         *int     `json:"y,omitempty"`
	Button    string   `json:"button,omitempty"`
	Key       string   `json:"key,omitempty"`
	Modifiers []string `json:"modifiers,omitempty"`
	Chars     int      `json:"chars,omitempty"`
	// Bytes is the length of clipboard text read or set (never the text).
	Bytes       int    `json:"bytes,omitempty"`
	Direction   string `json:"direction,omitempty"`
	Amount      int    `json:"amount,omitempty"`
	MS          int    `json:"ms,omitempty"`
	Application string `json:"application,omitempty"`
}

// auditLog is an append-only JSONL file, 0600, rotated to path+".1" when a
// record would take it over max bytes.
type auditLog struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

func openAudit(path string, max int64) (*auditLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	a := &auditLog{path: path, max: max}
	if err := a.open(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *auditLog) open() error {
	// O_NOFOLLOW: a link planted in place of the log must not redirect the
	// record of what agents did.
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	a.f, a.size = f, st.Size()
	return nil
}

// write appends one record, rotating first when it would pass the cap.
func (a *auditLog) write(rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return fmt.Errorf("audit log is closed")
	}
	if a.size > 0 && a.size+int64(len(line)) > a.max {
		a.f.Close()
		a.f = nil
		if err := os.Rename(a.path, a.path+".1"); err != nil {
			return fmt.Errorf("audit log rotation: %w", err)
		}
		if err := a.open(); err != nil {
			return err
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

func (a *auditLog) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
