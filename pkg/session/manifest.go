package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

const manifestName = "manifest.json"

// ManifestVersion is the version of the manifest's format.
const ManifestVersion = 1

// Manifest is a session's record on disk, sessions/<name>/manifest.json.
// While a worker lives it owns the file; the Manager writes it only when the
// worker is gone (host_death), when it starts the program again (restart.go)
// or the session is removed.
type Manifest struct {
	Version int      `json:"version"`
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Cwd     string   `json:"cwd"`
	// EnvKeys names the variables given at spawn; values are not stored.
	EnvKeys []string `json:"env_keys,omitempty"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`

	Status      Status      `json:"status"`
	Termination Termination `json:"termination,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"` // the signal that ended the program
	Reason      string      `json:"reason,omitempty"` // why it failed, for people

	CreatedAt time.Time  `json:"created_at"`
	StartedAt time.Time  `json:"started_at,omitzero"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`

	WorkerPID int `json:"worker_pid,omitempty"`
	// WorkerStart is the worker's start time in clock ticks since boot
	// (/proc/<pid>/stat field 22), so a reused pid is not mistaken for it.
	WorkerStart uint64 `json:"worker_start,omitempty"`
	ProgramPID  int    `json:"program_pid,omitempty"`
	Socket      string `json:"socket,omitempty"`

	// Worktree is the session's own git worktree (spawn --worktree): repo,
	// path, branch and the commit it started from.
	Worktree *Worktree `json:"worktree,omitempty"`

	// RestartState is the restart policy, the boot the worker started in
	// and the restarts so far (restart.go).
	RestartState

	// Final counters, written when the session ends.
	Bytes  uint64 `json:"bytes,omitempty"`
	Events uint64 `json:"events,omitempty"`
	Asks   uint64 `json:"asks,omitempty"`
}

// writeManifest replaces dir/manifest.json atomically: temp file, fsync,
// rename, fsync of the directory.
func writeManifest(dir string, m *Manifest) error {
	m.Version = ManifestVersion
	m.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(dir, ".manifest-*.tmp")
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, manifestName)); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write manifest: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write manifest: sync directory: %w", err)
	}
	return nil
}

// errNoManifest is a session directory without a manifest (being created,
// or a leftover).
var errNoManifest = errors.New("no manifest")

func readManifest(dir string) (*Manifest, error) {
	b, err := readNoFollow(filepath.Join(dir, manifestName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNoManifest
		}
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s is damaged: %w", filepath.Join(dir, manifestName), err)
	}
	return &m, nil
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// maxManifest bounds what is read of a manifest: a real one is a few KiB
// (argv and env names are bounded), so a huge file is damaged, not read.
const maxManifest = 4 << 20

// readNoFollow reads a session file without following a link.
func readNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err == nil && len(b) > maxManifest {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxManifest)
	}
	return b, err
}
