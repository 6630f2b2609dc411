package wire

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSocketDirRefusesWhatAgentdWouldNotMake: a socket whose
// directory is a link or open to others is refused naming what was found
// and the fix; the user's own 0700 directory passes, and so does a missing
// directory or socket (the dial then says nothing listens, with its hint).
func TestCheckSocketDirRefusesWhatAgentdWouldNotMake(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	listen := func(dir string) string {
		sock := filepath.Join(dir, "agentd.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return sock
	}
	own := filepath.Join(base, "own")
	os.Mkdir(own, 0o700)
	ownSock := listen(own)
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	openSock := listen(open)
	os.Chmod(open, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(own, link)
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		name, path string
		want       []string // nil: no refusal
	}{
		{"own 0700", ownSock, nil},
		{"open to others", openSock, []string{"open to others (mode 0755, want 0700)", "chmod 700 " + open}},
		{"a link", filepath.Join(link, "agentd.sock"), []string{"is a symbolic link (to " + own + ")", "remove the link"}},
		{"no directory", filepath.Join(base, "none", "agentd.sock"), nil},
		{"no socket", filepath.Join(empty, "agentd.sock"), nil},
	} {
		err := CheckSocketDir(tc.path)
		var ut *UntrustedSocketError
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: got %v, want no refusal", tc.name, err)
			}
			continue
		}
		if !errors.As(err, &ut) || ut.Socket != tc.path {
			t.Errorf("%s: got %v, want an *UntrustedSocketError for %s", tc.name, err, tc.path)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}
