package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

// The tests in this file run examples against servers whose replies miss
// the examples' purpose: a panel that never gives a verdict, a debate whose
// replies cannot be read. The runs finish, write their outputs, and say they
// are inconclusive (exit 8); sweeps count them apart.

const (
	hiringSpec   = "../../examples/hiring-panel/spec.yaml"
	hiringResume = "../../examples/hiring-panel/resume.md"
)

// TestHiringPanelWithoutVerdictsIsInconclusive: the case, with the
// real binary. Every reply is a message without a verdict, so every goal
// runs to max_turns; the run ends inconclusive with exit 8, names the goals
// without a verdict, and leaves its outputs and reports on disk.
func TestHiringPanelWithoutVerdictsIsInconclusive(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "<SpeakingTo>All</SpeakingTo><Content>I am still weighing the resume.</Content>"}
	})
	runs := t.TempDir()
	code, stdout, stderr := runBinary(t, live(srv), "run", hiringSpec, "-i", "resume=@"+hiringResume, "--runs-dir", runs, "--no-cache", "-q")
	if code != exitcode.Inconclusive {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Inconclusive, stdout, stderr)
	}
	t.Logf("exit %d\nstderr:\n%s", code, stderr)
	for _, want := range []string{"runner: inconclusive", "goals without a verdict given freely: technical_assessment, team_fit, growth_potential", "result.json"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if srv.Count() != 216 {
		t.Errorf("%d requests, want 216 (60 turns and 12 repairs of forced verdicts per goal... as the issue counted)", srv.Count())
	}
	// The output is printed and written, as for a completed run.
	if !strings.Contains(stdout, "technical_assessment") {
		t.Errorf("stdout lacks the output:\n%s", stdout)
	}
	dir := runDirFrom(t, stderr)
	res, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != result.StatusInconclusive || res.Conclusion == nil || res.Conclusion.Concluded {
		t.Fatalf("result.json: status %q, conclusion %+v", res.Status, res.Conclusion)
	}
	if got := strings.Join(res.Conclusion.InconclusiveGoals, ","); got != "technical_assessment,team_fit,growth_potential" {
		t.Errorf("inconclusive goals %q", got)
	}
	verdicts, _ := res.Outputs["verdicts"].([]any)
	if len(verdicts) != 3 {
		t.Errorf("outputs.verdicts on disk: %v", res.Outputs["verdicts"])
	}
	m, err := result.ReadManifest(dir)
	if err != nil || m.Status != result.StatusInconclusive {
		t.Errorf("run.json status %q (%v)", m.Status, err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "- Status: **inconclusive**") || !strings.Contains(string(report), "- Inconclusive: goals without a verdict given freely: technical_assessment, team_fit, growth_potential") {
		t.Errorf("report.md:\n%.600s", report)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
	// runs lists it with its status and why.
	code, stdout, _ = runBinary(t, nil, "runs", runs)
	if code != 0 || !strings.Contains(stdout, "inconclusive") {
		t.Errorf("runs: exit %d\n%s", code, stdout)
	}
}

// halfUnreadable answers the reasoning debate's dataset: a question whose
// first number is odd gets replies without a box (even after the repair
// asks for one), the others the solver's.
func halfUnreadable(r llmtest.Request) llmtest.Reply {
	for _, msg := range r.Messages {
		if m := arithmetic.FindStringSubmatch(msg.Content); m != nil {
			if first, _ := strconv.Atoi(m[1]); first%2 == 1 {
				return llmtest.Reply{Content: "I am not sure how to box this."}
			}
			return solver(llmtest.Request{Messages: []llmtest.Message{msg}})
		}
	}
	return solver(r)
}

// TestDatasetWithUnreadableRepliesCountsInconclusive: half the dataset's
// items get replies that cannot be parsed. Those runs are inconclusive, not
// wrong answers: the sweep counts them apart, reports the accuracy over all
// items (they count as wrong) and over the concluded ones, each with its
// interval, exits 8 without a gate, and --fail-under gates the accuracy
// --fail-under-over names.
func TestDatasetWithUnreadableRepliesCountsInconclusive(t *testing.T) {
	srv := llmtest.New(t, halfUnreadable)
	runs, cache := t.TempDir(), t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", cache)
	code, stdout, stderr := invoke(t, env, "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q")
	if code != exitcode.Inconclusive {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Inconclusive, stdout, stderr)
	}
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	for _, want := range []string{
		"accuracy: 0.300 (95% CI 0.108–0.603, wilson, n=10), 5 inconclusive run(s) counted wrong",
		"accuracy over concluded runs: 0.600 (95% CI 0.231–0.882, wilson, n=5)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "5 of 10 run(s) inconclusive") {
		t.Errorf("stderr:\n%s", stderr)
	}
	dir := strings.TrimPrefix(lastLine(stderr, "sweep: "), "sweep: ")
	sum, err := sweep.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 5 || sum.Inconclusive != 5 || sum.Failed != 0 {
		t.Errorf("summary.json counts %d concluded, %d inconclusive, %d failed", sum.Completed, sum.Inconclusive, sum.Failed)
	}
	for _, r := range sum.Runs {
		if r.Status == result.StatusInconclusive && (r.Score == nil || *r.Score != 0 || r.Inconclusive != "fallback in answer, answers") {
			t.Errorf("run %d: inconclusive with score %v, why %q", r.Index, r.Score, r.Inconclusive)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "- Runs: 10 (5 concluded, 5 inconclusive, 0 failed, 0 waiting)") {
		t.Errorf("summary.md:\n%.800s", md)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw["accuracy_concluded"] == nil || string(raw["inconclusive"]) != "5" {
		t.Errorf("summary.json lacks inconclusive or accuracy_concluded: %v", err)
	}

	// Gates, from the cache: over all items 0.3 fails 0.5; over the
	// concluded ones 0.6 passes it. The gate decides the exit code.
	code, _, stderr = invoke(t, env, "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q", "--fail-under", "0.5")
	if code != exitcode.Gate || !strings.Contains(stderr, "gate failed: accuracy 0.300 is below --fail-under 0.5 (over all runs, 5 inconclusive counted wrong: 0.300 (95% CI") {
		t.Errorf("gate over all runs: exit %d\n%s", code, stderr)
	}
	code, _, stderr = invoke(t, env, "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q", "--fail-under", "0.5", "--fail-under-over", "concluded")
	if code != 0 || !strings.Contains(stderr, "gate passed: accuracy 0.600 is at least 0.5 (over the 5 concluded runs)") {
		t.Errorf("gate over concluded runs: exit %d\n%s", code, stderr)
	}
}

// lastLine is the last line of s that starts with prefix.
func lastLine(s, prefix string) string {
	out := ""
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = l
		}
	}
	return out
}
