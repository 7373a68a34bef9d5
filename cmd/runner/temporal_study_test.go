package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/durable"
)

// TestTemporalStudyKilledAndContinued runs a study (Du et al.'s debate and
// its single-agent baseline, one scripted model, 12 arithmetic items) on
// a Temporal dev server with one worker, SIGKILLs the submitting command
// halfway, continues it with `runner study DIR` (the directory records
// where it is made), and checks: the table, CSV and JSON are those of the
// same study made locally; every call went through the worker (the
// command's own endpoint is never called); and no call was asked twice,
// since the workflows went on while the command was dead.
func TestTemporalStudyKilledAndContinued(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a Temporal dev server; skipped with -short")
	}
	addr := devServer(t)
	bin := runnerBinary(t)
	ex, err := filepath.Abs("../../examples/protocols/du-society-of-minds")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "study.yaml")
	src := fmt.Sprintf(`version: 1
name: du-temporal
dataset: gen:arithmetic?n=12&seed=3
specs:
  - {path: %s, label: single-agent}
  - {path: %s, label: debate}
baseline: single-agent
models: [solver-a]
resamples: 500
`, filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}

	// The same study made locally.
	refSrv := llmtest.New(t, studyHandler(0))
	refDir := filepath.Join(t.TempDir(), "ref")
	cmd := exec.Command(bin, "study", path, "--dir", refDir, "-q")
	cmd.Env = studyEnv(refSrv, t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("local study: %v\n%s", err, out)
	}
	refCSV, err := os.ReadFile(filepath.Join(refDir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}

	// On Temporal: the worker calls srv; the command has an endpoint of
	// its own that no call may reach.
	srv := llmtest.New(t, studyHandler(20*time.Millisecond))
	local := llmtest.New(t, studyHandler(0))
	startWorker(t, bin, addr, "study", srv)
	dir := filepath.Join(t.TempDir(), "study")
	env := studyEnv(local, t.TempDir())
	killStudyAt(t, exec.Command(bin, "study", path, "--dir", dir, "-q", "--temporal", addr, "--task-queue", "study"), env, srv, refSrv.Count()/2, 2*time.Minute)
	asked := srv.Count()
	if _, ok, err := durable.ReadRecord(dir); err != nil || !ok {
		t.Fatalf("the study directory does not record where the study is made: %v", err)
	}

	cmd = exec.Command(bin, "study", dir)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("continued study: %v\n%s", err, stderr.String())
	}
	t.Logf("killed after %d calls; %d in all on the worker, %d in the local study\n%s", asked, srv.Count(), refSrv.Count(), stdout.String())
	if local.Count() != 0 {
		t.Errorf("the submitting command called its own endpoint %d times", local.Count())
	}
	if srv.Count() != refSrv.Count() {
		t.Errorf("the study on Temporal, killed and continued, sent %d calls; made locally it sends %d", srv.Count(), refSrv.Count())
	}
	gotCSV, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := withoutSeconds(t, string(refCSV)), withoutSeconds(t, string(gotCSV)); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the study on Temporal has another table than the local one:\n%s\nvs\n%s", gotCSV, refCSV)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(md) {
		t.Errorf("the printed table is not results.md:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(string(md), "| debate | solver-a | 12 |") {
		t.Errorf("results.md lacks the debate's row:\n%s", md)
	}
}
