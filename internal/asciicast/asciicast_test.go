package asciicast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// event is one decoded event line.
type event struct {
	at   float64
	code string
	data string
}

// decode parses a recording as a player would.
func decode(t testing.TB, b []byte) (map[string]any, []event) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	if !sc.Scan() {
		t.Fatal("no header line")
	}
	var h map[string]any
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		t.Fatalf("header %q: %v", sc.Text(), err)
	}
	var evs []event
	for sc.Scan() {
		var raw []any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		at, ok1 := raw[0].(float64)
		code, ok2 := raw[1].(string)
		data, ok3 := raw[2].(string)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("event line %q: want [number, string, string]", sc.Text())
		}
		evs = append(evs, event{at, code, data})
	}
	return h, evs
}

func TestRecording(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{Width: 80, Height: 24, Timestamp: start.Unix(), Command: "python3 -i", Env: map[string]string{"TERM": "xterm-256color"}}, start, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	steps := []struct {
		t    float64
		code string
		data string
	}{
		{0.5, Output, "caf\xc3"}, // é split across two records
		{0.75, Output, "\xa9 \"quoted\"\r\n\x1b[1mbold\x1b[0m\t\\"},
		{10, Output, "after a long pause\n"}, // capped to 2 s
		{9, Output, "clock went back\n"},     // never earlier
		{11, Resize, "100x30"},
		{11.5, Marker, "ask: print(1)"},
		{12, Output, "bad \xff byte and a cut \xe2\x82"},
	}
	for _, s := range steps {
		if err := w.Event(at(s.t), s.code, []byte(s.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	h, evs := decode(t, b.Bytes())
	if h["version"] != 2.0 || h["width"] != 80.0 || h["height"] != 24.0 || h["idle_time_limit"] != 2.0 || h["command"] != "python3 -i" {
		t.Errorf("header %v", h)
	}
	var out strings.Builder
	last := -1.0
	for _, e := range evs {
		if e.at < last {
			t.Errorf("time went back: %v after %v", e.at, last)
		}
		last = e.at
		if e.code == Output {
			out.WriteString(e.data)
		}
	}
	want := "café \"quoted\"\r\n\x1b[1mbold\x1b[0m\t\\after a long pause\nclock went back\nbad \ufffd byte and a cut \ufffd\ufffd"
	if out.String() != want {
		t.Errorf("output\n got %q\nwant %q", out.String(), want)
	}
	if evs[0].data != "caf" || evs[0].at != 0.5 {
		t.Errorf("first event %+v, want the bytes before the split at 0.5 s", evs[0])
	}
	if evs[2].at != 2.75 || evs[3].at != 2.75 {
		t.Errorf("pause capped to %v then %v, want 2.75 twice (2 s limit; no going back)", evs[2].at, evs[3].at)
	}
	if evs[4].code != Resize || evs[4].data != "100x30" || evs[5].code != Marker || evs[5].data != "ask: print(1)" {
		t.Errorf("resize and marker: %+v %+v", evs[4], evs[5])
	}
	if _, err := NewWriter(&b, Header{Width: 0, Height: 24}, start, 0); err == nil {
		t.Error("a zero width was accepted")
	}
}

// TestAsciinemaPlaysIt has the real asciinema read a recording: what it
// prints is what the program wrote.
func TestAsciinemaPlaysIt(t *testing.T) {
	asciinema, err := exec.LookPath("asciinema")
	if err != nil {
		t.Skip("asciinema is not installed (apt-get install asciinema)")
	}
	start := time.Now()
	path := filepath.Join(t.TempDir(), "rec.cast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(f, Header{Width: 80, Height: 24, Timestamp: start.Unix()}, start, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	text := "héllo wörld 你好 \x1b[31mred\x1b[0m\r\n"
	for i, chunk := range []string{text[:2], text[2:9], text[9:]} { // splits é and 你
		w.Event(start.Add(time.Duration(i)*300*time.Millisecond), Output, []byte(chunk))
	}
	w.Mark(start.Add(time.Second), "a marker")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// asciinema cat opens /dev/tty (to let a key stop it), so it runs under
	// script(1)'s terminal, writing to a file.
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script is not installed (apt-get install bsdutils)")
	}
	outPath := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command("script", "-q", "-c", asciinema+" cat "+path+" > "+outPath, "/dev/null")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("asciinema cat: %v\n%s", err, msg)
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != text {
		t.Errorf("asciinema cat printed %q, want %q", out, text)
	}
}

// FuzzWriter feeds arbitrary bytes in arbitrary chunks: every line is valid
// JSON and the output read back is the input decoded as one stream.
func FuzzWriter(f *testing.F) {
	f.Add([]byte("hello\r\n"), uint8(3))
	f.Add([]byte("caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd"), uint8(4))
	f.Add([]byte("\xff\xfe\xc3\x28\xe2\x82\x28\xf0\x9f\x98"), uint8(1))
	f.Add([]byte("\x00\x1b[0m\"\\\u2028"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		n := int(step%7) + 1
		start := time.Unix(0, 0)
		var b bytes.Buffer
		w, err := NewWriter(&b, Header{Width: 80, Height: 24}, start, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(data); i += n {
			w.Event(start.Add(time.Duration(i)*time.Millisecond), Output, data[i:min(i+n, len(data))])
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		_, evs := decode(t, b.Bytes())
		var got strings.Builder
		for _, e := range evs {
			got.WriteString(e.data)
		}
		if want := string([]rune(string(data))); got.String() != want {
			t.Errorf("read back %q, want %q", got.String(), want)
		}
	})
}
