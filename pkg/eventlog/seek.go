package eventlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A log is read from a point (a seq, a time, the last N events) many times
// over: `agentctl logs` pages through it and each page starts anew. So the
// start is found by bisecting the file's bytes on the records' leading
// fields, which every writer puts first ({"seq":N,"ts":"…", see
// appendOutputRecord and eventJSON), instead of decoding everything before
// it: a page of a 100 MB log costs a few dozen small reads, not 100 MB.

// recordKey is the seq and time at the head of one record line. ok is false
// when the line does not start the usual way (a hand-edited log); such
// lines are judged by decoding them whole.
func recordKey(line []byte) (seq uint64, ts time.Time, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !found {
		return recordKeyDecoded(line)
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil {
		return recordKeyDecoded(line)
	}
	rest, found = bytes.CutPrefix(rest[i:], []byte(`,"ts":"`))
	if !found {
		return recordKeyDecoded(line)
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return recordKeyDecoded(line)
	}
	ts, err = time.Parse(time.RFC3339Nano, string(rest[:end]))
	if err != nil {
		return recordKeyDecoded(line)
	}
	return seq, ts, true
}

func recordKeyDecoded(line []byte) (uint64, time.Time, bool) {
	ev, err := Decode(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		return 0, time.Time{}, false
	}
	return ev.Seq, ev.TS, true
}

// seekRecords returns the offset in f (of size bytes) of a line start at or
// before the first record for which after holds, close enough that reading
// on from there is cheap. after must be false and then true along the
// file (records are in seq order and, near enough, in time order).
func seekRecords(f *os.File, size int64, after func(seq uint64, ts time.Time) bool) (int64, error) {
	const closeEnough = 64 << 10
	lo, hi := int64(0), size // the answer is in [lo, hi]; lo is a line start
	buf := make([]byte, 4096)
	for hi-lo > closeEnough {
		mid := lo + (hi-lo)/2
		off, line, err := lineAfter(f, mid, hi, buf)
		if err != nil {
			return 0, err
		}
		if off < 0 {
			hi = mid // no line starts in [mid, hi): the answer is before mid
			continue
		}
		seq, ts, ok := recordKey(line)
		if !ok {
			break // an odd line: read on from lo
		}
		if after(seq, ts) {
			hi = off
		} else {
			lo = off
		}
	}
	return lo, nil
}

// lineAfter finds the first line that starts in [from+1, limit) and returns
// its offset and its head (enough of it for recordKey), or -1.
func lineAfter(f *os.File, from, limit int64, buf []byte) (int64, []byte, error) {
	off := from
	for off < limit {
		n, err := f.ReadAt(buf, off)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return -1, nil, nil
			}
			return 0, nil, err
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			start := off + int64(i) + 1
			if start >= limit {
				return -1, nil, nil
			}
			m, err := f.ReadAt(buf, start)
			if m == 0 && err != nil && !errors.Is(err, io.EOF) {
				return 0, nil, err
			}
			return start, buf[:m], nil
		}
		off += int64(n)
	}
	return -1, nil, nil
}

// LastSeq returns the seq of the last whole record of a session's log
// (the current part, else the rotated one), or 0 when it has none.
func LastSeq(dir string) (uint64, error) {
	for _, name := range []string{FileName, OldFileName} {
		seq, err := lastSeqIn(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		if seq > 0 {
			return seq, nil
		}
	}
	return 0, nil
}

func lastSeqIn(path string) (uint64, error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// Read back from the end in growing windows until a whole record is in
	// one; records are at most a few hundred KiB.
	size := fi.Size()
	for window := int64(64 << 10); ; window *= 4 {
		off := max(size-window, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		data := buf
		if off > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				continue
			}
			data = data[i+1:]
		}
		if _, seq := validPrefix(data); seq > 0 || off == 0 || window >= tailScan {
			return seq, nil
		}
	}
}

// RuneJoiner delivers output events so that a character the worker's reads
// split between two successive output records arrives whole in the first:
// the continuation bytes at the head of the second are moved to the end of
// the first. A record whose end is such a split is held until the next one
// is read (or the reader catches up). Whether bytes move depends only on
// the two records, so a read that starts at the second (a later page)
// drops the same bytes the first one gained.
type RuneJoiner struct {
	fn   func(Event) error
	held *Event // an output record ending in a split character
	prev *Event // with skipFirst: the record before the first wanted
	// skipFirst is the seq of the record just before the read's start; it
	// is read only to see whether it lends the first record its bytes.
	skipFirst uint64
}

// NewRuneJoiner returns a joiner that delivers to fn. A read that starts at
// seq from > 1 must begin its Reader at from-1 and give from here: that
// record is read only to see whether it lends the first one its bytes.
func NewRuneJoiner(fn func(Event) error, from uint64) *RuneJoiner {
	j := &RuneJoiner{fn: fn}
	if from > 1 {
		j.skipFirst = from - 1
	}
	return j
}

// splitTail returns how many bytes at the end of b begin a character that
// is not complete, and how many more it needs.
func splitTail(b []byte) (have, need int) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back
		}
		want := 0
		switch {
		case c&0xE0 == 0xC0:
			want = 2
		case c&0xF0 == 0xE0:
			want = 3
		case c&0xF8 == 0xF0:
			want = 4
		default:
			return 0, 0
		}
		have = len(b) - i
		if have >= want {
			return 0, 0
		}
		return have, want - have
	}
	return 0, 0
}

// lends reports how many head bytes of next complete the character split
// at the end of ev (0 when none do).
func lends(ev, next *Event) int {
	if ev.Type != Output || next.Type != Output || next.Seq != ev.Seq+1 {
		return 0
	}
	_, need := splitTail(ev.Data)
	if need == 0 || len(next.Data) < need {
		return 0
	}
	for _, c := range next.Data[:need] {
		if c&0xC0 != 0x80 {
			return 0
		}
	}
	return need
}

func (j *RuneJoiner) Deliver(ev Event) error {
	if j.skipFirst != 0 {
		skip := j.skipFirst
		j.skipFirst = 0
		if ev.Seq == skip {
			j.prev = &ev
			return nil
		}
	}
	if j.prev != nil {
		if n := lends(j.prev, &ev); n > 0 {
			ev.Data = ev.Data[n:]
		}
		j.prev = nil
	}
	if j.held != nil {
		held := j.held
		j.held = nil
		if n := lends(held, &ev); n > 0 {
			held.Data = append(held.Data, ev.Data[:n]...)
			ev.Data = ev.Data[n:]
		}
		if err := j.fn(*held); err != nil {
			return err
		}
	}
	if ev.Type == Output {
		if _, need := splitTail(ev.Data); need > 0 {
			j.held = &ev
			return nil
		}
	}
	return j.fn(ev)
}

// flush delivers a held record: the reader has caught up with the log.
func (j *RuneJoiner) Flush() error {
	if j.held == nil {
		return nil
	}
	held := j.held
	j.held = nil
	return j.fn(*held)
}
