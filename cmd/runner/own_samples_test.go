package main

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestOwnSamples: a baseline sweep with --own-samples takes nothing from
// the debate sweep's identical first-round requests (it sends all its
// own), and compare says so and counts no shared call. (That a resume of
// such a sweep is served its own cached calls: runtime/sweep's
// TestOwnSamples.)
func TestOwnSamples(t *testing.T) {
	srv := llmtest.New(t, chancySolver(0.55, 0.85))
	runs := t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	_, stderr := mustRun(t, env, "run", duSpec, "--dataset", duData, "--runs-dir", runs, "-q")
	debate := sweepDir(t, stderr)
	sent := srv.Count()
	_, stderr = mustRun(t, env, "run", duBaseline, "--dataset", duData, "--runs-dir", runs, "-q", "--own-samples")
	baseline := sweepDir(t, stderr)
	if got := srv.Count() - sent; got != 20 {
		t.Errorf("the baseline with --own-samples sent %d requests, want its 20 (none shared with the debate)", got)
	}
	sb, err := sweep.Load(baseline)
	if err != nil {
		t.Fatal(err)
	}
	if sb.CacheScope != sb.ID {
		t.Errorf("summary cache_scope %q, want the sweep's id %q", sb.CacheScope, sb.ID)
	}
	stdout, _ := mustRun(t, env, "compare", debate, baseline)
	for _, w := range []string{"| calls from the cache (sent by the other sweep) | 0 (0) | 0 (0) |", "B kept its samples its own (--own-samples): no call was shared"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare lacks %q:\n%s", w, stdout)
		}
	}
	stdout, _ = mustRun(t, env, "compare", debate, baseline, "--csv")
	if !strings.Contains(stdout, "own_samples,false,true,") {
		t.Errorf("CSV lacks own_samples:\n%s", stdout)
	}

	// The same baseline without the switch is served the debate's replies.
	before := srv.Count()
	mustRun(t, env, "run", duBaseline, "--dataset", duData, "--runs-dir", runs, "-q")
	if srv.Count() != before {
		t.Errorf("a plain baseline sent %d requests; the debate's first round answers them", srv.Count()-before)
	}
	if code, _, stderr := invoke(t, env, "run", duBaseline, "-i", "question=What is 1+2*3+4-5*6?", "--own-samples"); code != 2 || !strings.Contains(stderr, "--own-samples keeps a sweep's samples its own") {
		t.Errorf("--own-samples without a sweep: exit %d\n%s", code, stderr)
	}
}
