package ttyready

import "testing"

func TestParseStat(t *testing.T) {
	line := "4242 (a (b) c) S 1 4242 4240 34816 4242 4194304 1 0 0 0 0 0 0 0 20 0 3 0 100 0 0\n"
	got, ok := parseStat([]byte(line))
	want := taskStat{comm: "a (b) c", state: 'S', ppid: 1, pgrp: 4242, sid: 4240, ttyNr: 34816, nThreads: 3}
	if !ok || got != want {
		t.Fatalf("parseStat(%q) = %+v, %v; want %+v", line, got, ok, want)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"} {
		if _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestParseSyscall(t *testing.T) {
	for _, c := range []struct {
		in   string
		want sysCall
		ok   bool
	}{
		{"running\n", sysCall{nr: -2}, true},
		{"-1 0x7ffc 0x7f00\n", sysCall{nr: -1}, true},
		{"0 0x3 0x7f9b166d8000 0x20000 0x0 0xffffffff 0x0 0x7ffe 0x7f9b\n", sysCall{nr: 0, args: [6]uint64{3, 0x7f9b166d8000, 0x20000, 0, 0xffffffff, 0}}, true},
		{"0 0x3\n", sysCall{}, false},
		{"x 0x3\n", sysCall{}, false},
	} {
		got, ok := parseSyscall([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("parseSyscall(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseTfd(t *testing.T) {
	line := "tfd:       17 events:       19 data:       1100000011  pos:0 ino:3 sdev:18"
	fd, events, ino, sdev, ok := parseTfd([]byte(line))
	if !ok || fd != 17 || events != 0x19 || ino != 3 || sdev != 0x18 {
		t.Fatalf("parseTfd(%q) = %d %#x %d %#x %v; want 17 0x19 3 0x18 true", line, fd, events, ino, sdev, ok)
	}
	if _, _, _, _, ok := parseTfd([]byte("tfd: 3 events: 1")); ok {
		t.Fatal("parseTfd accepted a line without ino and sdev")
	}
}

func TestParseSchedstat(t *testing.T) {
	if n, ok := parseSchedstat([]byte("8449278 1559573 29\n")); !ok || n != 29 {
		t.Fatalf("got %d, %v; want 29, true", n, ok)
	}
	if _, ok := parseSchedstat([]byte("1 2")); ok {
		t.Fatal("accepted two fields")
	}
}
