//go:build !amd64 && !arm64

package ttyready

// supported is false: the system call numbers and memory layouts of this
// architecture have not been checked here, so every look is unknown.
const supported = false

var legacySyscalls = map[int]sysInfo{}
