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
	// the daemon. Only verbs that can take long catch signals (verb.quick),
	// and most start catching them beside their first call, not before
	// it: signal.Notify starts a thread of its own, a third of a
	// millisecond that would otherwise come first. A signal before it is
	// caught (the returned channel is closed then) ends agentctl the
	// default way, as for a quick verb; the kernel closes the connection
	// and the daemon cancels the call. verb.streams wait for it.
	ctx, cancel := context.WithCancelCause(context.Background())
	catch := func() <-chan struct{} {
		ready := make(chan struct{})
		go func() {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
			close(ready)
			cancel(interrupted{(<-sigs).(syscall.Signal)})
		}()
		return ready
	}
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, catchSignals: catch}
	os.Exit(runEnv(ctx, e, os.Args[1:]))
}
