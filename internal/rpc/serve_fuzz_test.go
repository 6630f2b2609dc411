package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"
)

// framesOf is the bytes of one frame per body, as a client sends them.
func framesOf(bodies ...string) []byte {
	var buf bytes.Buffer
	for _, b := range bodies {
		WriteFrame(&buf, []byte(b))
	}
	return buf.Bytes()
}

// FuzzServeGivesBudgetBack feeds any bytes to a serving connection with a
// budget (requests handled inline and pooled, an upgrade refused, frames
// that are not requests, broken and truncated ones) and insists that once
// Serve has returned the budget holds nothing: every frame and every answer
// gave its bytes back, exactly once (a second give would drive it below 0).
func FuzzServeGivesBudgetBack(f *testing.F) {
	f.Add(framesOf(`{"id":1,"method":"x.echo","params":{"a":1}}`))
	f.Add(framesOf(`{"id":1,"method":"x.inline"}`, `{"id":2,"method":"x.echo"}`, `{"id":3,"method":"x.fail"}`))
	f.Add(framesOf(`{"id":4,"method":"x.up"}`, `{"id":5,"method":"x.echo"}`))
	f.Add(framesOf(`{"id":2,"result":1}`, `not json`, `{"method":"x.note"}`, `{"id":0,"method":"x.echo"}`))
	f.Add(append(framesOf(`{"id":6,"method":"x.echo"}`), 0x10, 0, 0))            // a header cut short
	f.Add(append(framesOf(`{"id":7,"method":"x.big"}`), 0xff, 0xff, 0xff, 0x7f)) // over the cap
	f.Add(append([]byte{40, 0, 0, 0}, `{"id":8,"method":"x.echo"`...))           // a body cut short
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		fds, err := socketpair()
		if err != nil {
			t.Skip("socketpair:", err)
		}
		server, client := fds[0], fds[1]
		defer client.Close()
		b := NewBudget(2 * MaxFrameSize)
		sc := NewServerConn(server, ServeOptions{
			Budget:      b,
			ReadTimeout: 2 * time.Second,
			Inline:      func(m string) bool { return m == "x.inline" },
			MayUpgrade:  func(m string) bool { return m == "x.up" },
		})
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, client); close(drained) }()
		go func() {
			client.Write(in)
			client.(*net.UnixConn).CloseWrite()
		}()
		sc.Serve(context.Background(), func(ctx context.Context, req *Request) (any, error) {
			switch req.Method {
			case "x.fail", "x.up":
				return nil, Errorf(CodeInvalidParams, "no")
			case "x.big":
				l, err := Reserve(ctx, 64<<10)
				if err != nil {
					return nil, err
				}
				return WithLease(json.RawMessage(`"big"`), l), nil
			}
			return req.Params, nil
		})
		<-drained
		if n := b.InUse(); n != 0 {
			t.Fatalf("after Serve returned the budget holds %d bytes, want 0 (input %q)", n, in)
		}
	})
}
