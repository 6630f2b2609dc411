package test

import (
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAgentctlVersion runs `agentctl version` as a whole process
// against an idle daemon. The bar: median wall time at most 10 ms.
func BenchmarkAgentctlVersion(b *testing.B) {
	h := newHomeTB(b)
	h.startDaemon(nil)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin.agentctl, "version")
		cmd.Env = h.env()
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("agentctl version: %v\n%s", err, out)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
}

// BenchmarkIdleDaemonRSS reports the resident memory of an idle daemon that
// has answered a few requests. The bar: at most 20 MB.
func BenchmarkIdleDaemonRSS(b *testing.B) {
	h := newHomeTB(b)
	d := h.startDaemon(nil)
	for i := 0; i < 10; i++ {
		h.hello()
	}
	b.ResetTimer()
	var rss float64
	for i := 0; i < b.N; i++ {
		rss = rssMB(b, d.cmd.Process.Pid)
	}
	b.ReportMetric(rss, "rss-MB")
}

// rssMB reads a process's resident set size from /proc, in MB.
func rssMB(tb testing.TB, pid int) float64 {
	tb.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
