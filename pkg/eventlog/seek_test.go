package eventlog

import (
	"fmt"
	"testing"
	"time"
)

// writeTestLog writes n output records, one a millisecond from t0, into a
// log small enough to have rotated.
func writeTestLog(t *testing.T, n int, t0 time.Time) string {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(dir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= n; i++ {
		data := []byte(fmt.Sprintf("record %d %s\r\n", i, "............................................................"))
		if i%5 == 0 {
			data = append(data, 0xff) // not UTF-8: written as data_b64, decoded the slow way
		}
		ev := &Event{Type: Output, TS: t0.Add(time.Duration(i) * time.Millisecond), Data: data}
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readSeqs(t *testing.T, r *Reader) (first, last uint64, count int) {
	t.Helper()
	err := r.Poll(func(ev Event) error {
		if count == 0 {
			first = ev.Seq
		} else if ev.Seq != last+1 {
			return fmt.Errorf("seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return first, last, count
}

func TestLogReadsFromASeqATimeOrTheTail(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 30000
	dir := writeTestLog(t, n, t0)
	last, err := LastSeq(dir)
	if err != nil || last != n {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, n)
	}
	// The rotated part holds the oldest records still kept.
	oldest, _, _ := readSeqs(t, NewReader(dir, 0, time.Time{}))
	if oldest <= 1 {
		t.Fatalf("the log did not rotate away its start (oldest %d); the test needs it to", oldest)
	}
	for _, from := range []uint64{oldest, oldest + 1, 17001, n - 1, n} {
		r := NewReader(dir, from, time.Time{})
		first, end, count := readSeqs(t, r)
		r.Close()
		if first != from || end != n || count != int(n-from+1) {
			t.Errorf("from %d: got %d..%d (%d events)", from, first, end, count)
		}
	}
	r := NewReader(dir, 0, t0.Add(25000*time.Millisecond))
	if first, _, _ := readSeqs(t, r); first != 25000 {
		t.Errorf("since the time of 25000: first %d", first)
	}
	r.Close()

}

func TestRecordKeyReadsTheHeadOfEitherEncoding(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, ev := range []Event{
		{Seq: 7, TS: ts, Type: Output, Data: []byte("hi")},
		{Seq: 8, TS: ts, Type: Resize, Cols: 80, Rows: 24},
	} {
		var line []byte
		if ev.Type == Output {
			line = appendOutputRecord(nil, &ev)
		} else {
			line, _ = ev.MarshalJSON()
		}
		seq, got, ok := recordKey(append(line, '\n'))
		if !ok || seq != ev.Seq || !got.Equal(ts) {
			t.Errorf("recordKey(%s) = %d, %v, %v", line, seq, got, ok)
		}
	}
	if _, _, ok := recordKey([]byte("garbage\n")); ok {
		t.Error("recordKey accepted garbage")
	}
}
