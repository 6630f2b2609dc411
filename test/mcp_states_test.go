package test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSessionResourcesAndStateSubscription: agentctl mcp serves the
// sessions as resources (agentd://sessions, agentd://sessions/NAME) and a
// client subscribed to them hears of every state change agentd records
// (here a session's spawn and exit) as notifications/resources/updated,
// also after agentd restarts. (A bad address is refused: resources_test.go;
// under MCP 2026-07-28 the SDK's Subscribe reports it only asynchronously.)
func TestMCPSessionResourcesAndStateSubscription(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh")

	var mu sync.Mutex
	var updates []string
	updated := func(uri string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, u := range updates {
			if u == uri {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin.agentctl, "mcp")
	cmd.Env = h.env()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updates = append(updates, req.Params.URI)
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != "agentd://sessions" {
		t.Fatalf("resources: %+v, %v", rs, err)
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(ts.ResourceTemplates) != 1 || ts.ResourceTemplates[0].URITemplate != "agentd://sessions/{name}" {
		t.Fatalf("resource templates: %+v, %v", ts, err)
	}
	read := func(uri string) string {
		t.Helper()
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("read %s: %+v, %v", uri, r, err)
		}
		return r.Contents[0].Text
	}
	if s := read("agentd://sessions"); !strings.Contains(s, `"name": "s1"`) {
		t.Errorf("agentd://sessions does not list s1:\n%s", s)
	}
	if s := read("agentd://sessions/s1"); !strings.Contains(s, `"status": "running"`) {
		t.Errorf("agentd://sessions/s1:\n%s", s)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentd://sessions/nosuch"}); err == nil {
		t.Error("reading a session that does not exist succeeded")
	}
	for _, uri := range []string{"agentd://sessions", "agentd://sessions/s2"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}

	// A session's life reaches its subscriber and the list's.
	h.ctl(0, "spawn", "s2", "--", "sh")
	await(t, 10*time.Second, "updates for s2's spawn", func() bool {
		return updated("agentd://sessions/s2") >= 1 && updated("agentd://sessions") >= 1
	})
	n := updated("agentd://sessions/s2")
	h.ctl(0, "stop", "s2")
	await(t, 10*time.Second, "an update for s2's exit", func() bool { return updated("agentd://sessions/s2") > n })
	if s := read("agentd://sessions/s2"); !strings.Contains(s, `"status": "exited"`) {
		t.Errorf("agentd://sessions/s2 after the stop:\n%s", s)
	}
	mu.Lock()
	if slices.Contains(updates, "agentd://sessions/s1") {
		t.Errorf("updates for s1, which changed nothing: %q", updates)
	}
	mu.Unlock()

	// agentd restarts: the subscription comes back by itself.
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(10 * time.Second); err != nil {
		t.Fatalf("agentd did not stop: %v", err)
	}
	h.startDaemon(nil)
	n = updated("agentd://sessions")
	h.ctl(0, "spawn", "s3", "--", "sh")
	await(t, 20*time.Second, "an update after agentd restarted", func() bool { return updated("agentd://sessions") > n })
}
