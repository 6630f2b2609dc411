//go:build !mangen

package main

// extraVerbs are verbs of special builds: none in the agentctl people run
// (see man.go for the man page generator of `make man`).
func extraVerbs() []namedVerb { return nil }
