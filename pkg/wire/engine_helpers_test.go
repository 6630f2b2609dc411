package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/agentd/agentd/internal/rpc"
)

// The engine's own tests (internal/rpc) hold the frame and message tables;
// these helpers serve the tests here, which drive the engine through the
// contract's client.

// describeIncoming prints a decoded message for a failure report.
func describeIncoming(in rpc.Incoming) string {
	switch {
	case in.Response != nil && in.Response.Error != nil:
		return fmt.Sprintf("Response{ID:%d Error:%+v}", in.Response.ID, *in.Response.Error)
	case in.Response != nil:
		return fmt.Sprintf("Response{ID:%d Result:%s}", in.Response.ID, in.Response.Result)
	case in.Notification != nil:
		return fmt.Sprintf("Notification{Method:%q Params:%s}", in.Notification.Method, in.Notification.Params)
	}
	return "Incoming{}"
}

// describe prints a notification for a failure report.
func describe(n Notification) string {
	return fmt.Sprintf("Notification{Method:%q Params:%s}", n.Method, n.Params)
}

// maxBody is a valid JSON body of exactly MaxFrameSize bytes.
var maxBody = sync.OnceValue(func() []byte {
	b := bytes.Repeat([]byte("a"), MaxFrameSize)
	b[0], b[len(b)-1] = '"', '"'
	return b
})

// header is a frame header announcing n bytes.
func header(n uint32) []byte {
	return binary.LittleEndian.AppendUint32(nil, n)
}

func cat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}
