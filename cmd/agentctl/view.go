package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// viewResult is agent.view's answer and whether a browser was asked to
// open it.
type viewResult struct {
	*wire.ViewResult
	Opened bool `json:"opened"`
}

func viewVerb() command {
	var print bool
	return verb[*viewResult]{
		use: "view [NAME] [--print]", summary: "open the page of sessions and their terminals in a browser",
		long: "Ask agentd for its view — a page listing every session with its state, live, and showing a\n" +
			"session's terminal, live and read-only — and open it with xdg-open when there is a display,\n" +
			"else print its URL. NAME opens on that session's terminal. The page is served on 127.0.0.1\n" +
			"only; the URL holds a one-time token (any local user can reach 127.0.0.1: the token is the\n" +
			"gate), which the page trades for a cookie within two minutes. The view stops listening after\n" +
			"view_idle (15m) with no page open; run agentctl view again for a new link.",
		example: "  agentctl view\n  agentctl view w1 --print",
		args:    rangeArgs(0, 1), complete: completeSession, quick: true,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&print, "print", false, "print the URL instead of opening a browser")
		},
		run: func(ctx context.Context, e *env, args []string) (*viewResult, error) {
			var p wire.ViewParams
			if len(args) == 1 {
				p.Name = args[0]
			}
			return openView(ctx, e, p, print)
		},
		human: viewHuman("the view"),
	}
}

// openView asks agentd for a one-time link to p's page and opens it in
// the browser, unless print or --json says to print it.
func openView(ctx context.Context, e *env, p wire.ViewParams, print bool) (*viewResult, error) {
	res, err := e.client().View(ctx, p)
	if err != nil {
		return nil, err
	}
	r := &viewResult{ViewResult: res}
	if !print && !e.json {
		r.Opened = openBrowser(e.socket, res.URL)
	}
	return r, nil
}

// viewHuman says what was opened (page: "the view", "the desktop's
// page"), or prints the link to open.
func viewHuman(page string) func(io.Writer, *viewResult) error {
	return func(w io.Writer, r *viewResult) error {
		idle := time.Duration(r.IdleMS) * time.Millisecond
		if r.Opened {
			_, err := fmt.Fprintf(w, "opened %s (127.0.0.1:%d) in the browser; the view stops after %s with no page open\n", page, r.Port, idle)
			return err
		}
		_, err := fmt.Fprintf(w, "%s\n(open it within two minutes: the link works once; the view stops after %s with no page open)\n", r.URL, idle)
		return err
	}
}

// openBrowser opens url with xdg-open when there is a display to show a
// browser on; false when there is none or xdg-open is missing or fails to
// start. The token never goes on a command line, where any local user
// could read it (ps) and trade it first: xdg-open is given a 0600 page in
// the directory of agentd's socket (the user's own, 0700, as the client
// checked before asking) that sends the browser on to url, as Jupyter
// does.
func openBrowser(socket, url string) bool {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return false
	}
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		return false
	}
	if err := wire.CheckSocketDir(socket); err != nil {
		return false
	}
	page := filepath.Join(filepath.Dir(socket), "view-open.html")
	esc := html.EscapeString(url)
	body := "<!doctype html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0;url=" + esc + "\">\n" +
		"<title>agentd</title>\n<p><a href=\"" + esc + "\">open agentd's view</a> (the link works once)</p>\n"
	// A fresh file each time: O_EXCL after removing the last one, so
	// nothing else's file or link is written through.
	os.Remove(page)
	f, err := os.OpenFile(page, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false
	}
	_, werr := f.WriteString(body)
	if err := f.Close(); err != nil || werr != nil {
		return false
	}
	cmd := exec.Command(path, page)
	if err := cmd.Start(); err != nil {
		return false
	}
	// xdg-open hands the page to the browser and exits; agentctl does not
	// wait for the browser.
	cmd.Process.Release()
	return true
}
