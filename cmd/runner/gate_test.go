package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// rightSolver computes every problem of the dataset right.
func rightSolver(r llmtest.Request) llmtest.Reply {
	m := arithmetic.FindStringSubmatch(r.LastUser())
	if m == nil {
		return llmtest.Reply{Content: "\\boxed{19}"}
	}
	n := make([]int, 6)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return llmtest.Reply{Content: fmt.Sprintf("\\boxed{%d}", n[0]+n[1]*n[2]+n[3]-n[4]*n[5])}
}

// sweepDir reads the sweep directory from a sweep's stderr.
func sweepDir(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if d, ok := strings.CutPrefix(l, "sweep: "); ok && !strings.Contains(d, " runs in ") {
			return d
		}
	}
	t.Fatalf("no sweep directory in:\n%s", stderr)
	return ""
}

func TestFailUnderGatesDatasetAccuracy(t *testing.T) {
	srv := llmtest.New(t, solver) // accuracy 0.6, 95% interval 0.313-0.832
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	runs := t.TempDir()
	for _, tc := range []struct {
		flags []string
		code  int
		want  string
	}{
		{[]string{"--fail-under", "0.5"}, exitcode.OK, "gate passed: accuracy 0.600 is at least 0.5"},
		{[]string{"--fail-under", "0.6"}, exitcode.OK, "gate passed"},
		{[]string{"--fail-under", "0.7"}, exitcode.Gate, "gate failed: accuracy 0.600 is below --fail-under 0.7"},
		{[]string{"--fail-under", "0.3", "--fail-under-on", "lower"}, exitcode.OK, "gate passed: lower end of the accuracy's 95% interval 0.313"},
		{[]string{"--fail-under", "0.5", "--fail-under-on", "lower"}, exitcode.Gate, "gate failed: lower end of the accuracy's 95% interval 0.313 is below --fail-under 0.5"},
	} {
		args := append([]string{"run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q"}, tc.flags...)
		code, stdout, stderr := invoke(t, env, args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr lacks %q:\n%s\n%s", tc.flags, code, tc.code, tc.want, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", debateSpec, "-i", "question=1+1", "--fail-under", "0.5"}, "give --dataset"},
		{[]string{"run", debateSpec, "--dataset", datasetFile, "--fail-under", "1.5"}, "between 0 and 1"},
		{[]string{"run", debateSpec, "--dataset", datasetFile, "--fail-under", "0.5", "--fail-under-on", "median"}, "median"},
	} {
		if code, _, stderr := invoke(t, env, tc.args...); code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

func TestCompareGatesAgainstBaseline(t *testing.T) {
	runs := t.TempDir()
	sweepOf := func(h llmtest.Handler) string {
		srv := llmtest.New(t, h)
		_, stderr := mustRun(t, live(srv), "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q", "--no-cache")
		return sweepDir(t, stderr)
	}
	good, weak := sweepOf(rightSolver), sweepOf(solver) // accuracy 1.0 and 0.6
	if code, _, stderr := invoke(t, nil, "compare", "--baseline", weak, weak); code != exitcode.Usage || !strings.Contains(stderr, "at least one other") {
		t.Errorf("a baseline alone: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := invoke(t, nil, "compare", good, "--baseline", weak)
	if code != exitcode.OK || !strings.Contains(stderr, "gate passed: "+good+": 1.000 against the baseline's 0.600 (+0.400)") {
		t.Errorf("better than the baseline: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = invoke(t, nil, "compare", weak, "--baseline", good)
	if code != exitcode.Gate || !strings.Contains(stderr, "gate failed: worse than the baseline "+good+" by more than 0") || !strings.Contains(stderr, "0.600 against the baseline's 1.000 (-0.400)") {
		t.Errorf("worse than the baseline: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, nil, "compare", weak, "--baseline", good, "--margin", "0.4"); code != exitcode.OK {
		t.Errorf("worse within the margin: exit %d\n%s", code, stderr)
	}
	// A single run of the sweep is gated by its score.
	run := good + "/" + firstRun(t, good)
	if code, _, stderr := invoke(t, nil, "compare", run, "--baseline", weak); code != exitcode.OK || !strings.Contains(stderr, "1.000 against") {
		t.Errorf("a run against a sweep: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, nil, "compare", good, "--baseline", weak, "--margin", "-1"); code != exitcode.Usage {
		t.Errorf("negative margin: exit %d\n%s", code, stderr)
	}
}

// firstRun names a run directory of a sweep.
func firstRun(t *testing.T, sweep string) string {
	t.Helper()
	entries, err := os.ReadDir(sweep)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			return e.Name()
		}
	}
	t.Fatalf("no run in %s", sweep)
	return ""
}
