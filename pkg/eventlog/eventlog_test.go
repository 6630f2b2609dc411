package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestEventLogRoundTripAndRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, MinCap)
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	evs := []Event{
		{Type: Output, Data: []byte("plain \x1b[31mtext\n")},
		{Type: Output, Data: []byte{0xff, 0xfe, 'x'}},
		{Type: Input, Data: []byte("\r")},
		{Type: Resize, Cols: 10, Rows: 5},
		{Type: Exit, ExitCode: &code, Termination: "nonzero_exit"},
	}
	for i := range evs {
		if err := l.Append(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !bytes.Contains(b, []byte(`"data_b64":"//54"`)) || !bytes.Contains(b, []byte(`"data":"plain \u001b[31mtext\n"`)) {
		t.Errorf("encoding on disk:\n%s", b)
	}
	var got []Event
	r := NewReader(dir, 0, time.Time{})
	r.Poll(func(ev Event) error { got = append(got, ev); return nil })
	r.Close()
	if len(got) != len(evs) {
		t.Fatalf("read %d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i].Seq != uint64(i+1) || !bytes.Equal(got[i].Data, evs[i].Data) || got[i].Type != evs[i].Type {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], evs[i])
		}
	}
	// Rotation: write well past the cap; the log stays under it and seq
	// continues across parts.
	big := bytes.Repeat([]byte("y"), 1000)
	for range 500 {
		if err := l.Append(&Event{Type: Output, Data: big}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	var size int64
	for _, f := range []string{FileName, OldFileName} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > MinCap+2000 {
		t.Errorf("log is %d bytes, cap %d", size, MinCap)
	}
	var last uint64
	var n int
	r = NewReader(dir, 0, time.Time{})
	r.Poll(func(ev Event) error {
		if last != 0 && ev.Seq != last+1 {
			t.Fatalf("seq jumps from %d to %d", last, ev.Seq)
		}
		last = ev.Seq
		n++
		return nil
	})
	r.Close()
	if last != 505 {
		t.Errorf("last seq %d, want 505", last)
	}
	// Reopening continues the numbering.
	l, err = Open(dir, MinCap)
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{Type: Marker, Text: "again"}
	l.Append(&ev)
	l.Close()
	if ev.Seq != 506 {
		t.Errorf("seq after reopen %d, want 506", ev.Seq)
	}
}

func TestEventLogTornLine(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Append(&Event{Type: Output, Data: []byte{byte('a' + i)}, TS: time.Unix(0, 0).UTC()})
	}
	l.Close()
	path := filepath.Join(dir, FileName)
	good, _ := os.ReadFile(path)
	for _, tail := range []string{`{"seq":4,"ts":"1970-01-01T00:00:00Z","type":"out`, "garbage\n", `{"seq":4}` + "\n" + `{"seq":5,"ty`} {
		os.WriteFile(path, append(append([]byte(nil), good...), tail...), 0o600)
		// Readers skip the torn tail.
		var n int
		r := NewReader(dir, 0, time.Time{})
		r.Poll(func(Event) error { n++; return nil })
		r.Close()
		if n != 3 {
			t.Errorf("tail %q: reader saw %d events, want 3", tail, n)
		}
		// Opening for writing cuts it and continues after the last good record.
		l, err := Open(dir, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		ev := Event{Type: Marker, Text: "after crash"}
		l.Append(&ev)
		l.Close()
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, good) || ev.Seq != 4 || bytes.Count(b, []byte("\n")) != 4 {
			t.Errorf("tail %q: after reopen seq %d, log:\n%s", tail, ev.Seq, b)
		}
		os.WriteFile(path, good, 0o600)
	}
}

// FuzzEventLog checks that the line decoder never panics, that whatever it
// accepts re-encodes to a record it decodes the same way, and that torn-tail
// recovery keeps exactly whole, valid records.
func FuzzEventLog(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"output","data":"hi\r\n"}` + "\n"))
	f.Add([]byte(`{"seq":2,"ts":"2026-01-01T00:00:00Z","type":"output","data_b64":"//54"}` + "\n" + `{"seq":3,"ty`))
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"exit","exit_code":1,"termination":"nonzero_exit"}`))
	f.Add([]byte("garbage\n\n{}\n"))
	f.Add([]byte(`{"seq":1,"type":"output","data":"a","data_b64":"YQ=="}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, last := validPrefix(data)
		if n < 0 || n > len(data) {
			t.Fatalf("validPrefix returned %d for %d bytes", n, len(data))
		}
		if n > 0 {
			if data[n-1] != '\n' {
				t.Fatalf("kept prefix does not end at a line end")
			}
			i := bytes.LastIndexByte(data[:n-1], '\n') + 1
			ev, err := Decode(data[i : n-1])
			if err != nil || ev.Seq != last {
				t.Fatalf("last kept line does not decode to seq %d: %v", last, err)
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			ev, err := Decode(line)
			// DecodeEvent calls UnmarshalJSON itself; json.Unmarshal
			// through it must take and refuse the same lines.
			var viaJSON Event
			jerr := json.Unmarshal(line, &viaJSON)
			if (err == nil) != (jerr == nil && viaJSON.Seq != 0 && viaJSON.Type != "") {
				t.Fatalf("line %q: DecodeEvent %v, json.Unmarshal %v (%+v)", line, err, jerr, viaJSON)
			}
			if err != nil {
				continue
			}
			if !bytes.Equal(viaJSON.Data, ev.Data) || viaJSON.Seq != ev.Seq || !viaJSON.TS.Equal(ev.TS) || viaJSON.Text != ev.Text {
				t.Fatalf("line %q: DecodeEvent %+v, json.Unmarshal %+v", line, ev, viaJSON)
			}
			b, err := ev.MarshalJSON()
			if err != nil {
				t.Fatalf("re-encode %+v: %v", ev, err)
			}
			ev2, err := Decode(b)
			if err != nil || !bytes.Equal(ev2.Data, ev.Data) || ev2.Seq != ev.Seq || ev2.Type != ev.Type {
				t.Fatalf("round trip of %q: %+v != %+v (%v)", line, ev2, ev, err)
			}
			if bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("encoded record holds a newline: %q", b)
			}
		}
	})
}

func TestOutputRecordFastPath(t *testing.T) {
	for _, d := range []string{"plain", "esc \x1b[31m \"q\" \\ \r\n\t\x00\x7f é 宽 \u2028", ""} {
		ev := Event{Seq: 9, TS: time.Now().UTC(), Type: Output, Data: []byte(d)}
		got, err := Decode(appendOutputRecord(nil, &ev))
		if err != nil || string(got.Data) != d || got.Seq != 9 || !got.TS.Equal(ev.TS) || got.Type != Output {
			t.Errorf("fast record of %q decodes to %+v, %v", d, got, err)
		}
	}
}

func TestSplitTailAndLends(t *testing.T) {
	for _, c := range []struct {
		data       string
		have, need int
	}{{"abc", 0, 0}, {"a\xe4", 1, 2}, {"a\xe4\xb8", 2, 1}, {"a\xe4\xb8\xad", 0, 0}, {"\xf0\x9f\x98", 3, 1}, {"\xc3", 1, 1}, {"\x80", 0, 0}} {
		have, need := splitTail([]byte(c.data))
		if have != c.have || need != c.need {
			t.Errorf("splitTail(%q) = %d, %d; want %d, %d", c.data, have, need, c.have, c.need)
		}
	}
	a := Event{Seq: 1, Type: Output, Data: []byte("x\xe4\xb8")}
	b := Event{Seq: 2, Type: Output, Data: []byte("\xady")}
	if n := lends(&a, &b); n != 1 {
		t.Fatalf("lends = %d, want 1", n)
	}
	b.Seq = 3
	if n := lends(&a, &b); n != 0 {
		t.Fatalf("lends across a missing record = %d, want 0", n)
	}
}

func TestRuneJoinerMovesSplitCharacters(t *testing.T) {
	evs := []Event{
		{Seq: 1, Type: Output, Data: []byte("中\xe6")},
		{Seq: 2, Type: Output, Data: []byte("\x96\x87文")},
		{Seq: 3, Type: Resize, Cols: 80, Rows: 24},
		{Seq: 4, Type: Output, Data: []byte("\xf0\x9f")},
	}
	run := func(skip uint64, from int) []string {
		var got []string
		j := &RuneJoiner{skipFirst: skip, fn: func(ev Event) error {
			got = append(got, fmt.Sprintf("%d:%s", ev.Seq, ev.Data))
			return nil
		}}
		for _, ev := range evs[from:] {
			ev.Data = append([]byte(nil), ev.Data...)
			if err := j.Deliver(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Flush(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []string{"1:中文", "2:文", "3:", "4:\xf0\x9f"}
	if got := run(0, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("whole read: %q, want %q", got, want)
	}
	// A read from seq 2 looks at seq 1 only to drop what it lent.
	if got := run(1, 0); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Fatalf("read from 2: %q, want %q", got, want[1:])
	}
}

// TestRecordBytesOnDisk pins a record's exact bytes (the order of its keys
// included: recordKey reads seq and ts at the head) and that every field of
// Event survives the round trip.
func TestRecordBytesOnDisk(t *testing.T) {
	code := 3
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	full := Event{Seq: 7, TS: ts, Type: Exit, Data: []byte("é"), Text: "t", Reason: "r", Cols: 80, Rows: 24,
		Signal: "SIGTERM", ExitCode: &code, Termination: "nonzero_exit", Count: 2, Bytes: 5, Detail: json.RawMessage(`{"a":1}`)}
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{full, `{"seq":7,"ts":"2026-01-02T03:04:05.0000006Z","type":"exit","data":"é","text":"t","reason":"r","cols":80,"rows":24,"signal":"SIGTERM","exit_code":3,"termination":"nonzero_exit","count":2,"bytes":5,"detail":{"a":1}}`},
		{Event{Seq: 1, TS: ts, Type: Output, Data: []byte{0xff, 0xfe}}, `{"seq":1,"ts":"2026-01-02T03:04:05.0000006Z","type":"output","data_b64":"//4="}`},
		{Event{Seq: 2, TS: ts, Type: Marker}, `{"seq":2,"ts":"2026-01-02T03:04:05.0000006Z","type":"marker"}`},
	} {
		b, err := c.ev.MarshalJSON()
		if err != nil || string(b) != c.want {
			t.Errorf("record of %+v:\n got %s (%v)\nwant %s", c.ev, b, err, c.want)
		}
	}
	b, _ := full.MarshalJSON()
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	if string(gb) != string(b) || *got.ExitCode != 3 || string(got.Data) != "é" {
		t.Errorf("round trip: got %+v, want %+v", got, full)
	}
	// Every field of Event is filled above, so a field added later and not
	// carried to disk is caught here.
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("the test's full event leaves %s zero; fill it", v.Type().Field(i).Name)
		}
		if !reflect.DeepEqual(reflect.ValueOf(got).Field(i).Interface(), v.Field(i).Interface()) && v.Type().Field(i).Name != "TS" {
			t.Errorf("%s did not survive the round trip: got %v, want %v", v.Type().Field(i).Name, reflect.ValueOf(got).Field(i), v.Field(i))
		}
	}
}
