// Package buildinfo says which release and which build of agentd this binary
// is, for the handshake and `agentctl version`.
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/agentd/agentd/internal/buildinfo.Version=v1.2.3".
var Version = "0.1.0-dev"

// Fingerprint hashes the file at path (an executable): two binaries with the
// same fingerprint are the same build. It reads the whole file, so callers
// compute it once.
func Fingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// SelfFingerprint fingerprints the running executable.
func SelfFingerprint() (string, error) {
	// /proc/self/exe still opens the running binary after an upgrade has
	// replaced the file on disk, so the answer is the build that runs.
	return Fingerprint("/proc/self/exe")
}
