package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkAgentctlStartupVsHelloWorld runs agentctl's commands as whole
// processes beside a hello-world Go binary, interleaved in one run so the
// machine's load hits both alike. The bar (issue 10): every non-MCP command
// at most 2x the hello-world binary, which holds only while the MCP SDK
// stays out of agentctl (agentctl-mcp has it). Reported: each command's
// median and its ratio to hello-world's.
func BenchmarkAgentctlStartupVsHelloWorld(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o600)
	hello := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", hello, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build hello world: %v\n%s", err, out)
	}
	h := newHomeTB(b)
	h.startDaemon(nil)
	runs := []struct {
		name string
		argv []string
	}{
		{"hello-world", []string{hello}},
		{"version", []string{bin.agentctl, "version"}},
		{"list", []string{bin.agentctl, "list"}},
		{"status-missing", []string{bin.agentctl, "status", "nobody"}},
		// A verb that can take long, so it catches signals (verb.quick).
		{"ask-missing", []string{bin.agentctl, "ask", "nobody", "hi"}},
		{"help", []string{bin.agentctl, "--help"}},
	}
	lat := make([][]time.Duration, len(runs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, r := range runs {
			cmd := exec.Command(r.argv[0], r.argv[1:]...)
			cmd.Env = h.env()
			start := time.Now()
			cmd.Run() // status-missing and ask-missing exit 13 by design
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	b.StopTimer()
	median := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	base := median(lat[0])
	b.ReportMetric(float64(base.Microseconds())/1000, "hello-ms")
	for k, r := range runs[1:] {
		m := median(lat[k+1])
		b.ReportMetric(float64(m.Microseconds())/1000, r.name+"-ms")
		b.ReportMetric(float64(m)/float64(base), r.name+"-x")
	}
}
