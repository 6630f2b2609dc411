package rpc

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// BenchmarkFrameRoundTrip writes a typical request frame to one end of a
// Unix socket pair and reads it at the other.
func BenchmarkFrameRoundTrip(b *testing.B) {
	body := []byte(goldenFrames[0].body)
	fds, err := socketpair()
	if err != nil {
		b.Skip("socketpair:", err)
	}
	w, r := fds[0], fds[1]
	defer w.Close()
	defer r.Close()
	fr := NewFrameReader(r)
	errc := make(chan error, 1)
	b.SetBytes(int64(HeaderSize + len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if err := WriteFrame(w, body); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range b.N {
		got, err := fr.ReadFrame()
		if err != nil || len(got) != len(body) {
			b.Fatalf("ReadFrame = %d bytes, %v; want %d bytes", len(got), err, len(body))
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// socketpair returns two connected Unix stream sockets.
func socketpair() ([2]net.Conn, error) {
	var conns [2]net.Conn
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return conns, err
	}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f) // dups fd
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			}
			return conns, err
		}
		conns[i] = c
	}
	return conns, nil
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(goldenFrames[0].body)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
