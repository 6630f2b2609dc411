//go:build mangen

package main

// The man pages, built by `make man` (go run -tags mangen ./cmd/agentctl
// __man DIR) from the same command tree as --help, so they cannot drift
// from it. Behind a build tag: the man page generator (cobra/doc and its
// markdown renderer) stays out of the agentctl that people run.

import (
	"context"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra/doc"

	"github.com/agentd/agentd/internal/buildinfo"
)

func extraVerbs() []namedVerb { return []namedVerb{{"__man", manVerb}} }

func manVerb() command {
	return verb[*selfPrinted]{
		use: "__man DIR", summary: "write the man pages into DIR", hidden: true,
		args: exactArgs(1),
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			// The whole tree: this run's has only __man.
			root := newRoot(&env{stdin: e.stdin, stdout: io.Discard, stderr: io.Discard}, nil)
			root.Long += "\n\nEXIT STATUS\n" + exitTable()
			// The socket's default is computed from the environment of
			// whoever runs agentctl; a page shows the rule, not the path
			// of the machine that made it.
			root.PersistentFlags().Lookup("socket").DefValue = "$AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock"
			// Reproducible builds set the date they were made.
			date := time.Now()
			if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
				date = time.Unix(s, 0).UTC()
			}
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return nil, err
			}
			// No Title: each page is titled by its own command
			// (AGENTCTL-SPAWN), as cobra does when it is left empty.
			header := &doc.GenManHeader{Section: "1", Date: &date,
				Source: "agentd " + buildinfo.Version, Manual: "agentd manual"}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return nil, err
			}
			return nil, errPrinted // the pages are the output
		},
	}
}
