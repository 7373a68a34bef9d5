package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/study"
)

// TestStudySaysWhenSweepsShared: a study's table notes that the debate and
// its baseline shared calls through the cache (the baseline's requests are
// the debate's first round), and with own_samples: true that they did not,
// the debate then sending every call of its own.
func TestStudySaysWhenSweepsShared(t *testing.T) {
	ex, err := filepath.Abs("../../examples/protocols/du-society-of-minds")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, chancySolver(0.55, 0.85))
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	for _, own := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "study.yaml")
		src := fmt.Sprintf("version: 1\nname: shared\ndataset: gen:arithmetic?n=10&seed=5\nspecs:\n  - {path: %s, label: single-agent}\n  - {path: %s, label: debate}\nbaseline: single-agent\nresamples: 500\nown_samples: %v\n",
			filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"), own)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := invoke(t, env, "study", path, "--dir", filepath.Join(dir, "study"), "-q")
		if code != 0 && code != 8 {
			t.Fatalf("own_samples %v: exit %d\n%s", own, code, stderr)
		}
		rep, err := study.ReadReport(filepath.Join(dir, "study"))
		if err != nil {
			t.Fatal(err)
		}
		// The baseline runs first: the debate's first agent's requests
		// are its requests, answered from the cache unless kept apart.
		deb := rep.Rows[1]
		shared := "the sweeps shared calls through the response cache"
		kept := "both sweeps kept their samples their own (--own-samples): no call was shared"
		if own {
			if strings.Contains(stdout, shared) || !strings.Contains(stdout, kept) || !rep.OwnSamples || deb.SentCalls != deb.Calls || deb.Calls != 60 {
				t.Errorf("own samples: the debate sent %d of %d calls; table:\n%s", deb.SentCalls, deb.Calls, stdout)
			}
		} else if !strings.Contains(stdout, shared) || !strings.Contains(stdout, "A took 10 of its calls from requests B sent") || strings.Contains(stdout, kept) || deb.SentCalls != 50 {
			t.Errorf("shared: the debate sent %d of %d calls; table:\n%s", deb.SentCalls, deb.Calls, stdout)
		}
	}
}
