package session

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
)

// EventType is the kind of an Event.
type EventType string

// The event types.
const (
	EventOutput EventType = "output" // bytes the program wrote (Data)
	EventInput  EventType = "input"  // bytes delivered to the program (Data)
	EventAsk    EventType = "ask"    // an ask began (Text is the question)
	EventAnswer EventType = "answer" // an ask ended (Text is the answer, Reason why)
	EventResize EventType = "resize" // the terminal was resized (Cols, Rows)
	EventSignal EventType = "signal" // a signal was sent to the program (Signal)
	EventExit   EventType = "exit"   // the program ended (ExitCode or Signal, Termination)
	EventMarker EventType = "marker" // a note from agentd itself (Text)
	// EventGap: records were lost (the disk was full): Count records,
	// Bytes of them program output or input, Text says why. It is written
	// before the first record that could be recorded again, so seq numbers
	// stay contiguous and the log says where it has a hole.
	EventGap EventType = "gap"
)

// Event is one record of the event log.
type Event struct {
	Seq  uint64    `json:"seq"`
	TS   time.Time `json:"ts"`
	Type EventType `json:"type"`
	// Data holds output and input bytes. On disk it is "data" (a string)
	// when valid UTF-8, else "data_b64".
	Data        []byte      `json:"-"`
	Text        string      `json:"text,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Cols        int         `json:"cols,omitempty"`
	Rows        int         `json:"rows,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Termination Termination `json:"termination,omitempty"`
	// Count and Bytes are what a gap lost: records, and bytes of data.
	Count uint64 `json:"count,omitempty"`
	Bytes uint64 `json:"bytes,omitempty"`
}

// eventJSON is Event's representation on disk.
type eventJSON struct {
	Seq         uint64      `json:"seq"`
	TS          time.Time   `json:"ts"`
	Type        EventType   `json:"type"`
	Data        *string     `json:"data,omitempty"`
	DataB64     string      `json:"data_b64,omitempty"`
	Text        string      `json:"text,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Cols        int         `json:"cols,omitempty"`
	Rows        int         `json:"rows,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Termination Termination `json:"termination,omitempty"`
	Count       uint64      `json:"count,omitempty"`
	Bytes       uint64      `json:"bytes,omitempty"`
}

// MarshalJSON encodes e as one log record (without the newline).
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{Seq: e.Seq, TS: e.TS, Type: e.Type, Text: e.Text, Reason: e.Reason, Cols: e.Cols, Rows: e.Rows,
		Signal: e.Signal, ExitCode: e.ExitCode, Termination: e.Termination, Count: e.Count, Bytes: e.Bytes}
	if e.Data != nil {
		if utf8.Valid(e.Data) {
			s := string(e.Data)
			j.Data = &s
		} else {
			j.DataB64 = base64.StdEncoding.EncodeToString(e.Data)
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes one log record.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{Seq: j.Seq, TS: j.TS, Type: j.Type, Text: j.Text, Reason: j.Reason, Cols: j.Cols, Rows: j.Rows,
		Signal: j.Signal, ExitCode: j.ExitCode, Termination: j.Termination, Count: j.Count, Bytes: j.Bytes}
	switch {
	case j.Data != nil && j.DataB64 != "":
		return errors.New("record has both data and data_b64")
	case j.Data != nil:
		e.Data = []byte(*j.Data)
	case j.DataB64 != "":
		d, err := base64.StdEncoding.DecodeString(j.DataB64)
		if err != nil {
			return fmt.Errorf("data_b64: %w", err)
		}
		e.Data = d
	}
	return nil
}

// DecodeEvent decodes one line of the event log (without its newline). A
// record must have a seq of at least 1 and a type.
func DecodeEvent(line []byte) (Event, error) {
	var e Event
	// UnmarshalJSON itself, not json.Unmarshal(line, &e): that would check
	// the whole line's syntax once before UnmarshalJSON checks it again,
	// a pass over every byte agent.logs reads.
	if err := e.UnmarshalJSON(line); err != nil {
		return Event{}, fmt.Errorf("event record: %w", err)
	}
	if e.Seq == 0 || e.Type == "" {
		return Event{}, errors.New("event record has no seq or no type")
	}
	return e, nil
}

// validPrefix returns the length of the longest prefix of data made of whole
// records: a tail without a newline is torn, and trailing lines that do not
// decode are cut too. It returns the seq of the last record kept (0 if none).
// data must start at a line boundary.
func validPrefix(data []byte) (n int, lastSeq uint64) {
	end := bytes.LastIndexByte(data, '\n') + 1 // 0 when there is no newline
	for end > 0 {
		start := bytes.LastIndexByte(data[:end-1], '\n') + 1
		if ev, err := DecodeEvent(data[start : end-1]); err == nil {
			return end, ev.Seq
		}
		end = start
	}
	return 0, 0
}

const (
	logName    = "events.jsonl"
	logOldName = "events.jsonl.1"
	// tailScan is how much of a log's end is read to find its last record
	// on open; a record is at most a few hundred KiB.
	tailScan = 4 << 20
)

// eventLog appends records to a session's event log. It is not safe for
// concurrent use; the worker serialises it.
type eventLog struct {
	dir  string
	cap  int64
	f    *os.File
	size int64 // the bytes of whole records in f
	seq  uint64
	buf  []byte

	// torn is set when a write failed part way and the partial record
	// could not be cut off at once; it is cut (truncate, which needs no
	// space) before the next append, so no later record fuses into it.
	torn bool
	// lost counts the records, and their data bytes, that could not be
	// written since the last gap record; the next append that can be
	// written is preceded by a gap record saying so.
	lostCount, lostBytes uint64
	lostWhy              error
}

// openEventLog opens (creating) dir's event log for appending, cutting a
// torn last line, and continues its seq numbering.
func openEventLog(dir string, capBytes int64) (*eventLog, error) {
	if capBytes < MinLogCap {
		capBytes = MinLogCap
	}
	path := filepath.Join(dir, logName)
	f, err := openNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &eventLog{dir: dir, cap: capBytes, f: f}
	size, seq, err := recoverLog(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.size, l.seq = size, seq
	if seq == 0 {
		if old, err := os.ReadFile(filepath.Join(dir, logOldName)); err == nil {
			_, l.seq = validPrefix(tailOf(old))
		}
	}
	return l, nil
}

func tailOf(b []byte) []byte {
	if len(b) <= tailScan {
		return b
	}
	b = b[len(b)-tailScan:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return nil
}

// recoverLog cuts a torn tail off f and returns its new size and last seq.
func recoverLog(f *os.File) (size int64, lastSeq uint64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = st.Size()
	if size == 0 {
		return 0, 0, nil
	}
	off := max(size-tailScan, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return 0, 0, fmt.Errorf("read event log: %w", err)
	}
	skip := 0
	if off > 0 {
		// Start at a line boundary.
		skip = bytes.IndexByte(buf, '\n') + 1
	}
	n, seq := validPrefix(buf[skip:])
	keep := off + int64(skip+n)
	if keep != size {
		if err := f.Truncate(keep); err != nil {
			return 0, 0, fmt.Errorf("cut torn event log tail: %w", err)
		}
	}
	return keep, seq, nil
}

// append assigns ev the next seq (and a timestamp when it has none), writes
// it with one write call, and rotates when the log passes half its cap.
//
// A write that fails (a full disk) takes no seq: the record is counted as
// lost, what it half wrote is cut off, and once writing works again a gap
// record (EventGap, with the count and bytes lost) comes first. So seq
// numbers stay contiguous, every line is a whole record, and the log says
// where it has a hole. The error is returned for the caller to report.
func (l *eventLog) append(ev *Event) error {
	if l.torn {
		if err := l.f.Truncate(l.size); err != nil {
			l.lose(ev, err)
			return fmt.Errorf("cut a torn event log record: %w", err)
		}
		l.torn = false
	}
	if l.lostCount > 0 {
		gap := Event{Type: EventGap, Count: l.lostCount, Bytes: l.lostBytes,
			Text: fmt.Sprintf("%d records (%d bytes of data) could not be recorded: %v", l.lostCount, l.lostBytes, l.lostWhy)}
		if err := l.write(&gap); err != nil {
			l.lose(ev, err)
			return err
		}
		l.lostCount, l.lostBytes, l.lostWhy = 0, 0, nil
	}
	if err := l.write(ev); err != nil {
		l.lose(ev, err)
		return err
	}
	return nil
}

// lose counts ev as not recorded.
func (l *eventLog) lose(ev *Event, why error) {
	ev.Seq = 0
	l.lostCount++
	l.lostBytes += uint64(len(ev.Data))
	l.lostWhy = why
}

// write appends one record, taking the next seq only when it is written
// whole.
func (l *eventLog) write(ev *Event) error {
	ev.Seq = l.seq + 1
	if ev.TS.IsZero() {
		ev.TS = time.Now().UTC()
	}
	if ev.Type == EventOutput && utf8.Valid(ev.Data) {
		// The hot path: output, encoded without reflection.
		l.buf = appendOutputRecord(l.buf[:0], ev)
	} else {
		b, err := ev.MarshalJSON()
		if err != nil {
			return err
		}
		l.buf = append(l.buf[:0], b...)
	}
	l.buf = append(l.buf, '\n')
	if l.size > 0 && l.size+int64(len(l.buf)) > l.cap/2 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(l.buf)
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	if err != nil {
		if n > 0 {
			// Cut the partial record now; if even that fails, before the
			// next append.
			l.torn = l.f.Truncate(l.size) != nil
		}
		return err
	}
	l.seq++
	l.size += int64(n)
	return nil
}

func (l *eventLog) rotate() error {
	path := filepath.Join(l.dir, logName)
	if err := os.Rename(path, filepath.Join(l.dir, logOldName)); err != nil {
		return fmt.Errorf("rotate event log: %w", err)
	}
	f, err := openNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("rotate event log: %w", err)
	}
	l.f.Close()
	l.f, l.size = f, 0
	return nil
}

func (l *eventLog) close() error { return l.f.Close() }

// logReader reads a session's event log from a seq on, across rotation, and
// can be resumed after it has caught up (follow).
type logReader struct {
	dir  string
	f    *os.File
	ino  uint64
	br   *bufio.Reader
	part []byte // an unterminated line read so far
	next uint64 // the lowest seq still to deliver
	// since skips records stamped before it, until the first one that is
	// not (later records are all delivered, whatever their time).
	since time.Time
}

func newLogReader(dir string, from uint64) *logReader {
	return &logReader{dir: dir, next: max(from, 1)}
}

func (r *logReader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// poll delivers every whole record now on disk with seq >= next, in order.
// It returns when it reaches the end of the current log.
func (r *logReader) poll(fn func(Event) error) error {
	if r.f == nil {
		// First time: the older part, then the current one.
		if err := r.readFile(filepath.Join(r.dir, logOldName), fn); err != nil {
			return err
		}
		if err := r.openCurrent(); err != nil {
			return err
		}
	}
	for {
		if r.f != nil {
			if err := r.drain(fn); err != nil {
				return err
			}
		}
		// Rotated since we opened it? Then what we hold is complete; move on.
		fi, err := os.Stat(filepath.Join(r.dir, logName))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if r.f != nil && inode(fi) == r.ino {
			return nil
		}
		if r.f != nil {
			if err := r.drain(fn); err != nil {
				return err
			}
		}
		if err := r.openCurrent(); err != nil {
			return err
		}
	}
}

func (r *logReader) openCurrent() error {
	r.close()
	r.part = nil
	f, err := openLogNoFollow(filepath.Base(r.dir), filepath.Join(r.dir, logName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if err := r.seek(f, fi.Size()); err != nil {
		f.Close()
		return err
	}
	r.f, r.ino, r.br = f, inode(fi), bufio.NewReaderSize(f, 64<<10)
	return nil
}

// seek moves f to near the first record still wanted, so a read from far
// into a long log does not decode everything before it.
func (r *logReader) seek(f *os.File, size int64) error {
	off, err := seekRecords(f, size, func(seq uint64, ts time.Time) bool {
		return seq >= r.next && !ts.Before(r.since)
	})
	if err != nil {
		return err
	}
	_, err = f.Seek(off, io.SeekStart)
	return err
}

func (r *logReader) readFile(path string, fn func(Event) error) error {
	f, err := openLogNoFollow(filepath.Base(r.dir), path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := r.seek(f, fi.Size()); err != nil {
		return err
	}
	save := r.br
	r.br = bufio.NewReaderSize(f, 64<<10)
	defer func() { r.br = save; r.part = nil }()
	return r.drain(fn)
}

// drain reads whole lines until EOF, keeping an unterminated tail for later.
func (r *logReader) drain(fn func(Event) error) error {
	for {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.part = append(r.part, line...)
			continue
		}
		if err != nil {
			if err == io.EOF {
				r.part = append(r.part, line...)
				return nil
			}
			return err
		}
		if len(r.part) > 0 {
			line = append(r.part, line...)
			r.part = nil
		}
		if seq, ts, ok := recordKey(line); ok && (seq < r.next || ts.Before(r.since)) {
			continue // skipped without decoding it whole
		}
		ev, derr := DecodeEvent(line[:len(line)-1])
		if derr != nil || ev.Seq < r.next || ev.TS.Before(r.since) {
			continue
		}
		r.next, r.since = ev.Seq+1, time.Time{}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// appendOutputRecord appends the record of an output event whose data is
// valid UTF-8; it decodes exactly as MarshalJSON's output would.
func appendOutputRecord(b []byte, ev *Event) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":"output","data":`...)
	b = appendJSONString(b, ev.Data)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
