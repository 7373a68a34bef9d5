package main

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/sweep"
)

// samplingSolver draws afresh each time the same messages come again (as
// a model at a temperature above 0 does): right with chance p, else off
// by 1 to 3.
func samplingSolver(p float64) llmtest.Handler {
	var mu sync.Mutex
	seen := map[uint64]int{}
	return func(r llmtest.Request) llmtest.Reply {
		v, ok := runtest.Arithmetic(r.LastUser())
		if !ok {
			return llmtest.Reply{Content: `\boxed{0}`}
		}
		h := fnv.New64a()
		for _, msg := range r.Messages {
			h.Write([]byte(msg.Content))
		}
		mu.Lock()
		k := seen[h.Sum64()]
		seen[h.Sum64()]++
		mu.Unlock()
		fmt.Fprintf(h, "#%d", k)
		if d := h.Sum64(); float64(d%1000)/1000 >= p {
			v += 1 + int(d/1000%3)
		}
		return llmtest.Reply{Content: fmt.Sprintf("So \\boxed{%d}", v)}
	}
}

// TestSweepEqualCompute: --equal-compute sweeps self-consistency after the
// debate over the same items, with the debate's mean calls per item as
// its samples, and prints the two compared item by item.
func TestSweepEqualCompute(t *testing.T) {
	srv := llmtest.New(t, samplingSolver(0.5))
	runs := t.TempDir()
	ex := "../../examples/reasoning-debate/"
	stdout, stderr := mustRun(t, live(srv, "RUNNER_CACHE_DIR", t.TempDir()), "run", ex+"spec.yaml", "--dataset", "gen:arithmetic?n=6&seed=3",
		"--equal-compute", ex+"self-consistency.yaml", "--runs-dir", runs, "-q")
	if !strings.Contains(stderr, "equal compute: reasoning-self-consistency with 6 samples per item (the sweep's mean calls per item: 6.00 over 6 items)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "sweep-*"))
	if len(dirs) != 2 {
		t.Fatalf("sweeps %v", dirs)
	}
	for _, d := range dirs {
		s, err := sweep.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Runs) != 6 || s.Usage.Calls != 36 {
			t.Errorf("%s: %d runs, %d calls; want 6 runs of 6 calls", s.Spec, len(s.Runs), s.Usage.Calls)
		}
	}
	for _, w := range []string{"## Equal compute: reasoning-debate against reasoning-self-consistency at 6 samples per item", "Difference A − B:", "Exact McNemar test"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	// Without a dataset there is nothing to pair.
	code, _, stderr := invoke(t, live(srv), "run", ex+"spec.yaml", "-i", "question=What is 1+1?", "--repeat", "2", "--equal-compute", ex+"self-consistency.yaml")
	if code != 2 || !strings.Contains(stderr, "--equal-compute") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
