// Package termmodel is agentd's model of a terminal: the screen a person
// would see, rendered from a program's output, and the pure rules an ask
// applies to it (what a prompt looks like, how many rows an echo takes).
// It knows nothing of sessions, workers or the wire, so it can be tested on
// recorded byte streams and reused by whatever reads a screen (asks,
// waits, snapshots, `logs --plain`, agent states).
//
// The screen is modelled with github.com/charmbracelet/x/vt rather than
// github.com/hinshun/vt10x. vt handles grapheme clusters and wide
// characters, the alternate screen, scroll regions and the modes modern
// agents use, it reports mode changes through callbacks (used to track
// bracketed paste, DECSET 2004), and it answers the terminal's queries
// (device attributes, cursor position reports) the way a real terminal does,
// which TUIs such as coding agents wait for at start. vt10x is unmaintained
// since 2022, does not answer queries and mis-measures wide characters.
// The owner passes a reply func to New; the session worker writes replies
// to the PTY, dropping them rather than blocking the output path if the
// program stops reading.
// vt is slow at scrolling (it copies the screen on every line feed), so
// output is queued (Queue) and fed lazily, shortening long runs of plain
// text to the lines that stay visible (see fastpath.go), except that a
// terminal query is fed at once: programs wait for its answer. The screen
// keeps no scrollback.
//
// While an ask or a wait reads rows that scroll off, the screen keeps their
// text (StartCapture, scrollcapture.go), numbering rows absolutely.
package termmodel
