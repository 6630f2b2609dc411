package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/eventlog"
)

// TestLogStart: a read's first seq from FromSeq and Tail, and a cursor past
// the end refused.
func TestLogStart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 30000
	dir := writeTestLog(t, n, t0)

	for _, c := range []struct {
		req  LogsRequest
		want uint64
		err  error
	}{
		{LogsRequest{Tail: 10}, n - 9, nil},
		{LogsRequest{Tail: 10, FromSeq: n - 3}, n - 3, nil},
		{LogsRequest{Tail: n * 2}, 0, nil},
		{LogsRequest{FromSeq: n + 1}, n + 1, nil},
		{LogsRequest{FromSeq: n + 2}, 0, ErrInvalid},
	} {
		got, err := logStart(dir, c.req)
		if !errors.Is(err, c.err) || err == nil && got != c.want {
			t.Errorf("logStart(%+v) = %d, %v; want %d, %v", c.req, got, err, c.want, c.err)
		}
	}
}

func writeTestLog(t *testing.T, n int, t0 time.Time) string {
	t.Helper()
	dir := t.TempDir()
	l, err := eventlog.Open(dir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= n; i++ {
		data := []byte(fmt.Sprintf("record %d %s\r\n", i, "............................................................"))
		if i%5 == 0 {
			data = append(data, 0xff) // not UTF-8: written as data_b64, decoded the slow way
		}
		ev := &Event{Type: EventOutput, TS: t0.Add(time.Duration(i) * time.Millisecond), Data: data}
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
