package eventlog

import (
	"testing"
	"time"
)

func TestOnlyTypesSkipsOtherRecords(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	evs := []Event{
		{Type: Output, Data: []byte(`{"seq":1,"ts":"x","type":"state"}`)},
		{Type: State, Text: "working", Reason: "screen"},
		{Type: Output, Data: []byte{0xff, '"', 't'}},
		{Type: Exit, Termination: "exited"},
	}
	for i := range evs {
		if err := w.Append(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(dir, 0, time.Time{})
	defer r.Close()
	r.OnlyTypes(State, Exit)
	var got []Type
	if err := r.Poll(func(ev Event) error { got = append(got, ev.Type); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != State || got[1] != Exit {
		t.Fatalf("OnlyTypes(state, exit) read %v, want [state exit]", got)
	}
}

func TestRecordTypeReadsTheHead(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Type
		ok   bool
	}{
		{`{"seq":3,"ts":"2026-01-01T00:00:00Z","type":"state","text":"working"}`, State, true},
		{`{"seq":3,"ts":"2026-01-01T00:00:00Z","type":"output","data":"\",\"type\":\"state\""}`, Output, true},
		{`{"type":"state","seq":3}`, "", false},
	} {
		got, ok := recordType([]byte(tc.line))
		if got != tc.want || ok != tc.ok {
			t.Errorf("recordType(%s) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
