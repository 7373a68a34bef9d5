package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// BenchmarkTemporalSweep runs a dataset sweep of the reasoning debate (two
// rounds of three agents asked at once) with a fixed latency per call,
// locally and on a Temporal dev server with 1, 2 and 4 workers, and
// reports each wall time against the critical path (rounds x latency x
// batches of --parallel runs) and the local sweep's, and the requests per
// minute achieved against the endpoint's declared limit. Runs:
// $RUNNER_BENCH_RUNS (default 40). Needs the Temporal CLI (see
// temporalCLI); run with -benchtime=1x.
func BenchmarkTemporalSweep(b *testing.B) {
	runs := 40
	if v, err := strconv.Atoi(os.Getenv("RUNNER_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	const (
		latency  = 100 * time.Millisecond
		parallel = 8
		rpm      = 3000
		rounds   = 2
	)
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go tool not on PATH")
	}
	bin := filepath.Join(b.TempDir(), "runner")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	addr := devServer(b)
	dataset := filepath.Join(b.TempDir(), "dataset.jsonl")
	var lines []string
	for i := range runs {
		lines = append(lines, fmt.Sprintf(`{"question":"What is the result of %d+2*3+4-5*6?","expected":%d}`, i+1, i+1+6+4-30))
	}
	if err := os.WriteFile(dataset, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	spec := filepath.Join(b.TempDir(), "spec.yaml")
	// The example's library is embedded; only the endpoint changes.
	src, err := os.ReadFile(debateSpec)
	if err != nil {
		b.Fatal(err)
	}
	src = append(src, []byte(fmt.Sprintf(`
endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, requests_per_minute: %d}
models:
  default: {model: test-model, endpoint: local}
`, rpm))...)
	if err := os.WriteFile(spec, src, 0o644); err != nil {
		b.Fatal(err)
	}
	calls := runs * rounds * 3
	critical := time.Duration((runs+parallel-1)/parallel*rounds) * latency
	sweep := func(b *testing.B, extra ...string) time.Duration {
		srv := llmtest.New(b, func(r llmtest.Request) llmtest.Reply {
			rep := solver(r)
			rep.Delay = latency
			return rep
		})
		args := append([]string{"run", spec, "--dataset", dataset, "--runs-dir", b.TempDir(), "-q", "--no-cache", "--parallel", strconv.Itoa(parallel)}, extra...)
		var queue string
		for i, a := range extra {
			if a == "--task-queue" {
				queue = extra[i+1]
			}
		}
		if queue != "" {
			n, _ := strconv.Atoi(strings.TrimPrefix(queue, "bench-"))
			for range n {
				startWorker(b, bin, addr, queue, srv)
			}
		}
		start := time.Now()
		var stdout, stderr strings.Builder
		vars := e2eEnv(srv)
		code := run(args, &env{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(k string) string { return vars[k] }})
		wall := time.Since(start)
		if code != exitcode.OK || srv.Count() != calls {
			b.Fatalf("sweep %v: exit %d, %d requests (want %d)\n%s\n%s", extra, code, srv.Count(), calls, stdout.String(), stderr.String())
		}
		return wall
	}
	local := sweep(b)
	b.ReportMetric(local.Seconds(), "local-s")
	b.ReportMetric(float64(local)/float64(critical), "local/critical")
	b.ReportMetric(float64(calls)/local.Minutes()/rpm, "local-rpm/limit")
	for _, workers := range []int{1, 2, 4} {
		wall := sweep(b, "--temporal", addr, "--task-queue", fmt.Sprintf("bench-%d", workers))
		name := fmt.Sprintf("w%d", workers)
		b.ReportMetric(wall.Seconds(), name+"-s")
		b.ReportMetric(float64(wall)/float64(critical), name+"/critical")
		b.ReportMetric(float64(wall)/float64(local), name+"/local")
		b.ReportMetric(float64(calls)/wall.Minutes()/rpm, name+"-rpm/limit")
	}
}
