// Package limits holds the bounds and shapes that several layers must agree
// on and that belong to none of them: the longest Unix socket path (the
// daemon, its command and the config all refuse a longer one) and the shape
// of a name (sessions, desktops and the channels bound to sessions). It is a
// leaf: it imports nothing of agentd, so the wire and the domains can both
// use it.
package limits

import "regexp"

// MaxSocketPath is the longest path a Unix socket address holds: sun_path is
// 108 bytes with the terminating NUL.
const MaxSocketPath = 107

// MaxNameLen is the longest session or desktop name.
const MaxNameLen = 63

// NamePattern is the shape of a session or desktop name: lower-case letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most
// MaxNameLen characters, so a name is safe as a path component ("." and ".."
// cannot match).
const NamePattern = `^[a-z0-9][a-z0-9._-]{0,62}$`

var nameRE = regexp.MustCompile(NamePattern)

// ValidName reports whether name has NamePattern's shape.
func ValidName(name string) bool { return nameRE.MatchString(name) }
