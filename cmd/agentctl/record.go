package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/internal/asciicast"
	"github.com/agentd/agentd/pkg/wire"
)

// recordPage is how many events one agent.logs call asks for: small
// enough that a page of busy output stays far under the frame limit, so a
// recording of any size is read at a flat memory cost.
const recordPage = 500

// recordResult is what record wrote.
type recordResult struct {
	Name     string  `json:"name"`
	File     string  `json:"file"`
	Events   int     `json:"events"`
	Duration float64 `json:"duration_s"`
	Gaps     int     `json:"gaps,omitempty"`
}

func (r *recordResult) describe(w io.Writer) error {
	_, err := fmt.Fprintf(w, "recorded %d events (%.1f s) of %s to %s\n", r.Events, r.Duration, r.Name, r.File)
	return err
}

// screenRecord is what record --screen wrote: the daemon's answer.
type screenRecord wire.RecordScreenResult

func (r *screenRecord) describe(w io.Writer) error {
	_, err := fmt.Fprintf(w, "recorded %d batches with %d images: open %s\n", r.Batches, r.Images, filepath.Join(r.Dir, "index.html"))
	return err
}

// recording is what record wrote, a session's (*recordResult) or the
// screen's (*screenRecord), which says it for a person.
type recording interface {
	describe(w io.Writer) error
}

func recordVerb() command {
	var out, since, until string
	var idle time.Duration
	var input, force, follow, screen bool
	var desk string
	return verb[recording]{
		use:     "record NAME [-o FILE] [-f] [--since TIME] [--until TIME] [--idle-limit DURATION] [--input] [--force] | record --screen [--desktop NAME] -o DIR",
		summary: "write a session's recording as an asciicast v2 file (asciinema play FILE)",
		long: "Write what a session's program showed, with its timing, as an asciicast v2 recording that\n" +
			"asciinema and its web player play. Output and resizes are recorded; asks are markers named by\n" +
			"the question's first line; typed input only with --input (it may hold secrets). --since and\n" +
			"--until take a time (RFC 3339) or a duration ago (10m); --idle-limit caps pauses like\n" +
			"asciinema's own option. A gap where the log rotated out is a marker. -f goes on recording the\n" +
			"live session, a line per event as it happens, until the session ends or Ctrl-C.\n\n" +
			"--screen -o DIR writes what agents did on the screen instead: the act batches of the audit log\n" +
			"with the screenshots kept after them (agentd's record_screen = true) as numbered images and an\n" +
			"index.html that steps through them with each batch's actions.",
		example: "  agentctl record py -o py.cast && asciinema play py.cast\n  agentctl record build --since 10m --idle-limit 2s -o last.cast\n" +
			"  agentctl record --screen --since 1h -o ~/agent-screen && xdg-open ~/agent-screen/index.html",
		args: rangeArgs(0, 1), complete: completeSession,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&out, "output", "o", "-", "file to write (- for standard output)")
			fs.StringVar(&since, "since", "", "first time to record: RFC 3339, or a duration ago such as 10m")
			fs.StringVar(&until, "until", "", "last time to record, likewise")
			durationVar(fs, &idle, "idle-limit", "cap every pause at this long (0: keep them)")
			fs.BoolVar(&input, "input", false, "record typed input too (it may hold secrets)")
			fs.BoolVar(&force, "force", false, "replace an existing file")
			fs.BoolVarP(&follow, "follow", "f", false, "go on recording live until the session ends")
			fs.BoolVar(&screen, "screen", false, "record the screen's act batches to the directory -o names")
			desktopFlag(fs, &desk)
		},
		run: func(ctx context.Context, e *env, args []string) (recording, error) {
			now := time.Now()
			from, err := parseWhen(since, now, "since")
			if err != nil {
				return nil, err
			}
			to, err := parseWhen(until, now, "until")
			if err != nil {
				return nil, err
			}
			if screen {
				return recordScreen(ctx, e, args, out, from, to, force, desk)
			}
			if desk != "" {
				return nil, usagef("--desktop goes with --screen: a session's recording is its terminal")
			}
			if len(args) != 1 {
				return nil, usagef("record needs a session NAME, or --screen; see agentctl record --help")
			}
			if e.json && out == "-" {
				// The recording and the envelope would share stdout.
				return nil, usagef("record --json writes its envelope on stdout, where the recording would go; give the recording a file with -o FILE")
			}
			if follow && !to.IsZero() {
				return nil, usagef("-f records until the session ends; it takes no --until")
			}
			if !from.IsZero() && !to.IsZero() && from.After(to) {
				return nil, usagef("--since %s is after --until %s; swap them", since, until)
			}
			if idle < 0 {
				return nil, usagef("--idle-limit %v must not be negative", idle)
			}
			c := e.client()
			st, err := c.Status(ctx, args[0])
			if err != nil {
				return nil, err
			}
			w, closeOut, err := openRecording(out, force, e.stdout)
			if err != nil {
				return nil, err
			}
			o := recordOptions{from: from, to: to, idle: idle, input: input, follow: follow, socket: e.socket}
			res, err := writeRecording(ctx, c, st, w, o)
			if cerr := closeOut(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
			res.File = out
			if out == "-" && !e.json {
				return nil, errPrinted // the recording was the output
			}
			return res, nil
		},
		human: func(w io.Writer, r recording) error { return r.describe(w) },
	}
}

// recordScreen asks agentd for the screen record in the directory out.
func recordScreen(ctx context.Context, e *env, args []string, out string, from, to time.Time, force bool, desk string) (*screenRecord, error) {
	if len(args) > 0 {
		return nil, usagef("record --screen takes no session name: it records the screen")
	}
	if out == "" || out == "-" {
		return nil, usagef("record --screen needs -o DIR, a directory to write index.html and the images in")
	}
	dir, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	r, err := e.client().RecordScreen(ctx, wire.RecordScreenParams{Desktop: desk, Dir: dir, Since: from, Until: to, Overwrite: force})
	if err != nil {
		return nil, err
	}
	return (*screenRecord)(r), nil
}

// parseWhen reads a --since/--until value: empty, a duration before now,
// or a time in the forms logs --since takes (RFC 3339, or local
// "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04",
// "2006-01-02").
func parseWhen(v string, now time.Time, flag string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--%s %q is neither a time such as 2026-11-30T17:00:00Z or \"2026-11-30 17:00\" nor a duration ago such as 10m", flag, safeText(v))
}

// openRecording opens the file to write: standard output for "-"; a file
// that exists only with force; never through a symbolic link.
func openRecording(path string, force bool, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW
	if force {
		flags |= os.O_TRUNC
	} else {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, nil, usagef("%s exists; pass --force to replace it", path)
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, usagef("%s is a symbolic link; give the real path", path)
	case err != nil:
		return nil, nil, err
	}
	return f, f.Close, nil
}

type recordOptions struct {
	from, to time.Time
	idle     time.Duration
	input    bool
	// follow goes on with the live session on a connection of its own
	// to socket, writing each event out as it comes.
	follow bool
	socket string
}

// writeRecording writes the session's events in range as asciicast: the
// log read in pages, or with follow, the log and then the live session.
func writeRecording(ctx context.Context, c *wire.Client, st *wire.SessionStatus, w io.Writer, o recordOptions) (*recordResult, error) {
	rec := &recorder{st: st, w: w, o: o, res: &recordResult{Name: st.Name}}
	var err error
	if o.follow {
		err = followLog(ctx, o.socket, st.Name, rec.add)
	} else {
		err = pageLog(ctx, c, st.Name, rec.add)
	}
	if err != nil {
		return nil, err
	}
	return rec.finish()
}

// pageLog hands every event of the log to add, recordPage at a time.
func pageLog(ctx context.Context, c *wire.Client, name string, add func(wire.LogEvent, []wire.LogEvent) error) error {
	p := wire.LogsParams{Name: name, Limit: recordPage}
	for {
		page, err := c.Logs(ctx, p)
		if err != nil {
			return err
		}
		for i, ev := range page.Events {
			if err := add(ev, page.Events[i:]); err != nil {
				return err
			}
		}
		if len(page.Events) == 0 || page.NextSeq <= p.FromSeq {
			return nil
		}
		p.FromSeq = page.NextSeq
	}
}

// followLog hands add the log and then the live events as they come,
// until the session ends or ctx does (an interrupt ends a live recording
// cleanly).
func followLog(ctx context.Context, socket, name string, add func(wire.LogEvent, []wire.LogEvent) error) error {
	events := make(chan wire.LogEvent, 1024)
	c, err := wire.Dial(ctx, socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		var ev wire.LogEvent
		if n.Method == wire.NotifyLogEvent && json.Unmarshal(n.Params, &ev) == nil {
			events <- ev // blocks the reader while the writer is behind: backpressure
		}
	}})
	if err != nil {
		return err
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.Logs(ctx, wire.LogsParams{Name: name, Follow: true})
		done <- err
	}()
	for {
		select {
		case ev := <-events:
			if err := add(ev, []wire.LogEvent{ev}); err != nil {
				return err
			}
		case err := <-done:
		drain: // what arrived before the end
			for {
				select {
				case ev := <-events:
					if err := add(ev, []wire.LogEvent{ev}); err != nil {
						return err
					}
				default:
					break drain
				}
			}
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		}
	}
}

// recorder turns log events into a recording.
type recorder struct {
	st      *wire.SessionStatus
	w       io.Writer
	o       recordOptions
	res     *recordResult
	cw      *asciicast.Writer
	first   time.Time
	last    time.Time
	prevSeq uint64
	started bool
	// cols, rows are the terminal's size as the log has said it so far
	// (the start marker, then each resize): the size at the recording's
	// start, which the session's size now is not (an attach resizes it).
	cols, rows int
}

// track follows the terminal's size through the log.
func (r *recorder) track(ev wire.LogEvent) {
	switch ev.Type {
	case wire.EventResize:
		if ev.Cols > 0 && ev.Rows > 0 {
			r.cols, r.rows = ev.Cols, ev.Rows
		}
	case wire.EventMarker:
		// The worker's first record: "started pid N, COLSxROWS".
		var pid, cols, rows int
		if n, _ := fmt.Sscanf(ev.Text, "started pid %d, %dx%d", &pid, &cols, &rows); n == 3 && cols > 0 && rows > 0 {
			r.cols, r.rows = cols, rows
		}
	}
}

// add records one event; rest is it and the events after it that are
// known, to find the size the recording starts at.
func (r *recorder) add(ev wire.LogEvent, rest []wire.LogEvent) error {
	if r.cw == nil && ev.Type == wire.EventMarker {
		r.track(ev) // a start marker in range says the size it starts at
	}
	if (!r.o.from.IsZero() && ev.TS.Before(r.o.from)) || (!r.o.to.IsZero() && ev.TS.After(r.o.to)) {
		r.prevSeq = ev.Seq
		r.track(ev)
		return nil
	}
	if r.cw == nil {
		r.first = ev.TS
		cols, rows := r.cols, r.rows
		if cols == 0 {
			// No size in the log before this event (it rotated out):
			// a resize before the first output, else the size now.
			cols, rows = startSize(r.st, rest)
		}
		cw, err := asciicast.NewWriter(r.w, r.header(cols, rows, r.first), r.first, r.o.idle)
		if err != nil {
			return err
		}
		r.cw = cw
	}
	if r.started && ev.Seq > r.prevSeq+1 {
		r.res.Gaps++
		r.cw.Mark(ev.TS, fmt.Sprintf("gap: %d events rotated out of the log", ev.Seq-r.prevSeq-1))
	}
	r.started, r.prevSeq, r.last = true, ev.Seq, ev.TS
	r.track(ev)
	if writeEvent(r.cw, ev, r.o.input) {
		r.res.Events++
	}
	if r.o.follow {
		return r.cw.Sync()
	}
	return nil
}

func (r *recorder) header(cols, rows int, start time.Time) asciicast.Header {
	return asciicast.Header{Width: cols, Height: rows, Timestamp: start.Unix(),
		Command: shellJoin(r.st.Argv), Title: r.st.Name, Env: map[string]string{"TERM": "xterm-256color"}}
}

// finish writes what is left; nothing in range is a valid recording with
// a header and no events.
func (r *recorder) finish() (*recordResult, error) {
	if r.cw == nil {
		now := time.Now()
		cw, err := asciicast.NewWriter(r.w, r.header(max(r.st.Cols, 1), max(r.st.Rows, 1), now), now, r.o.idle)
		if err != nil {
			return nil, err
		}
		r.cw = cw
	}
	if err := r.cw.Flush(); err != nil {
		return nil, fmt.Errorf("writing the recording: %w", err)
	}
	r.res.Duration = r.last.Sub(r.first).Seconds()
	return r.res, nil
}

// startSize is the terminal's size when the recording starts: a resize
// before the first output says it, else the session's size now.
func startSize(st *wire.SessionStatus, evs []wire.LogEvent) (int, int) {
	for _, ev := range evs {
		if ev.Type == wire.EventResize && ev.Cols > 0 && ev.Rows > 0 {
			return ev.Cols, ev.Rows
		}
		if ev.Type == wire.EventOutput {
			break
		}
	}
	return max(st.Cols, 1), max(st.Rows, 1)
}

// writeEvent writes one log event as what a player shows; it reports
// whether it wrote one.
func writeEvent(cw *asciicast.Writer, ev wire.LogEvent, input bool) bool {
	switch ev.Type {
	case "output":
		cw.Event(ev.TS, asciicast.Output, []byte(ev.Data))
	case "input":
		if !input {
			return false
		}
		cw.Event(ev.TS, asciicast.Input, []byte(ev.Data))
	case "resize":
		if ev.Cols <= 0 || ev.Rows <= 0 {
			return false
		}
		cw.Resized(ev.TS, ev.Cols, ev.Rows)
	case "ask":
		label := "ask"
		if q, _, _ := strings.Cut(ev.Text, "\n"); q != "" {
			label = "ask: " + q
		}
		cw.Mark(ev.TS, label)
	default:
		return false
	}
	return true
}
