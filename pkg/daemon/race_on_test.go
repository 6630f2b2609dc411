//go:build race

package daemon

// raceEnabled: the race detector slows everything several times over and
// changes how the heap grows, so tests that measure either skip under it
// (make test runs them again without it).
const raceEnabled = true
