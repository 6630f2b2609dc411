package capture

import (
	"encoding/binary"
	"os/exec"
	"runtime"
	"testing"
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
