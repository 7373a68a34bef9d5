package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	runresult "github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// BenchmarkDesignDebateCacheShare measures how much of the design debate's
// input (3 rounds, made-up contributions of the recorded debates' sizes,
// see replySizes) a provider's prompt cache could serve, in each layout:
// the original one, the cached one of software-design@11 and the cached one
// of software-design@12 (the spec's), as the run's result.json counts it by
// each provider's rule (a start shared with a request answered before, see
// docs/runs.md), and, by OpenAI's rule, counting every request sent before
// (the calls one node makes at once too, which a provider does not serve
// from each other in practice: an upper bound). The figures are shares of
// prompt tokens, not timings:
//
//	go test ./examples -run '^$' -bench DesignDebateCacheShare -benchtime 1x
func BenchmarkDesignDebateCacheShare(b *testing.B) {
	configs := []struct {
		name string
		sets []string
	}{
		{"fixed-rounds", []string{"max_rounds=3", "early_stop=false", "summaries=false", "clarify=false"}},
		{"defaults", []string{"max_rounds=3", "threshold=101"}},
	}
	layouts := []struct {
		name    string
		cached  bool
		library string
	}{
		{"original", false, "software-design@12"},
		{"cached@11", true, "software-design@11"},
		{"cached@12", true, "software-design@12"},
	}
	for _, cfg := range configs {
		for _, l := range layouts {
			b.Run(cfg.name+"/"+l.name, func(b *testing.B) {
				var m layoutShare
				for b.Loop() {
					m = measureLayoutShare(b, l.library, append([]string{fmt.Sprintf("cached_layout=%v", l.cached)}, cfg.sets...))
				}
				b.ReportMetric(100*m.openai, "openai-%")
				b.ReportMetric(100*m.anthropic, "anthropic-%")
				b.ReportMetric(100*m.gemini, "gemini-%")
				b.ReportMetric(100*m.openaiSent, "openai-sent-before-%")
				b.ReportMetric(float64(m.prompt), "prompt-tokens")
			})
		}
	}
}

// layoutShare is one debate's cacheable shares.
type layoutShare struct {
	prompt                    int
	openai, anthropic, gemini float64 // result.json's, by rule
	openaiSent                float64 // OpenAI's rule over every request sent before
}

// measureLayoutShare runs the design debate with sets, its templates from
// library, against the local server, and measures it.
func measureLayoutShare(tb testing.TB, library string, sets []string) layoutShare {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("design-debate", "spec.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	text := strings.Replace(string(data), "software-design@12", library, 1)
	path := filepath.Join(tb.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		tb.Fatalf("the spec does not compile:\n%s", diags.Format())
	}
	s := newScripted(plan)
	s.override = func(c scriptedCall) (llmtest.Reply, bool) {
		n, ok := replySizes[c.phase]
		if !ok {
			return llmtest.Reply{}, false
		}
		head := fmt.Sprintf("%s of %s in round %d (%s).", strings.ToUpper(c.phase), c.agent, c.round, c.target)
		return llmtest.Reply{Content: head + " " + filler(head, n)}, true
	}
	srv := llmtest.New(tb, func(r llmtest.Request) llmtest.Reply {
		rep := s.handle(r)
		// The calls of a node are in flight together, as with a provider.
		rep.Delay = 20 * time.Millisecond
		return rep
	})
	seed := int64(3)
	opts := runtime.Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"problem=@design-debate/problem.md"}, Sets: sets}}}
	opts.RunsDir, opts.Getenv, opts.Seed = tb.TempDir(), serverEnv(srv), &seed
	run, err := runtime.Start(plan, opts)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != runresult.StatusCompleted {
		tb.Fatalf("run: status %s, error %v", res.Status, err)
	}
	t := res.Usage.Total
	m := layoutShare{prompt: t.PromptTokens, openai: t.CacheableByRule.OpenAI.Share, anthropic: t.CacheableByRule.Anthropic.Share, gemini: t.CacheableByRule.Gemini.Share}
	m.openaiSent = sentBeforeShare(srv.Requests())
	return m
}

// sentBeforeShare is the share of the requests' tokens (4 bytes of their
// messages' JSON a token) in a start shared with any request to the same
// model that arrived before, by OpenAI's rule (at least 1,024 tokens, in
// steps of 128).
func sentBeforeShare(reqs []llmtest.Request) float64 {
	cached, total := 0, 0
	for i, r := range reqs {
		msgs := r.Fields["messages"]
		total += len(msgs) / 4
		best := 0
		for _, e := range reqs[:i] {
			if e.Model == r.Model {
				best = max(best, sharedBytes(e.Fields["messages"], msgs))
			}
		}
		if n := best / 4; n >= runresult.OpenAICacheMin {
			cached += n / runresult.OpenAICacheStep * runresult.OpenAICacheStep
		}
	}
	if total == 0 {
		return 0
	}
	return float64(cached) / float64(total)
}
