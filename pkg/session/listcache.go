package session

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What List reads without calling a worker besides the heartbeat's
// statuses (health.go): the listing of the sessions directory, reused while
// the directory is unchanged, and each live session's manifest, reused while
// one inotify watch says it is unchanged.

// dirTrustAfter is how much later than its directory's last change a
// listing of sessions/ must have been read to be reused. A directory's
// mtime is coarse (a clock tick, several milliseconds on ext4), so a
// listing read in the tick of a change may miss it while the mtime stays
// the same; one read a second after the change cannot.
const dirTrustAfter = time.Second

// dirIndex is the last listing of the sessions directory: the names of its
// session directories, sorted, and the directory's identity and mtime when
// it was read.
type dirIndex struct {
	mu     sync.Mutex
	ino    uint64
	mtime  time.Time
	readAt time.Time
	names  []string // read-only once stored
}

// sessionNames returns the names of the session directories, sorted. It
// reads the directory only when it has changed since the last listing
// (see dirTrustAfter), so List costs one stat rather than a directory read
// and a name check per session. The slice is shared: do not modify it.
func (m *Manager) sessionNames() ([]string, error) {
	fi, err := os.Stat(m.sessions)
	if err != nil {
		return nil, err
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	x := &m.dirs
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.names != nil && x.ino == ino && x.mtime.Equal(fi.ModTime()) && x.readAt.Sub(x.mtime) > dirTrustAfter {
		return x.names, nil
	}
	readAt := time.Now()
	ents, err := os.ReadDir(m.sessions)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && ValidateName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	x.ino, x.mtime, x.readAt, x.names = ino, fi.ModTime(), readAt, names
	return names, nil
}

// manifestState is a live session's manifest as read. A watched session's
// is current while its handle's manifest generation is gen (the
// Manager's inotify watch moves the generation on every change of the
// file); an unwatched one's while the file is the one it was read from
// (ino, size, mtime: manifests are replaced by rename, so a new one is a
// new inode; size and mtime catch one written in place, by hand or
// damaged).
type manifestState struct {
	man   *Manifest
	gen   uint64
	path  string
	ino   uint64
	size  int64
	mtime unix.Timespec
}

// current reports whether ms still says what h's manifest says.
func (ms *manifestState) current(h *handle) bool {
	if h.watched.Load() {
		return ms.gen == h.manGen.Load()
	}
	var st unix.Stat_t
	return unix.Lstat(ms.path, &st) == nil && st.Ino == ms.ino && st.Size == ms.size && st.Mtim == ms.mtime
}

// loadManifest reads h's session's manifest and keeps it in h when it is a
// live session's (a broken or ended one is not kept: List reads those from
// disk). It returns what it kept, or nil.
func (m *Manager) loadManifest(h *handle) *manifestState {
	path := filepath.Join(m.dir(h.name), manifestName)
	// The generation and the file's identity are taken before it is read,
	// so what is kept is never newer than what it is kept under: a change
	// meanwhile makes it stale at once.
	gen := h.manGen.Load()
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return nil
	}
	man, err := m.readState(h.name)
	if err != nil || !man.Status.Allows().Live {
		return nil
	}
	ms := &manifestState{man: man, gen: gen, path: path, ino: st.Ino, size: st.Size, mtime: st.Mtim}
	h.man.Store(ms)
	return ms
}

// manifestWatch tells List which live sessions' manifests changed, with
// one inotify instance for all of them, read without blocking when List
// runs. A stat of each manifest per list was half of what a list of 256
// sessions cost; this is one read. The kernel queues an event before the
// write or rename that caused it returns, so a list that begins after a
// change sees it. Appends to the event log (IN_MODIFY) are not watched.
type manifestWatch struct {
	mu   sync.Mutex
	fd   int // -1: inotify unavailable; every manifest is checked by stat
	byWD map[int32]*handle
	buf  []byte
}

// manifestEvents are the changes that can replace or rewrite a manifest.
const manifestEvents = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

func newManifestWatch() *manifestWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &manifestWatch{fd: fd, byWD: map[int32]*handle{}, buf: make([]byte, 64<<10)}
}

// add watches h's session directory; without a watch h is checked by stat.
func (w *manifestWatch) add(h *handle, dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, manifestEvents|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	if err != nil {
		return
	}
	// A directory watched again (a new handle after a reconnect) has the
	// same descriptor: it is the new handle's now.
	w.byWD[int32(wd)] = h
	h.wd = int32(wd)
	h.watched.Store(true)
}

// remove stops watching h's directory, unless a newer handle took it.
func (w *manifestWatch) remove(h *handle) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 || !h.watched.Load() || w.byWD[h.wd] != h {
		return
	}
	delete(w.byWD, h.wd)
	unix.InotifyRmWatch(w.fd, uint32(h.wd))
}

// drain reads every queued event and moves the manifest generation of
// each session whose manifest changed (of every session, when the queue
// overflowed).
func (w *manifestWatch) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				for _, h := range w.byWD {
					h.manGen.Add(1)
				}
			case ev.Mask&unix.IN_IGNORED != 0:
				if h := w.byWD[ev.Wd]; h != nil {
					// The directory is gone: stat from now on.
					h.watched.Store(false)
					h.manGen.Add(1)
					delete(w.byWD, ev.Wd)
				}
			default:
				if h := w.byWD[ev.Wd]; h != nil && (ev.Len == 0 || string(bytes.TrimRight(name, "\x00")) == manifestName) {
					h.manGen.Add(1)
				}
			}
		}
	}
}

// close ends the inotify instance.
func (w *manifestWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}
