package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestCompareMatrixCells: a --matrix sweep against a plain one pairs one
// cell of it, chosen with --cell, never its cells mixed; without --cell
// compare refuses and lists the cells; two cells of one matrix sweep
// compare with --cell and --cell-b; a cell the sweep did not run, or
// --cell where no sweep has a matrix, is a usage error.
func TestCompareMatrixCells(t *testing.T) {
	srv := llmtest.New(t, chancySolver(0.55, 0.85))
	runs := t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	_, stderr := mustRun(t, env, "run", duSpec, "--dataset", duData, "--matrix", "rounds=1,2", "--runs-dir", runs, "-q")
	matrix := sweepDir(t, stderr)
	_, stderr = mustRun(t, env, "run", duBaseline, "--dataset", duData, "--runs-dir", runs, "-q")
	baseline := sweepDir(t, stderr)
	_, stderr = mustRun(t, env, "run", duSpec, "--dataset", duData, "--runs-dir", runs, "-q")
	plain := sweepDir(t, stderr)

	for _, args := range [][]string{{matrix, baseline}, {baseline, matrix}, {matrix, baseline, "--json"}, {matrix, "--baseline", baseline, "--margin", "0.5"}} {
		code, _, stderr := invoke(t, env, append([]string{"compare"}, args...)...)
		if code != exitcode.Usage || !strings.Contains(stderr, "is a matrix sweep of 2 cells") || !strings.Contains(stderr, "--cell rounds=1, --cell rounds=2") {
			t.Errorf("compare %v: exit %d, want 2 naming the cells\n%s", args, code, stderr)
		}
	}

	sm, err := sweep.Load(matrix)
	if err != nil {
		t.Fatal(err)
	}
	// The cell rounds=2 is the plain debate (its default): the same
	// requests, so the same scores, item by item.
	stdout, _ := mustRun(t, env, "compare", matrix, plain, "--cell", "rounds=2", "--json")
	var res paired.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if res.Pairs != 20 || res.A.Cell != "rounds=2" || res.B.Cell != "" || res.AOnly+res.BOnly != 0 || res.A.Runs != 20 {
		t.Errorf("rounds=2 against the plain debate: pairs %d, cells %q %q, discordant %d+%d, A's runs %d", res.Pairs, res.A.Cell, res.B.Cell, res.AOnly, res.BOnly, res.A.Runs)
	}
	// The cell's runs are those of rounds=2 alone, line by line.
	for _, it := range res.Items {
		var want *float64
		for _, r := range sm.Runs {
			if r.Line == it.Line && r.Vars["rounds"] == "2" {
				want = r.Score
			}
		}
		if want == nil || it.ScoreA == nil || *want != *it.ScoreA {
			t.Errorf("line %d: A's score %v, the rounds=2 run's %v", it.Line, it.ScoreA, want)
		}
	}

	// Two cells of one matrix sweep: rounds=2 against rounds=1.
	stdout, _ = mustRun(t, env, "compare", matrix, matrix, "--cell", "rounds=2", "--cell-b", "rounds=1")
	if !strings.Contains(stdout, "| matrix cell | rounds=2 | rounds=1 |") || !strings.Contains(stdout, "n=20 pairs") {
		t.Errorf("two cells of one sweep:\n%s", stdout)
	}
	// --cell for the matrix side, with the plain baseline gate.
	if code, _, stderr := invoke(t, env, "compare", matrix, "--baseline", baseline, "--cell", "rounds=1", "--margin", "1"); code != exitcode.OK {
		t.Errorf("gate on a cell: exit %d\n%s", code, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{matrix, baseline, "--cell", "rounds=3"}, "--cell rounds=3: " + matrix + " has no cell rounds=3: its cells are --cell rounds=1, --cell rounds=2"},
		{[]string{matrix, baseline, "--cell", "rounds"}, `--cell "rounds": give NAME=VALUE pairs`},
		{[]string{plain, baseline, "--cell", "rounds=1"}, "--cell rounds=1: neither sweep is a matrix sweep"},
		{[]string{matrix, baseline, "--cell", "rounds=1", "--cell-b", "rounds=1"}, "--cell-b rounds=1: " + baseline + " has no matrix"},
	} {
		code, _, stderr := invoke(t, env, append([]string{"compare"}, tc.args...)...)
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("compare %v: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
}
