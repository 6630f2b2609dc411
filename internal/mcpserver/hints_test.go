package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEveryToolsHints: every tool both servers serve declares all four of
// MCP's behaviour hints, as tools/list gives them to a client, and each is
// the one its behaviour calls for: read-only tools change nothing; an
// acting tool is destructive when it can undo or overwrite (typing into a
// program, ending one), idempotent when a second identical call changes
// nothing more, open-world when it reaches beyond agentd's own state (a
// program it starts or types into, the screen's applications, the Claude
// Code session a push lands in).
func TestEveryToolsHints(t *testing.T) {
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	look := hints{readOnly: true}
	lookSame := hints{readOnly: true, idempotent: true}
	want := map[string]hints{
		"list": lookSame, "status": lookSame, "snapshot": lookSame, "logs": lookSame, "screen": lookSame, "desktops": lookSame, "channels": lookSame,
		"wait": look, "screenshot": look, "zoom": look, "cursor_position": look,
		"spawn":       {openWorld: true},
		"ask":         {destructive: true, openWorld: true},
		"send":        {destructive: true, openWorld: true},
		"resize":      {idempotent: true},
		"stop":        {destructive: true, idempotent: true},
		"restart":     {destructive: true, openWorld: true},
		"rm":          {destructive: true, idempotent: true},
		"push":        {openWorld: true},
		"act":         {destructive: true, openWorld: true},
		"desktop_new": {},
		"desktop_rm":  {destructive: true, idempotent: true},
		"reply":       {},
	}
	all := (&tools{cfg: Config{Yes: true}}).list()
	all = append(all, typedTool(tool{name: "reply"}, (&bridge{}).reply))
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if err := addTools(srv, all, 0); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tl := range res.Tools {
		w, ok := want[tl.Name]
		if !ok {
			t.Errorf("%s: no hints stated in this test; say what it should declare", tl.Name)
			continue
		}
		seen++
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations %+v, want every hint set (an unset destructiveHint or openWorldHint reads as true)", tl.Name, a)
			continue
		}
		got := hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
		if got != w {
			t.Errorf("%s: hints %+v, want %+v", tl.Name, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d tools listed with hints, want %d", seen, len(want))
	}
}
