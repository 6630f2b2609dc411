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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
