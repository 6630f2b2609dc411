// Package buildinfo says which release and which build of agentd this binary
// is, for the handshake and `agentctl version`.
package buildinfo

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/agentd/agentd/internal/buildinfo.Version=v1.2.3".
var Version = "0.1.0-dev"

// Fingerprint identifies the build of the executable at path: two binaries
// with the same fingerprint are the same build. For a Go binary it hashes
// the Go build ID in its ELF notes (which changes with any change to the
// binary's content), so it reads a few hundred bytes and costs well under a
// millisecond — agentctl version calls it on every run. Other files are
// hashed whole.
func Fingerprint(path string) (string, error) {
	if id, err := goBuildID(path); err == nil {
		sum := sha256.Sum256(id)
		return hex.EncodeToString(sum[:12]), nil
	}
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

// goBuildID reads the Go build ID note (name "Go", type 4) of an ELF file.
func goBuildID(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return nil, errors.New("no Go build ID note")
	}
	note, err := sec.Data()
	if err != nil {
		return nil, err
	}
	// namesz, descsz, type, then the name padded to 4 bytes, then the ID.
	if len(note) < 16 {
		return nil, errors.New("short build ID note")
	}
	namesz := binary.LittleEndian.Uint32(note[0:])
	descsz := binary.LittleEndian.Uint32(note[4:])
	start := 12 + (int(namesz)+3)&^3
	if namesz != 4 || !bytes.Equal(note[12:15], []byte("Go\x00")) || start+int(descsz) > len(note) {
		return nil, errors.New("malformed build ID note")
	}
	return note[start : start+int(descsz)], nil
}
