package capture

import (
	"encoding/binary"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestSyscallState(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the syscall numbers below are x86-64's")
	}
	for _, c := range []struct {
		line string
		want clientState
	}{
		{"running", clientBusy},
		{"270 0x5 0x55f547edfd60 0x55f547edfce0 0x0 0x0 0x0 0x7ffc92bdc5e0 0x7f839d525954", clientIdle}, // xterm's pselect6
		{"7 0x7ffc92bdc0c0 0x1 0xffffffff 0x0 0x0 0x0 0x7ffc92bdc098 0x7f839d523230", clientBusy},       // xcb waiting for a reply
		{"7 0x7ffc92bdc0c0 0x3 0xffffffff 0x0 0x0 0x0 0x7ffc92bdc098 0x7f839d523230", clientIdle},       // a main loop's poll
		{"7 0x7ffc92bdc0c0 0x1 0x1f4 0x0 0x0 0x0 0x7ffc92bdc098 0x7f839d523230", clientIdle},            // one descriptor and a timer
		{"271 0x7ffc92bdc0c0 0x1 0x0 0x0 0x8 0x0 0x7ffc92bdc098 0x7f839d523230", clientBusy},            // ppoll, no timeout
		{"202 0x7f0 0x80 0x0 0x0 0x0 0x0 0x7ffc 0x7f83", clientBusy},                                    // futex
		{"-1 0x0 0x0", clientUnknown}, // exiting
		{"", clientUnknown},
	} {
		if got := syscallState(c.line); got != c.want {
			t.Errorf("syscallState(%q) = %d, want %d", c.line, got, c.want)
		}
	}
}

func TestReadClientStateOfABusyProcess(t *testing.T) {
	// A shell spinning on a builtin never sleeps, whoever else runs; this
	// test process itself would not do: its main thread may be parked in
	// the runtime's poll while another thread reads /proc.
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	if got := readClientState(busy.Process.Pid); got != clientBusy {
		t.Errorf("state of a spinning process %d, want busy", got)
	}
	if got := readClientState(1 << 30); got != clientUnknown {
		t.Errorf("state of a missing process %d, want unknown", got)
	}
}

func TestClientIdsPID(t *testing.T) {
	reply := func(values ...[]uint32) []byte {
		b := make([]byte, 32)
		binary.LittleEndian.PutUint32(b[8:], uint32(len(values)))
		for _, v := range values { // spec client, spec mask, then the value words
			b = binary.LittleEndian.AppendUint32(b, v[0])
			b = binary.LittleEndian.AppendUint32(b, v[1])
			b = binary.LittleEndian.AppendUint32(b, uint32(4*(len(v)-2)))
			for _, w := range v[2:] {
				b = binary.LittleEndian.AppendUint32(b, w)
			}
		}
		return b
	}
	if got := clientIdsPID(reply([]uint32{0x400000, 1, 0x400000}, []uint32{0x400000, 2, 4242})); got != 4242 {
		t.Errorf("pid %d, want 4242", got)
	}
	if got := clientIdsPID(reply([]uint32{0x400000, 1, 0x400000})); got != 0 {
		t.Errorf("pid %d from a reply without one, want 0", got)
	}
	short := reply([]uint32{0x400000, 2, 4242})
	if got := clientIdsPID(short[:len(short)-2]); got != 0 {
		t.Errorf("pid %d from a truncated reply, want 0", got)
	}
}

// TestNotifierThreadIdleIsIdle: a process whose main thread waits on a
// condition variable while another thread sleeps in select (Tcl/Tk's
// notifier) is idle; with no such thread it is busy.
func TestNotifierThreadIdleIsIdle(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	for _, c := range []struct {
		name     string
		notifier bool
		want     clientState
	}{{"with a notifier", true, clientIdle}, {"without", false, clientBusy}} {
		t.Run(c.name, func(t *testing.T) {
			script := "import threading, select, os, sys\n" +
				"r, w = os.pipe()\n" +
				"if sys.argv[1] == '1':\n" +
				"    threading.Thread(target=lambda: select.select([r], [], []), daemon=True).start()\n" +
				"print('ready', flush=True)\n" +
				"threading.Event().wait()\n"
			arg := "0"
			if c.notifier {
				arg = "1"
			}
			cmd := exec.Command("python3", "-c", script, arg)
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			buf := make([]byte, 6)
			if _, err := out.Read(buf); err != nil {
				t.Fatal(err)
			}
			// The threads settle into their waits right after the print:
			// poll until the main thread waits on its condition (and, with
			// a notifier, until the state is idle) rather than sleeping.
			pid := cmd.Process.Pid
			deadline := time.Now().Add(5 * time.Second)
			settled := func() bool {
				sc, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
				return err == nil && futexWait(string(sc)) && (!c.notifier || readClientState(pid) == clientIdle)
			}
			for !settled() && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := readClientState(pid); got != c.want {
				t.Errorf("state %d, want %d", got, c.want)
			}
		})
	}
}
