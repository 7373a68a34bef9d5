package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/batchtest"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestRunBatchFlag runs the reasoning-debate dataset with --batch against
// the fake OpenAI Batch API: every call is answered from a batch, progress
// tells the batches as JSON lines, each run's result.json counts its calls
// as batched at half the list price, and its report says so.
func TestRunBatchFlag(t *testing.T) {
	window, poll := sweep.BatchWindow, sweep.BatchPoll
	sweep.BatchWindow, sweep.BatchPoll = 40*time.Millisecond, 2*time.Millisecond
	t.Cleanup(func() { sweep.BatchWindow, sweep.BatchPoll = window, poll })
	srv := batchtest.New(t)
	runs := t.TempDir()
	code, _, stderr := invoke(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-batch-test", "RUNNER_BATCH_LOCAL": "1"},
		"run", debateSpec, "--dataset", datasetFile, "--batch", "--no-cache", "--runs-dir", runs, "--json")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if srv.Direct != 0 || srv.Submissions < 2 {
		t.Errorf("%d requests sent on their own, %d batches", srv.Direct, srv.Submissions)
	}
	if !strings.Contains(stderr, `"type":"sweep_batch"`) || !strings.Contains(stderr, `"Done":60`) {
		t.Errorf("no progress of the batches on stderr:\n%s", stderr)
	}
	sweeps, _ := filepath.Glob(filepath.Join(runs, "sweep-*"))
	if len(sweeps) != 1 {
		t.Fatalf("sweeps: %v", sweeps)
	}
	if _, err := os.Stat(filepath.Join(sweeps[0], "batches.json")); err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(sweeps[0], "*", "result.json"))
	if len(dirs) != 10 {
		t.Fatalf("%d results, want 10", len(dirs))
	}
	res := readResult(t, filepath.Dir(dirs[0]))
	total := res["usage"].(map[string]any)["total"].(map[string]any)
	if total["batch_calls"] != float64(6) || total["calls"] != float64(6) {
		t.Errorf("usage: %v", total)
	}
	report, err := os.ReadFile(filepath.Join(filepath.Dir(dirs[0]), "report.md"))
	if err != nil || !strings.Contains(string(report), "Batch: 6 of 6 calls were answered in a provider's batch") {
		t.Errorf("report.md says nothing of the batch (%v)", err)
	}
}
