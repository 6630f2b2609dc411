//go:build race

package session

// raceEnabled: the race detector makes every worker several times slower;
// the ask oracle, which times nothing but runs sixteen interactive programs
// at once, skips under it and make test runs it again without it.
const raceEnabled = true
