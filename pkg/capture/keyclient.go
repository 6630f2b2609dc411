package capture

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/xgb/res"
	"github.com/BurntSushi/xgb/xproto"
)

// Why typing waits for the client that receives the keys
//
// Characters the layout lacks are typed through spare keycodes bound to
// them for the moment (inputRun.bind). A client does not translate a key
// event when the server sends it but when it handles it, with its own copy
// of the keymap, and it refreshes that copy from the server's current
// mapping whenever it has *read* a MappingNotify, which Xlib does in bulk,
// ahead of the key events it still has to handle. So if a keycode is bound
// to another character (or restored to nothing) while the client still has
// key events for it unhandled, those events come out as the new character
// or as nothing. Under CPU load a terminal easily falls a few hundred
// milliseconds behind, which a fixed pause cannot cover.
//
// The rule is therefore: a keycode used by a key event already sent is not
// changed until the client has handled every event sent so far. Binding
// unused keycodes is always safe (events sent before did not use them).
// The client has handled everything when, after a round trip that makes
// the server flush our events to it, its main thread sleeps in its event
// loop's wait (poll, select, epoll) twice in a row: the server's write woke
// it, and a toolkit only goes back to sleep there when its event queue and
// socket are empty. A poll on one descriptor without a timeout is xcb
// waiting for a reply in the middle of handling an event (a terminal
// loading the font of a new glyph), so it counts as busy. The client is
// the owner of the focus window, found through the X-Resource extension;
// its state is read from /proc/PID/stat and /proc/PID/syscall. When the
// client cannot be found or read (a remote client, no X-Resource, another
// pid namespace, Yama refusing ptrace access), the old timed settle is the
// fallback, with the risk it always had.

// Limits of the wait for a client.
const (
	// clientPoll is how often the client's state is sampled.
	clientPoll = time.Millisecond
	// maxClientWait bounds the wait for a client that never sleeps in
	// poll (busy, or handling X on another thread); after it, the typing
	// goes on as if it had caught up.
	maxClientWait = 5 * time.Second
)

// eventWaits are the syscalls an event loop sleeps in on this machine's
// architecture (none elsewhere, which makes every client unknown), and
// replyWaits those of them that xcb also uses to wait for a reply: one file
// descriptor, no timeout. A client waiting for a reply is in the middle of
// handling an event (loading a font for a new glyph, say), not idle.
var eventWaits, replyWaits = map[string][]int{
	"amd64": {7, 23, 232, 270, 271, 281, 441}, // poll select epoll_wait pselect6 ppoll epoll_pwait epoll_pwait2
	"arm64": {22, 72, 73, 441},                // epoll_pwait pselect6 ppoll epoll_pwait2
}[runtime.GOARCH], map[string][]int{
	"amd64": {7, 271}, // poll ppoll
	"arm64": {73},     // ppoll
}[runtime.GOARCH]

// keyClientPID is the process of the client that gets our key events: the
// owner of the focus window, or of the top-level window under the pointer
// when the focus follows the pointer. 0 when it cannot be told.
func (x *xconn) keyClientPID() int {
	if !x.resOK {
		return 0
	}
	f, err := xproto.GetInputFocus(x.c).Reply()
	if err != nil {
		return 0
	}
	w := f.Focus
	if w == xproto.InputFocusNone || w == xproto.InputFocusPointerRoot || w == x.root {
		p, err := xproto.QueryPointer(x.c, x.root).Reply()
		if err != nil || p.Child == 0 {
			return 0
		}
		w = p.Child
	}
	// xgb's reply decoder reads the value's length as words where the
	// protocol counts bytes (and panics), so the reply is decoded here.
	spec := []res.ClientIdSpec{{Client: uint32(w), Mask: res.ClientIdMaskLocalClientPID}}
	b, err := res.QueryClientIds(x.c, 1, spec).Cookie.Reply()
	if err != nil || len(b) < 32 {
		return 0
	}
	return clientIdsPID(b)
}

// clientIdsPID finds the process ID in an X-Resource QueryClientIds reply:
// a 32-byte header with the count at byte 8, then per value its spec
// (client, mask), its length in bytes and the value.
func clientIdsPID(b []byte) int {
	n := int(binary.LittleEndian.Uint32(b[8:]))
	b = b[32:]
	for range n {
		if len(b) < 12 {
			return 0
		}
		mask, size := binary.LittleEndian.Uint32(b[4:]), int(binary.LittleEndian.Uint32(b[8:]))
		b = b[12:]
		if size > len(b) {
			return 0
		}
		if mask&res.ClientIdMaskLocalClientPID != 0 && size == 4 {
			return int(binary.LittleEndian.Uint32(b))
		}
		b = b[(size+3)&^3:]
	}
	return 0
}

// clientState is what /proc says about a client's main thread.
type clientState int

const (
	clientUnknown clientState = iota // cannot be read
	clientBusy                       // running, or sleeping in something other than poll
	clientIdle                       // sleeping in poll or select
)

// readClientState samples pid's main thread.
func readClientState(pid int) clientState {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	stat, err := os.ReadFile(dir + "stat")
	if err != nil {
		return clientUnknown
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 || end+2 >= len(stat) {
		return clientUnknown
	}
	if stat[end+2] != 'S' {
		return clientBusy
	}
	// /proc/PID/syscall needs ptrace rights, which Yama may refuse for a
	// process that is not our child; then the client is unknown.
	sc, err := os.ReadFile(dir + "syscall")
	if err != nil {
		return clientUnknown
	}
	st := syscallState(string(sc))
	if st == clientBusy && futexWait(string(sc)) && notifierWaits(dir) {
		return clientIdle
	}
	return st
}

// futexWaits are the futex syscalls, where a thread waits on a condition.
var futexWaits = map[string][]int{"amd64": {202}, "arm64": {98}}[runtime.GOARCH]

func futexWait(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		return false
	}
	n, err := strconv.Atoi(f[0])
	return err == nil && slices.Contains(futexWaits, n)
}

// notifierWaits reports whether another thread of the process sleeps in an
// event loop's wait. Tcl/Tk (and other toolkits with a notifier thread)
// wait for X on a thread of their own while the main thread, idle, waits
// on a condition variable: main thread in futex and a notifier in select
// is that toolkit's idle, where otherwise every batch typed into Tk would
// wait maxClientWait for a poll on the main thread that never comes.
func notifierWaits(dir string) bool {
	ents, err := os.ReadDir(dir + "task")
	if err != nil || len(ents) < 2 {
		return false
	}
	main := strings.TrimSuffix(strings.TrimPrefix(dir, "/proc/"), "/")
	for _, e := range ents {
		if e.Name() == main {
			continue
		}
		sc, err := os.ReadFile(dir + "task/" + e.Name() + "/syscall")
		if err == nil && syscallState(string(sc)) == clientIdle {
			return true
		}
	}
	return false
}

// syscallState reads a /proc/PID/syscall line: the syscall number and its
// arguments in hex, or "running".
func syscallState(line string) clientState {
	f := strings.Fields(line)
	switch {
	case len(f) > 0 && f[0] == "running":
		return clientBusy
	case len(f) < 4 || len(eventWaits) == 0:
		return clientUnknown
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return clientUnknown
	}
	if !slices.Contains(eventWaits, n) {
		return clientBusy
	}
	// poll(fds, nfds, timeout) and ppoll(fds, nfds, tsp, mask): one
	// descriptor and no timeout is a reply wait.
	if slices.Contains(replyWaits, n) {
		nfds, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
		timeout := f[3]
		if nfds == 1 && (timeout == "0xffffffff" || timeout == "0xffffffffffffffff" || timeout == "0x0" && n != 7) {
			return clientBusy
		}
	}
	return clientIdle
}
