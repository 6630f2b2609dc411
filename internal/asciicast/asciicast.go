// Package asciicast writes terminal recordings in the asciicast v2 format,
// the one asciinema records and its players (terminal and web) play: a JSON
// header line, then one JSON array per event, [seconds, code, data].
//
// It exists for `agentctl record`: a session's event log holds every byte
// the program wrote and when, and a recording made from it plays in tools
// people already have. The writer owns the format's fine print: output is
// text, so a UTF-8 sequence split between two records is carried over to
// the next event rather than mangled; pauses longer than an idle limit are
// shortened, like asciinema's own --idle-time-limit; times never go back.
package asciicast

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// Header is the first line of a recording. Width and Height are required;
// the rest is omitted when zero.
type Header struct {
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp,omitempty"` // Unix seconds of the start
	Duration  float64           `json:"duration,omitempty"`
	IdleLimit float64           `json:"idle_time_limit,omitempty"`
	Command   string            `json:"command,omitempty"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// Event codes of the v2 format.
const (
	Output = "o" // what the program wrote
	Input  = "i" // what was typed
	Resize = "r" // the terminal's new size, "COLSxROWS"
	Marker = "m" // a named point to jump to
)

// Writer writes one recording. Its methods must be called in time order
// from one goroutine; errors stick (the first one is returned by every
// later call and by Flush).
type Writer struct {
	w         *bufio.Writer
	start     time.Time
	idleLimit time.Duration
	last      time.Time     // real time of the previous event
	at        time.Duration // recording time of the previous event
	pending   map[string][]byte
	err       error
	buf       []byte
}

// NewWriter writes h and returns a Writer whose event times count from
// start. idleLimit, when positive, shortens every pause between events to
// at most that long (and is recorded in the header).
func NewWriter(w io.Writer, h Header, start time.Time, idleLimit time.Duration) (*Writer, error) {
	if h.Width <= 0 || h.Height <= 0 {
		return nil, fmt.Errorf("asciicast: the terminal size %dx%d is not positive", h.Width, h.Height)
	}
	if idleLimit > 0 {
		h.IdleLimit = idleLimit.Seconds()
	}
	line, err := json.Marshal(struct {
		Version int `json:"version"`
		Header
	}{2, h})
	if err != nil {
		return nil, fmt.Errorf("asciicast: header: %w", err)
	}
	cw := &Writer{w: bufio.NewWriterSize(w, 64<<10), start: start, last: start, idleLimit: idleLimit, pending: map[string][]byte{}}
	cw.w.Write(line)
	cw.w.WriteByte('\n')
	return cw, nil
}

// Event writes one event that happened at t. Output and input data are
// bytes as the terminal saw them: an incomplete UTF-8 sequence at the end
// waits for the next event of the same code; invalid bytes become U+FFFD.
func (cw *Writer) Event(t time.Time, code string, data []byte) error {
	if cw.err != nil {
		return cw.err
	}
	text := data
	if code == Output || code == Input {
		text = cw.complete(code, data)
		if len(text) == 0 {
			return nil
		}
	}
	cw.writeEvent(cw.advance(t), code, text)
	return cw.err
}

// Resized writes a resize event.
func (cw *Writer) Resized(t time.Time, cols, rows int) error {
	return cw.Event(t, Resize, []byte(strconv.Itoa(cols)+"x"+strconv.Itoa(rows)))
}

// Mark writes a marker with a label.
func (cw *Writer) Mark(t time.Time, label string) error {
	return cw.Event(t, Marker, []byte(label))
}

// Flush writes what is held: the bytes of an incomplete UTF-8 sequence
// (as U+FFFD), then the buffer.
func (cw *Writer) Flush() error {
	for _, code := range []string{Output, Input} {
		if p := cw.pending[code]; len(p) > 0 && cw.err == nil {
			cw.pending[code] = nil
			cw.writeEvent(cw.at, code, p) // invalid: written as U+FFFD
		}
	}
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	return cw.err
}

// Sync writes the buffered lines out, keeping an incomplete UTF-8
// sequence for the next event: for a recording followed live.
func (cw *Writer) Sync() error {
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	return cw.err
}

// advance turns a real time into the recording's time: never earlier than
// the previous event, pauses capped at the idle limit.
func (cw *Writer) advance(t time.Time) time.Duration {
	gap := t.Sub(cw.last)
	if gap < 0 {
		gap = 0
	} else {
		cw.last = t
	}
	if cw.idleLimit > 0 && gap > cw.idleLimit {
		gap = cw.idleLimit
	}
	cw.at += gap
	return cw.at
}

// complete prepends the bytes held back for code and holds back an
// incomplete UTF-8 sequence at the end.
func (cw *Writer) complete(code string, data []byte) []byte {
	if p := cw.pending[code]; len(p) > 0 {
		data = append(append([]byte(nil), p...), data...)
		cw.pending[code] = nil
	}
	cut := len(data)
	// A sequence is at most 4 bytes: look at the last 3 for a start whose
	// sequence is longer than what follows it.
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		b := data[i]
		if b < 0x80 {
			break
		}
		if b >= 0xc0 { // a start byte
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(data) {
		cw.pending[code] = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	return data
}

func (cw *Writer) writeEvent(at time.Duration, code string, data []byte) {
	cw.buf = cw.buf[:0]
	cw.buf = append(cw.buf, '[')
	cw.buf = strconv.AppendFloat(cw.buf, at.Seconds(), 'f', 6, 64)
	cw.buf = append(cw.buf, ", "...)
	cw.buf = strconv.AppendQuote(cw.buf, code)
	cw.buf = append(cw.buf, ", "...)
	cw.buf = appendJSONString(cw.buf, data)
	cw.buf = append(cw.buf, "]\n"...)
	if _, err := cw.w.Write(cw.buf); err != nil && cw.err == nil {
		cw.err = err
	}
}

// appendJSONString appends data as a JSON string, invalid UTF-8 as U+FFFD.
// (encoding/json does the same but allocates per call; recordings of busy
// sessions hold millions of events.)
func appendJSONString(dst, data []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '"':
			dst = append(dst, `\"`...)
		case r == '\\':
			dst = append(dst, `\\`...)
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			dst = append(dst, `\u`...)
			dst = append(dst, hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			dst = append(dst, data[:size]...)
		}
		data = data[size:]
	}
	return append(dst, '"')
}
