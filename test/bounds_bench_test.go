package test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/rpc"
)

// The attacks of issue 21 on memory and bounds, each against a daemon with
// the default memory_budget (256 MiB): the daemon's peak RSS during the
// attack and its RSS 10 s after it ends. Run one with
//
//	go test -run '^$' -bench 'Attack' -benchtime 1x ./test
//
// BENCHMARKS.md has the figures beside those of the tree before the fix.

// sampleRSS notes the daemon's peak RSS every 50 ms until stop is closed.
func sampleRSS(b *testing.B, pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, rssOf(b, pid))
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// readFrames reads n frames off c (any deadline is c's), returning how
// many were errors of code.
func readFrames(b *testing.B, c net.Conn, n int, code string) (coded int) {
	fr := rpc.NewFrameReader(c)
	for range n {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		body, err := fr.ReadFrame()
		if err != nil {
			b.Fatalf("reading answers: %v", err)
		}
		if strings.Contains(string(body[:min(len(body), 200)]), `"code":"`+code+`"`) {
			coded++
		}
	}
	return coded
}

// BenchmarkAttackPipelinedSmallLogs is D1: 16 connections each pipeline
// 256 agent.logs calls (limit 60, about 240 KiB an answer: each under the
// old large-answer threshold) and read nothing for 5 s, then read
// everything.
func BenchmarkAttackPipelinedSmallLogs(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	pid := d.cmd.Process.Pid
	if out, errOut, code := h.agentctl("", "spawn", "big", "--", "sh", "-c", "head -c 31457280 /dev/zero | tr '\\0' 'y'; echo; echo the-end; exec sleep 3600"); code != 0 {
		b.Fatalf("spawn: %s %s", out, errOut)
	}
	if out, errOut, code := h.agentctl("", "wait", "big", "--until", "the-end", "--timeout", "300s"); code != 0 {
		b.Fatalf("wait: %s %s", out, errOut)
	}
	const conns, pipeline = 16, 256
	var peak, after int64
	busy := 0
	for b.Loop() {
		stop := make(chan struct{})
		peakc := sampleRSS(b, pid, stop)
		var cs []net.Conn
		for range conns {
			c, err := net.Dial("unix", h.socket)
			if err != nil {
				b.Fatal(err)
			}
			cs = append(cs, c)
			go func() {
				for i := range pipeline {
					body := `{"id":` + strconv.Itoa(i+1) + `,"method":"agent.logs","params":{"name":"big","from_seq":` + strconv.Itoa(i*60) + `,"limit":60}}`
					c.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...))
				}
			}()
		}
		time.Sleep(5 * time.Second) // the attack: nothing read
		for _, c := range cs {
			busy += readFrames(b, c, pipeline, "busy")
			c.Close()
		}
		close(stop)
		peak = <-peakc
		time.Sleep(10 * time.Second)
		after = rssOf(b, pid)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(after)/1e6, "after10s-MB")
	b.ReportMetric(float64(busy), "busy")
}

// BenchmarkAttackChannelQueues is D2: one listener registers 128 channels
// and reads nothing; another client pushes 64 KiB messages to each until
// it is busy; then the listener leaves.
func BenchmarkAttackChannelQueues(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	pid := d.cmd.Process.Pid
	const channels = 128
	msg, _ := json.Marshal(strings.Repeat("m", 64<<10-16))
	var peak, after int64
	queued := 0
	for b.Loop() {
		stop := make(chan struct{})
		peakc := sampleRSS(b, pid, stop)
		// The listener: raw, so nothing reads its notifications. Channels
		// bound to no session need no proof; their ids name them.
		l, err := net.Dial("unix", h.socket)
		if err != nil {
			b.Fatal(err)
		}
		fr := rpc.NewFrameReader(l)
		for i := range channels {
			body := fmt.Sprintf(`{"id":%d,"method":"channel.register_channel","params":{"channel_id":"q%d"}}`, i+1, i)
			l.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...))
			if ans, err := fr.ReadFrame(); err != nil || strings.Contains(string(ans), `"error"`) {
				b.Fatalf("register: %s %v", ans, err)
			}
		}
		p, err := net.Dial("unix", h.socket)
		if err != nil {
			b.Fatal(err)
		}
		pr := rpc.NewFrameReader(p)
		for i := range channels {
			for n := 0; ; n++ {
				body := fmt.Sprintf(`{"id":1,"method":"channel.push_to_channel","params":{"channel_id":"q%d","message":%s}}`, i, msg)
				p.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...))
				ans, err := pr.ReadFrame()
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(string(ans), `"error"`) {
					break
				}
				queued++
			}
		}
		time.Sleep(time.Second)
		l.Close()
		p.Close()
		time.Sleep(time.Second)
		close(stop)
		peak = <-peakc
		time.Sleep(9 * time.Second)
		after = rssOf(b, pid)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(after)/1e6, "after10s-MB")
	b.ReportMetric(float64(queued), "queued")
}

// BenchmarkAttackHugeArgv is D3: 64 spawns each with 14 arguments of
// 100,000 bytes, then 20 lists.
func BenchmarkAttackHugeArgv(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	pid := d.cmd.Process.Pid
	big := strings.Repeat("x", 100_000)
	var peak, after int64
	spawned, listFailed := 0, 0
	for b.Loop() {
		stop := make(chan struct{})
		peakc := sampleRSS(b, pid, stop)
		for i := range 64 {
			args := []string{"spawn", fmt.Sprintf("huge%d", i), "--", "sleep", "3600"}
			for range 14 {
				args = append(args, big)
			}
			if _, _, code := h.agentctl("", args...); code == 0 {
				spawned++
			}
		}
		for range 20 {
			if _, _, code := h.agentctl("", "list"); code != 0 {
				listFailed++
			}
		}
		close(stop)
		peak = <-peakc
		h.stopAll()
		time.Sleep(10 * time.Second)
		after = rssOf(b, pid)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(after)/1e6, "after10s-MB")
	b.ReportMetric(float64(spawned), "spawned")
	b.ReportMetric(float64(listFailed), "lists-failed")
}

// BenchmarkAttackCombiningMarks is D10: a program prints 45 rows of a and
// then 150,000 combining accents; snapshots of it follow.
func BenchmarkAttackCombiningMarks(b *testing.B) {
	h := newHomeTB(b)
	h.startDaemon(nil)
	prog := `for i in $(seq 45); do printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n'; done; python3 -c 'import sys; sys.stdout.write("a" + "\u0301"*150000); sys.stdout.flush()'; echo; echo the-end; exec sleep 3600`
	if out, errOut, code := h.agentctl("", "spawn", "zalgo", "--", "sh", "-c", prog); code != 0 {
		b.Fatalf("spawn: %s %s", out, errOut)
	}
	h.agentctl("", "wait", "zalgo", "--until", "the-end", "--timeout", "60s")
	var size, failed int
	for b.Loop() {
		out, _, code := h.agentctl("", "snapshot", "zalgo", "--json")
		if code != 0 {
			failed++
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "snapshot-bytes")
	b.ReportMetric(float64(failed), "failed")
}

// BenchmarkAttackConnectionFlood is the connection bound: one process
// holds 600 connections (past its share, and past max_connections with the
// ones being refused) while another runs agentctl version 20 times.
func BenchmarkAttackConnectionFlood(b *testing.B) {
	h := newHomeTB(b)
	h.startDaemon(nil)
	var refused int
	for b.Loop() {
		var cs []net.Conn
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 600 {
				c, err := net.Dial("unix", h.socket)
				if err != nil {
					continue
				}
				cs = append(cs, c)
			}
		}()
		<-done
		for range 20 {
			cmd := exec.Command(bin.agentctl, "version")
			cmd.Env = h.env()
			if out, err := cmd.CombinedOutput(); err != nil {
				refused++
				_ = out
			}
		}
		for _, c := range cs {
			c.Close()
		}
	}
	b.ReportMetric(float64(refused), "version-refused-of-20")
	_ = io.EOF
}
