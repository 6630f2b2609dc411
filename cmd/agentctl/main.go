// Command agentctl is the thin client of agentd: it turns its arguments into
// one request, prints the answer, and exits with a status that says how it
// went (the table is in `agentctl --help` and the README).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The signal is the context's cause, so run can exit 128+signal (130
	// for Ctrl-C) after closing the connection, which cancels the call in
	// the daemon. Only verbs that can take long catch signals (verb.quick).
	ctx, cancel := context.WithCancelCause(context.Background())
	catch := func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		go func() { cancel(interrupted{(<-sigs).(syscall.Signal)}) }()
	}
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, catchSignals: catch}
	os.Exit(runEnv(ctx, e, os.Args[1:]))
}
