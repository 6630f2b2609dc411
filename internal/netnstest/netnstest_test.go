package netnstest

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testhome"
)

func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }

func TestNamespaceHasOnlyLoopbackUp(t *testing.T) {
	t.Parallel()
	n := New(t)
	var ifs []net.Interface
	if err := n.Do(func() (err error) { ifs, err = net.Interfaces(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
		t.Fatalf("interfaces in the namespace: got %+v, want lo alone, up", ifs)
	}
}

func TestListenerInsideIsReachedFromInsideOnly(t *testing.T) {
	t.Parallel()
	n := New(t)
	l, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("inside\n"))
			c.Close()
		}
	}()
	var got []byte
	if err := n.Do(func() error {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		got = make([]byte, 7)
		_, err = c.Read(got)
		return err
	}); err != nil || string(got) != "inside\n" {
		t.Fatalf("dial from inside: got %q, %v; want the listener's greeting", got, err)
	}

	// The other way: a listener of the host's loopback is not there
	// inside, though its port is taken outside (so nothing else can hold
	// it inside either).
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	err = n.Do(func() error {
		c, err := net.Dial("tcp", host.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		t.Fatalf("dial of the host's %s from inside the namespace succeeded, want refused", host.Addr())
	}
}

func TestProcessStartedInsideInheritsTheNamespace(t *testing.T) {
	t.Parallel()
	n := New(t)
	cmd := exec.Command("cat", "/proc/self/net/dev")
	var out strings.Builder
	cmd.Stdout = &out
	if err := n.Run(cmd); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(out.String(), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	if len(names) != 1 || names[0] != "lo" {
		t.Fatalf("interfaces a child sees: got %q, want [lo]\n%s", names, out.String())
	}
	// The child's namespace is the thread's, and a child started
	// elsewhere is in the host's.
	var inside string
	if err := n.Do(func() (err error) { inside, err = os.Readlink("/proc/thread-self/ns/net"); return err }); err != nil {
		t.Fatal(err)
	}
	childIn, err := exec.Command("readlink", "/proc/self/ns/net").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("readlink", "/proc/self/ns/net")
	var childNS strings.Builder
	cmd.Stdout = &childNS
	if err := n.Run(cmd); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(childNS.String()); got != inside || got == strings.TrimSpace(string(childIn)) {
		t.Fatalf("namespaces: child started inside %s, the thread %s, a child started outside %s; want the first two equal and the third different",
			got, inside, childIn)
	}
}

func TestDoAfterCloseFails(t *testing.T) {
	t.Parallel()
	n := New(t)
	n.Close()
	if err := n.Do(func() error { return nil }); err != ErrClosed {
		t.Fatalf("Do after Close: got %v, want ErrClosed", err)
	}
}
