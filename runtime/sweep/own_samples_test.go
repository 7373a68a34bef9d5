package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
)

// TestOwnSamples: a sweep that keeps its samples its own shares calls
// among its runs and with a resume of itself, but with no other sweep;
// plain sweeps go on sharing with each other.
func TestOwnSamples(t *testing.T) {
	srv := llmtest.New(t, answerSeven)
	cache := newMemCache()
	root := t.TempDir()
	run := func(own bool) *Summary {
		t.Helper()
		o := sweepOpts(srv.URL, cache)
		o.RunsDir = root
		sum, err := Sweep(context.Background(), sweepPlan(t, "0.7"), Options{Run: o, Matrix: []Axis{{Name: "max_rounds", Values: []string{"1", "2", "3"}}}, Parallel: 1, OwnSamples: own})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	// 3 agents a round; rounds 1..3 share their early rounds: 9 calls.
	for i, tc := range []struct {
		own  bool
		sent int
	}{{true, 9}, {true, 9}, {false, 9}, {false, 0}} {
		before := srv.Count()
		sum := run(tc.own)
		if got := srv.Count() - before; got != tc.sent {
			t.Errorf("sweep %d (own samples %v) sent %d calls, want %d", i+1, tc.own, got, tc.sent)
		}
		if (sum.CacheScope != "") != tc.own || tc.own && sum.CacheScope != sum.ID {
			t.Errorf("sweep %d: cache_scope %q (id %s)", i+1, sum.CacheScope, sum.ID)
		}
		if i != 1 {
			continue
		}
		// Cut the last run before its first reply and resume the sweep:
		// its own cached replies answer it.
		r := sum.Runs[2]
		m, err := result.ReadManifest(r.Dir)
		if err != nil || m.CacheScope != sum.ID {
			t.Fatalf("run.json cache_scope %q, %v", m.CacheScope, err)
		}
		path := filepath.Join(r.Dir, "journal.jsonl")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cut := strings.Index(string(data), `"type":"model_response"`)
		cut = strings.LastIndex(string(data[:cut]), "\n") + 1
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"result.json", "report.md", "report.html"} {
			_ = os.Remove(filepath.Join(r.Dir, f))
		}
		before = srv.Count()
		o := sweepOpts(srv.URL, cache)
		back, err := Resume(context.Background(), sum.Dir, nodes.Registry(), ResumeOptions{Run: o, Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Count() != before || back.CacheScope != sum.ID {
			t.Errorf("the resume sent %d calls (want 0); cache_scope %q", srv.Count()-before, back.CacheScope)
		}
		events, err := journal.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		cached := 0
		for _, ev := range events {
			if ev.Type == "model_response" && strings.Contains(string(ev.Data), `"source":"cache"`) {
				cached++
			}
		}
		if cached != 9 {
			t.Errorf("%d of the resumed run's replies came from the cache, want all 9", cached)
		}
	}
}
