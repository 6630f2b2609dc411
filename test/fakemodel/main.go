// Command fakemodel serves internal/fakemodel on a TCP address, for a
// person who wants to watch a real agent CLI play a script by hand (the
// tests run the server in-process instead). Each request is printed to
// stderr as one line, and with -bodies its body too.
//
//	unshare -n sh -c 'ip link set lo up; go run ./test/fakemodel -script s.json & sleep 1; claude'
//
// The script file is a fakemodel.Script as JSON:
//
//	{"Turns": [{"Prompt": "hello", "Steps": [{"Text": "Hi."}]},
//	           {"Prompt": "touch", "Steps": [{"Tool": {"Name": "Bash", "Input": {"command": "touch x"}}}, {"Text": "Done."}]}]}
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/agentd/agentd/internal/fakemodel"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8765", "address to serve on")
	scriptFile := fs.String("script", "", "the script, a fakemodel.Script as JSON (none: every prompt gets a fallback text)")
	bodies := fs.Bool("bodies", false, "print each request's body too")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var script fakemodel.Script
	if *scriptFile != "" {
		b, err := os.ReadFile(*scriptFile)
		if err == nil {
			err = json.Unmarshal(b, &script)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fakemodel: reading the script %s: %v\n", *scriptFile, err)
			return 2
		}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "fakemodel: %v\n", err)
		return 1
	}
	srv := fakemodel.New(script)
	var mu sync.Mutex // guards seen and the printing
	seen := 0
	fmt.Fprintf(stderr, "fakemodel: serving on http://%s\n", l.Addr())
	err = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		mu.Lock()
		defer mu.Unlock()
		reqs := srv.Requests()
		for _, q := range reqs[seen:] {
			fmt.Fprintln(stderr, q)
			if *bodies {
				fmt.Fprintf(stderr, "%s\n", q.Body)
			}
		}
		seen = len(reqs)
	}))
	fmt.Fprintf(stderr, "fakemodel: %v\n", err)
	return 1
}
