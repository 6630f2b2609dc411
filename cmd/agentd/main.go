// Command agentd is the per-user daemon that owns agent sessions and the X11
// screen, serving them over a Unix socket. `agentd worker` is the
// per-session worker mode of the same binary, `agentd desktop-worker` the
// per-desktop one.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	// SIGHUP reloads the config, as daemons do (its default would end
	// agentd, as closing the terminal of a foreground agentd did). It is
	// caught before the slow start-up so none is lost.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, hup)
	stop()
	os.Exit(code)
}
