//go:build race

package rpc

// raceEnabled reports whether the race detector is on: it disables some
// compiler optimisations, so allocation bounds are looser under it.
const raceEnabled = true
