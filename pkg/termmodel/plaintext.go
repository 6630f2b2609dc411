package termmodel

import "strings"

// PlainText renders a session's recorded output as the text a person saw
// go by in its terminal: each line as it scrolled off the top, then the
// screen as it was left — what `tmux capture-pane -p -S - -E -` gives of
// the same program. Escape sequences, carriage returns, backspaces and
// redrawn prompts are applied, not stripped, so a line edited in place
// reads as it ended. It is what `agentctl logs --plain` prints.
//
// Lines are handed out once: Lines gives those that have scrolled off
// since the last call (and, settled, the rows above the cursor, which a
// line-oriented program is done with), End the rest of the screen. Memory
// stays one screen and the lines not yet handed out. A PlainText is not
// safe for concurrent use; Close frees it.
type PlainText struct {
	scr          *Screen
	scrollRegion bool
	next         int    // the first absolute row not yet handed out
	queued       []byte // output not drawn yet
}

// NewPlainText returns a renderer for a terminal of the given size (the
// session's, where the read starts; Resize changes it). The size must be
// valid (at least 1x1).
func NewPlainText(cols, rows int) *PlainText {
	p := &PlainText{scr: New(cols, rows, nil)}
	p.scr.StartCapture()
	return p
}

// Output feeds program output. It returns the lines that scrolled off, if
// any: output is gathered and drawn in large pieces, where long runs of
// text take the fast path (see feedCapturing), so most calls return
// nothing until Lines or End.
func (p *PlainText) Output(data []byte) string {
	p.queued = append(p.queued, data...)
	if len(p.queued) < plainFeedAt {
		return ""
	}
	p.feed()
	return p.take(p.scr.capture.top())
}

// Resize changes the terminal's size, as the program's terminal did; the
// size must be valid.
func (p *PlainText) Resize(cols, rows int) {
	p.feed()
	p.scr.Resize(cols, rows)
	p.scr.drainScrollback()
}

// plainFeedAt is how much output PlainText gathers before drawing it.
const plainFeedAt = 256 << 10

// feed draws the gathered output.
func (p *PlainText) feed() {
	if len(p.queued) == 0 {
		return
	}
	_, rows := p.scr.Size()
	p.scr.feedCapturing(p.queued, !p.scrollRegion)
	p.scrollRegion = scrollRegionSet(p.scrollRegion, p.queued, rows)
	p.queued = p.queued[:0]
}

// Lines returns the lines scrolled off since the last call, and with
// settled also the rows above the cursor, each ending in a newline.
func (p *PlainText) Lines(settled bool) string {
	p.feed()
	to := p.scr.capture.top()
	if settled {
		to = max(to, p.scr.CursorRow())
	}
	return p.take(to)
}

// End returns every row not yet handed out down to the last one with
// text: the screen as the program left it.
func (p *PlainText) End() string {
	p.feed()
	_, h := p.scr.Size()
	top := p.scr.capture.top()
	var b strings.Builder
	last := -1
	for y := h - 1; y >= 0; y-- {
		if p.scr.rowText(&b, y) != "" {
			last = y
			break
		}
	}
	return p.take(top + last + 1)
}

// take hands out rows [next, to) as text and forgets the scrolled ones.
func (p *PlainText) take(to int) string {
	if to <= p.next {
		return ""
	}
	rows, _ := p.scr.Rows(p.next, to)
	p.next = to
	p.scr.capture.forget(to)
	if len(rows) == 0 {
		return ""
	}
	return strings.Join(rows, "\n") + "\n"
}

// Close frees the renderer.
func (p *PlainText) Close() { p.scr.Close() }
