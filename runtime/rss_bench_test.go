//go:build linux

package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/runtest"
)

// BenchmarkPeakRSSPerMessage runs the built runner command, as a user runs
// it, on the long conversation of BenchmarkMemoryPerMessage (8 agents,
// whispers, private thoughts, verdicts) against a local server answering at
// once, and reports the process's peak resident memory (the kernel's
// maxrss of the exited child: heap, stacks, the binary's pages, and what
// the run's end builds to write result.json and the reports) per kept
// message: the peak less that of a run of 10 turns (the least of three),
// over the messages of result.json, at 1,000, 5,000 and 20,000 turns
// (KB/msg@1k, @5k, @20k), the peaks themselves (peak-MB@...), and the
// process's CPU time per kept message (cpu-us/msg@...).
// RUNNER_RSS_BINARY=FILE measures that binary instead of building one, so
// that two builds can be measured in turn (interleaved rounds).
func BenchmarkPeakRSSPerMessage(b *testing.B) {
	var bin runtest.Binary
	defer bin.Remove()
	path := os.Getenv("RUNNER_RSS_BINARY")
	if path == "" {
		path = bin.Path(b, "../cmd/runner")
	}
	sizes := []int{1000, 5000, 20000}
	for b.Loop() {
		// The least of three: a short run's peak varies by a few MB.
		base, _, _ := peakRSS(b, path, 10)
		for range 2 {
			kb, _, _ := peakRSS(b, path, 10)
			base = min(base, kb)
		}
		for _, n := range sizes {
			peak, msgs, cpu := peakRSS(b, path, n)
			label := fmt.Sprintf("@%dk", n/1000)
			b.ReportMetric(float64(peak-base)/float64(msgs), "KB/msg"+label)
			b.ReportMetric(float64(peak)/1024, "peak-MB"+label)
			b.ReportMetric(float64(cpu.Microseconds())/float64(msgs), "cpu-us/msg"+label)
		}
		b.ReportMetric(float64(base)/1024, "peak-MB@10")
	}
}

// peakRSS runs the long conversation for turns turns with the binary at
// path and returns its peak resident memory in KB, the messages its
// result.json keeps and the CPU time (user and system) it took.
func peakRSS(b *testing.B, path string, turns int) (kb int64, messages int, cpu time.Duration) {
	b.Helper()
	tr := newConverseTransport(8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := tr.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, resp.Body)
	}))
	defer srv.Close()
	dir := b.TempDir()
	specPath := writeSpec(b, dir, fmt.Sprintf(longConverseSpec, turns))
	runs := filepath.Join(dir, "runs")
	cmd := exec.Command(path, "run", specPath, "--runs-dir", runs, "--cache-dir", filepath.Join(dir, "cache"), "-q")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY="+testKey)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("runner run (%d turns): %v\n%s", turns, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Skip("no rusage of the child on this system")
	}
	files, err := filepath.Glob(filepath.Join(runs, "*", "result.json"))
	if err != nil || len(files) != 1 {
		b.Fatalf("want one result.json under %s, found %v (%v)", runs, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	var res struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		b.Fatal(err)
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return ru.Maxrss, len(res.Messages), cpu
}
