package main

// Progress for calls that take time (stop's grace period, an ask or wait
// of minutes): a person at a terminal sees that agentctl is waiting, on
// what, and for how long, instead of a silent prompt. Only on a terminal:
// a pipe or a file gets nothing, so scripts and logs stay clean.

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressDelay is how long a call runs before the spinner appears: most
// calls answer well within it, and a spinner that flashes is noise.
const progressDelay = 300 * time.Millisecond

// progressTick is how often the spinner and its clock move.
const progressTick = 100 * time.Millisecond

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// progress shows "⠋ what (12.3s)" on stderr while a call runs, when stderr
// is a terminal and the output is for a person (not --json). The returned
// stop erases the line; call it before printing the result.
func (e *env) progress(what string) (stop func()) {
	f, ok := e.stderr.(*os.File)
	if !ok || e.json || !isTerminal(f) {
		return func() {}
	}
	what = safeText(what) // it may name what a session controls (safe.go)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		timer := time.NewTimer(progressDelay)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
		}
		tick := time.NewTicker(progressTick)
		defer tick.Stop()
		shown := false
		for i := 0; ; i++ {
			line := fmt.Sprintf("%c %s (%.1fs)", spinnerFrames[i%len(spinnerFrames)], what, time.Since(start).Seconds())
			// One line: a line that wraps cannot be redrawn with \r.
			if w := terminalWidth(f); w > 1 {
				line = elide(line, w-1)
			}
			io.WriteString(f, "\r\x1b[K"+line)
			shown = true
			select {
			case <-done:
				if shown {
					io.WriteString(f, "\r\x1b[K")
				}
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// isTerminal says whether f is a terminal (golang.org/x/term, the same
// TCGETS check).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// terminalWidth is f's width in columns, or 0 when unknown.
func terminalWidth(f *os.File) int {
	cols, _ := windowSize(f)
	return cols
}
