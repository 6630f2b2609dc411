package termmodel

import (
	"testing"
	"time"
)

// TestQueryAnsweredWithoutALook: output is fed to the screen model lazily,
// but output that asks the terminal a question is fed at once, so the
// reply goes out with nothing else reading the screen (issue 26: replies
// waited 100-740 ms for the next look). Plain output stays queued.
func TestQueryAnsweredWithoutALook(t *testing.T) {
	replies := make(chan string, 4)
	s := New(80, 24, func(p []byte) { replies <- string(p) })
	defer s.Close()
	if s.Queue([]byte("hello")) {
		t.Fatal("Queue said plain text holds a query")
	}
	if len(s.pending) == 0 {
		t.Fatal("plain output was fed at once; want it queued until someone looks")
	}
	if !s.Queue([]byte(" world\r\nab\x1b[6n")) {
		t.Fatal("Queue did not see the cursor position query")
	}
	if len(s.pending) != 0 {
		t.Fatalf("output holding a query left %d bytes queued, want it fed at once", len(s.pending))
	}
	// Nothing looks at the screen from here on: the reply must come of the
	// Queue call alone. The deadline only bounds a broken build.
	select {
	case r := <-replies:
		if r != "\x1b[2;3R" {
			t.Errorf("reply %q, want %q (row 2, column 3)", r, "\x1b[2;3R")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no reply to the cursor position query without a look at the screen")
	}
}
