package eventlog

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

// Type is the kind of an Event.
type Type string

// Termination is how a program ended, as an exit record says; pkg/session
// names the values.
type Termination string

// The event types.
const (
	Output Type = "output" // bytes the program wrote (Data)
	Input  Type = "input"  // bytes delivered to the program (Data)
	Ask    Type = "ask"    // an ask began (Text is the question)
	Answer Type = "answer" // an ask ended (Text is the answer, Reason why)
	Resize Type = "resize" // the terminal was resized (Cols, Rows)
	Signal Type = "signal" // a signal was sent to the program (Signal)
	Exit   Type = "exit"   // the program ended (ExitCode or Signal, Termination)
	Marker Type = "marker" // a note from agentd itself (Text)
	// Gap: records were lost (the disk was full): Count records,
	// Bytes of them program output or input, Text says why. It is written
	// before the first record that could be recorded again, so seq numbers
	// stay contiguous and the log says where it has a hole.
	Gap Type = "gap"
	// State: an agent CLI's state changed (Text is the new state, Reason
	// what told it: screen or hook; Detail, as JSON, what it asks).
	State Type = "state"
)

// Event is one record of the event log.
type Event struct {
	Seq  uint64    `json:"seq"`
	TS   time.Time `json:"ts"`
	Type Type      `json:"type"`
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
	// Detail is a state record's detail, as JSON.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// eventFields is Event without its methods, for eventJSON to embed: a
// field added to Event is written and read with no more code.
type eventFields Event

// eventJSON is Event's representation on disk: Data as "data" or
// "data_b64". Seq, TS and Type stand again ahead of the data, shadowing
// the embedded ones, so that a record starts as records always have
// ({"seq":N,"ts":"…","type":…,"data":…, as appendOutputRecord writes and
// recordKey reads).
type eventJSON struct {
	Seq     uint64    `json:"seq"`
	TS      time.Time `json:"ts"`
	Type    Type      `json:"type"`
	Data    *string   `json:"data,omitempty"`
	DataB64 string    `json:"data_b64,omitempty"`
	eventFields
}

// MarshalJSON encodes e as one log record (without the newline).
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{Seq: e.Seq, TS: e.TS, Type: e.Type, eventFields: eventFields(e)}
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
	*e = Event(j.eventFields)
	e.Seq, e.TS, e.Type = j.Seq, j.TS, j.Type
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

// Decode decodes one line of the event log (without its newline). A
// record must have a seq of at least 1 and a type.
func Decode(line []byte) (Event, error) {
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
		if ev, err := Decode(data[start : end-1]); err == nil {
			return end, ev.Seq
		}
		end = start
	}
	return 0, 0
}

// FileName is the log's current part in a session's directory, and
// OldFileName the part before the last rotation.
const (
	FileName    = "events.jsonl"
	OldFileName = "events.jsonl.1"
)

// MinCap is the smallest cap on a log's size: rotation at half of it must
// not thrash.
const MinCap = 64 << 10

const (
	// tailScan is how much of a log's end is read to find its last record
	// on open; a record is at most a few hundred KiB.
	tailScan = 4 << 20
)

// Writer appends records to a session's event log. It is not safe for
// concurrent use; its owner serialises it.
type Writer struct {
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

// Open opens (creating) dir's event log for appending, cutting a torn last
// line, and continues its seq numbering. The log on disk is kept under
// capBytes (at least MinCap) by rotation.
func Open(dir string, capBytes int64) (*Writer, error) {
	if capBytes < MinCap {
		capBytes = MinCap
	}
	path := filepath.Join(dir, FileName)
	f, err := openNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &Writer{dir: dir, cap: capBytes, f: f}
	size, seq, err := recoverLog(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.size, l.seq = size, seq
	if seq == 0 {
		if old, err := os.ReadFile(filepath.Join(dir, OldFileName)); err == nil {
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
// record (Gap, with the count and bytes lost) comes first. So seq
// numbers stay contiguous, every line is a whole record, and the log says
// where it has a hole. The error is returned for the caller to report.
func (l *Writer) Append(ev *Event) error {
	if l.torn {
		if err := l.f.Truncate(l.size); err != nil {
			l.lose(ev, err)
			return fmt.Errorf("cut a torn event log record: %w", err)
		}
		l.torn = false
	}
	if l.lostCount > 0 {
		gap := Event{Type: Gap, Count: l.lostCount, Bytes: l.lostBytes,
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
func (l *Writer) lose(ev *Event, why error) {
	ev.Seq = 0
	l.lostCount++
	l.lostBytes += uint64(len(ev.Data))
	l.lostWhy = why
}

// write appends one record, taking the next seq only when it is written
// whole.
func (l *Writer) write(ev *Event) error {
	ev.Seq = l.seq + 1
	if ev.TS.IsZero() {
		ev.TS = time.Now().UTC()
	}
	if ev.Type == Output && utf8.Valid(ev.Data) {
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

func (l *Writer) rotate() error {
	path := filepath.Join(l.dir, FileName)
	if err := os.Rename(path, filepath.Join(l.dir, OldFileName)); err != nil {
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

// Close closes the log.
func (l *Writer) Close() error { return l.f.Close() }

// Seq is the seq of the last record written (0 for none).
func (l *Writer) Seq() uint64 { return l.seq }

// Reader reads a session's event log from a seq on, across rotation, and
// can be resumed after it has caught up (follow).
type Reader struct {
	dir  string
	f    *os.File
	ino  uint64
	br   *bufio.Reader
	part []byte // an unterminated line read so far
	next uint64 // the lowest seq still to deliver
	// since skips records stamped before it, until the first one that is
	// not (later records are all delivered, whatever their time).
	since time.Time
	// only, when set, are the types delivered (OnlyTypes).
	only []Type
}

// NewReader returns a reader of dir's log from seq from on, skipping the
// records stamped before since until the first one that is not.
func NewReader(dir string, from uint64, since time.Time) *Reader {
	return &Reader{dir: dir, next: max(from, 1), since: since}
}

// Close releases the reader's file.
func (r *Reader) Close() {
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

// Poll delivers every whole record now on disk with seq >= next, in order.
// It returns when it reaches the end of the current log.
func (r *Reader) Poll(fn func(Event) error) error {
	if r.f == nil {
		// First time: the older part, then the current one.
		if err := r.readFile(filepath.Join(r.dir, OldFileName), fn); err != nil {
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
		fi, err := os.Stat(filepath.Join(r.dir, FileName))
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

func (r *Reader) openCurrent() error {
	r.Close()
	r.part = nil
	f, err := openNoFollow(filepath.Join(r.dir, FileName), os.O_RDONLY)
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
func (r *Reader) seek(f *os.File, size int64) error {
	off, err := seekRecords(f, size, func(seq uint64, ts time.Time) bool {
		return seq >= r.next && !ts.Before(r.since)
	})
	if err != nil {
		return err
	}
	_, err = f.Seek(off, io.SeekStart)
	return err
}

func (r *Reader) readFile(path string, fn func(Event) error) error {
	f, err := openNoFollow(path, os.O_RDONLY)
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
func (r *Reader) drain(fn func(Event) error) error {
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
		if !r.wanted(line) {
			continue
		}
		ev, derr := Decode(line[:len(line)-1])
		if derr != nil || ev.Seq < r.next || ev.TS.Before(r.since) || !r.wantedType(ev.Type) {
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
