package session

import "github.com/agentd/agentd/pkg/termmodel"

// PlainText renders a session's recorded output as the text a person saw
// go by in its terminal (termmodel.PlainText), fed with the session's
// events. It is what `agentctl logs --plain` prints.
type PlainText struct {
	*termmodel.PlainText
}

// NewPlainText returns a renderer for a terminal of the given size (the
// session's, where the read starts; resize events change it); a size that
// is not valid is the default.
func NewPlainText(cols, rows int) *PlainText {
	if validateSize(cols, rows) != nil {
		cols, rows = DefaultCols, DefaultRows
	}
	return &PlainText{termmodel.NewPlainText(cols, rows)}
}

// Write feeds one event: output is drawn, a resize resizes; other events
// change nothing. It returns the lines that scrolled off, if any (see
// termmodel.PlainText.Output).
func (p *PlainText) Write(ev Event) string {
	switch ev.Type {
	case EventOutput:
		return p.Output(ev.Data)
	case EventResize:
		if validateSize(ev.Cols, ev.Rows) == nil {
			p.Resize(ev.Cols, ev.Rows)
		}
	}
	return ""
}
