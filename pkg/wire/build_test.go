package wire

import (
	"os"
	"os/exec"
	"testing"
)

// TestBuildsOn32Bit builds the package for 32-bit Linux targets: pkg/wire is
// imported by every program that talks to agentd, including ones on 32-bit
// ARM desktops, where int is 32 bits and a constant like 1<<32-1 used as an
// int does not compile.
func TestBuildsOn32Bit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	t.Parallel()
	for _, arch := range []string{"386", "arm"} {
		t.Run(arch, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(gobin, "build", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=linux GOARCH=%s go build ./pkg/wire: %v\n%s", arch, err, out)
			}
		})
	}
}
