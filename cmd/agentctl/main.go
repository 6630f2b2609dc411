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
	// the daemon.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { cancel(interrupted{(<-sigs).(syscall.Signal)}) }()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}
