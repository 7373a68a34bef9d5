package examples_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/shared"
	"github.com/debate-runner/runner/runtime/launch"
	runresult "github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"

	"github.com/debate-runner/runner/runtime"
)

// What a provider's prompt cache can do for the design debate, measured
// against the local server: the debate runs with made-up contributions of
// the sizes the original tool's recorded debates have (kata2, three agents:
// proposals about 5,000 characters, critiques 5,500, refinements 9,000),
// every reply taking a little while so that the calls of one node are in
// flight together, as with a real provider. The server's prompt cache
// follows OpenAI's published rules: a shared start of at least 1,024
// tokens, counted in steps of 128, served only from prompts already
// answered (tokens are estimated as 4 bytes of the messages' JSON).

// replySizes are the made-up contributions' lengths in characters.
var replySizes = map[string]int{"propose": 5000, "critique": 5500, "refine": 9000, "summary": 2800, "judge-summary": 2800}

// filler is n characters of words drawn from seed, so that no two
// contributions share a start beyond their first line.
func filler(seed string, n int) string {
	words := strings.Fields("the booking service keeps one primary database per region and a queue for reminders " +
		"clinics patients slots calendar cache replica latency throughput audit token session encryption " +
		"failover index partition retry timeout budget quota alert dashboard load test rollout")
	h := int64(0)
	for _, c := range seed {
		h = h*31 + int64(c)
	}
	rng := rand.New(rand.NewSource(h))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.Intn(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// cacheMeasure is one debate's prompt-cache figures.
type cacheMeasure struct {
	calls, prompt, cached int
	// longest and mean are each agent's longest and mean shared start
	// (in tokens) of a request with the agent's earlier requests.
	longest, mean map[string]int
	usage         runresult.UsageReport
}

// measureDesignCache runs the design debate with sets and measures it.
func measureDesignCache(t *testing.T, sets ...string) cacheMeasure {
	t.Helper()
	return measureDesignCacheWith(t, false, sets...)
}

// measureDesignCacheWith is measureDesignCache, with breakpoints on the
// models (prompt_cache: breakpoints) and the server's prompt cache
// following Anthropic's rules (llmtest.PromptCache.Breakpoints).
func measureDesignCacheWith(t *testing.T, breakpoints bool, sets ...string) cacheMeasure {
	t.Helper()
	path := designSpec(t)
	if breakpoints {
		path = designSpec(t, withBreakpoints())
	}
	plan := loadVariant(t, path)
	s := newScripted(plan)
	s.override = func(c scriptedCall) (llmtest.Reply, bool) {
		delay := 100 * time.Millisecond
		n, ok := replySizes[c.phase]
		if !ok {
			return llmtest.Reply{}, false
		}
		head := fmt.Sprintf("%s of %s in round %d (%s).", strings.ToUpper(c.phase), c.agent, c.round, c.target)
		return llmtest.Reply{Content: head + " " + filler(head, n), Delay: delay}, true
	}
	pc := &llmtest.PromptCache{MinTokens: 1024, Step: 128, Settled: true, Breakpoints: breakpoints}
	srv := llmtest.New(t, pc.Wrap(func(r llmtest.Request) llmtest.Reply {
		rep := s.handle(r)
		if rep.Delay == 0 {
			rep.Delay = 100 * time.Millisecond
		}
		return rep
	}))
	run := startDesign(t, path, srv, runtime.Options{Launch: launch.Launch{Given: launch.Given{
		Inputs: []string{"problem=@design-debate/problem.md"}, Sets: sets}}})
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != runresult.StatusCompleted {
		t.Fatalf("run: status %s, error %v", res.Status, err)
	}
	m := cacheMeasure{longest: map[string]int{}, mean: map[string]int{}, usage: res.Usage}
	m.prompt, m.cached = pc.Totals()
	byAgent := map[string][][]byte{}
	count := map[string]int{}
	for _, r := range srv.Requests() {
		m.calls++
		agent := classify(r, s.byName, "judge").agent
		msgs := r.Fields["messages"]
		best := 0
		for _, prev := range byAgent[agent] {
			best = max(best, sharedBytes(prev, msgs))
		}
		byAgent[agent] = append(byAgent[agent], msgs)
		if len(byAgent[agent]) > 1 {
			m.longest[agent] = max(m.longest[agent], best/4)
			m.mean[agent] += best / 4
			count[agent]++
		}
	}
	for a, n := range count {
		m.mean[a] /= n
	}
	return m
}

func sharedBytes(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// debateCost is what the measured usage costs at the built-in list prices
// of the named models (by the spec's model names), with the cached tokens
// at the cached price and with none cached.
func debateCost(t *testing.T, u runresult.UsageReport, models map[string]string) (cached, uncached float64) {
	t.Helper()
	for name, mu := range u.ByModel {
		p := spec.BuiltinPrice(models[name])
		if p == nil {
			t.Fatalf("no built-in price for %q", models[name])
		}
		cached += p.CostWritten(mu.PromptTokens, mu.CachedTokens, mu.CacheWriteTokens, mu.CompletionTokens)
		uncached += p.Cost(mu.PromptTokens, 0, mu.CompletionTokens)
	}
	return cached, uncached
}

// TestDesignDebatePromptCache measures the design debate's prompt-cache
// share and cost per debate in its layouts and logs them (go test
// ./examples -run TestDesignDebatePromptCache -v); the figures are ratios
// of token counts, not timings.
func TestDesignDebatePromptCache(t *testing.T) {
	configs := []struct {
		name string
		sets []string
	}{
		{"as the original tool (3 rounds, no summaries, fixed rounds)", []string{"early_stop=false", "summaries=false", "clarify=false"}},
		{"spec defaults (judge rates every round, summaries)", []string{"threshold=101"}},
	}
	priceSets := []struct {
		name   string
		models map[string]string
	}{
		{"gpt-4o-mini + gpt-4o judge", map[string]string{"default": "gpt-4o-mini", "judge": "gpt-4o"}},
		{"gpt-4o-mini", map[string]string{"default": "gpt-4o-mini", "judge": "gpt-4o-mini"}},
		{"claude-sonnet-4", map[string]string{"default": "claude-sonnet-4", "judge": "claude-sonnet-4"}},
	}
	results := map[string]cacheMeasure{}
	for _, cfg := range configs {
		for _, layout := range designLayouts {
			m := measureDesignCache(t, append([]string{"cached_layout=" + fmt.Sprint(layout == "cached")}, cfg.sets...)...)
			share := float64(m.cached) / float64(m.prompt)
			if share < 0 || share > 1 || m.cached > m.prompt {
				t.Fatalf("%s, layout %s: %d cached of %d prompt tokens", cfg.name, layout, m.cached, m.prompt)
			}
			if m.usage.Total.CachedTokens != m.cached {
				t.Errorf("%s, layout %s: result.json counts %d cached tokens, the server reported %d", cfg.name, layout, m.usage.Total.CachedTokens, m.cached)
			}
			var agents []string
			for a := range m.longest {
				agents = append(agents, a)
			}
			sort.Strings(agents)
			var prefixes []string
			for _, a := range agents {
				prefixes = append(prefixes, fmt.Sprintf("%s %d (mean %d)", a, m.longest[a], m.mean[a]))
			}
			results[cfg.name+"/"+layout] = m
			t.Logf("%s, layout %s: %d calls, %d prompt tokens, %.1f%% cacheable; longest shared start per agent, tokens: %s",
				cfg.name, layout, m.calls, m.prompt, 100*share, strings.Join(prefixes, ", "))
			for _, ps := range priceSets {
				with, without := debateCost(t, m.usage, ps.models)
				if with > without {
					t.Errorf("%s: cost with cached prices %.4f above %.4f without", ps.name, with, without)
				}
				t.Logf("    %s: $%.4f per debate with cached prices, $%.4f without (%.2fx)", ps.name, with, without, with/without)
			}
		}
		// Claude with breakpoints, against Anthropic's cache rules: reads
		// at 0.1x the prompt price, writes at 1.25x.
		sonnet := map[string]string{"default": "claude-sonnet-4", "judge": "claude-sonnet-4"}
		var bcost [2]float64
		for i, layout := range designLayouts {
			m := measureDesignCacheWith(t, true, append([]string{"cached_layout=" + fmt.Sprint(layout == "cached")}, cfg.sets...)...)
			bcost[i], _ = debateCost(t, m.usage, sonnet)
			tu := m.usage.Total
			t.Logf("%s, layout %s, claude-sonnet-4 with breakpoints: %d prompt tokens, %.1f%% read from the cache, %.1f%% written, $%.4f per debate",
				cfg.name, layout, tu.PromptTokens, 100*float64(tu.CachedTokens)/float64(tu.PromptTokens), 100*float64(tu.CacheWriteTokens)/float64(tu.PromptTokens), bcost[i])
		}
		if bcost[1] >= bcost[0] {
			t.Errorf("%s, claude-sonnet-4 with breakpoints: the cached layout costs %.4f, the original %.4f", cfg.name, bcost[1], bcost[0])
		}

		// The cached layout must serve a larger share from the cache and
		// cost less at the cached prices of OpenAI's and Anthropic's
		// models alike.
		orig, cached := results[cfg.name+"/original"], results[cfg.name+"/cached"]
		if float64(cached.cached)/float64(cached.prompt) <= float64(orig.cached)/float64(orig.prompt) {
			t.Errorf("%s: the cached layout serves %d of %d prompt tokens from the cache, the original %d of %d", cfg.name, cached.cached, cached.prompt, orig.cached, orig.prompt)
		}
		for _, ps := range priceSets[1:] {
			a, _ := debateCost(t, orig.usage, ps.models)
			b, _ := debateCost(t, cached.usage, ps.models)
			if b >= a {
				t.Errorf("%s at %s prices: the cached layout costs %.4f, the original %.4f", cfg.name, ps.name, b, a)
			}
		}
	}
}

// designLayouts are the design debate's prompt layouts (its var layout).
var designLayouts = []string{"original", "cached"}

// TestDesignDebateCachedLayout: with cached_layout every specialist has the
// same system prompt (the judge none), and an agent's refinement request starts with the whole
// start of a critique request of its proposal, up to and including the
// proposal: the problem, the clarifications and the proposal are one
// prefix the provider has already seen. The original layout keeps each
// agent's own system prompt. Both layouts show the same proposals and
// critiques.
func TestDesignDebateCachedLayout(t *testing.T) {
	for _, cached := range []bool{false, true} {
		path := designSpec(t)
		run, s, srv := startScripted(t, path, runtime.Options{Launch: launch.Launch{Given: launch.Given{
			Inputs: []string{"problem=@design-debate/problem.md"},
			Sets:   []string{"max_rounds=2", "early_stop=false", "clarify=false", fmt.Sprintf("cached_layout=%v", cached)}}}}, nil)
		res, err := run.Execute(context.Background())
		if err != nil || res.Status != runresult.StatusCompleted {
			t.Fatalf("cached_layout=%v: status %s, error %v", cached, res.Status, err)
		}
		// The cached layout gives the specialists one system prompt (their
		// working rules) and the judge none: its role is in each prompt.
		systems, judgeSystems := map[string]bool{}, 0
		for _, r := range srv.Requests() {
			if r.Messages[0].Role != "system" {
				continue
			}
			if classify(r, s.byName, "judge").agent == "judge" {
				judgeSystems++
				continue
			}
			systems[r.Messages[0].Content] = true
		}
		if cached != (len(systems) == 1) || cached != (judgeSystems == 0) {
			t.Errorf("cached_layout=%v: %d distinct system prompts of the specialists, %d of the judge's requests with one", cached, len(systems), judgeSystems)
		}
		refines := s.find("refine", "")
		if len(refines) != 6 {
			t.Fatalf("cached_layout=%v: %d refine calls, want 6", cached, len(refines))
		}
		for _, rf := range refines {
			proposal := fmt.Sprintf("PROPOSAL of %s in round 1.", rf.agent)
			if rf.round == 2 {
				proposal = fmt.Sprintf("REFINEMENT of %s in round 1.", rf.agent)
			}
			if !strings.Contains(rf.prompt, proposal) {
				t.Errorf("cached_layout=%v: round %d refine prompt of %s lacks %q", cached, rf.round, rf.agent, proposal)
				continue
			}
			best := 0
			for _, c := range s.find("critique", "") {
				if c.target == rf.agent && c.round == rf.round {
					best = max(best, sharedBytes([]byte(c.req.Fields["messages"]), []byte(rf.req.Fields["messages"])))
				}
			}
			body := string(rf.req.Fields["messages"])
			end := strings.Index(body, proposal) + len(proposal)
			if cached && best < end {
				t.Errorf("round %d refine request of %s shares %d bytes with the critiques of its proposal, want at least %d (through the proposal)", rf.round, rf.agent, best, end)
			}
			if !cached && best >= end {
				t.Errorf("original layout: round %d refine request of %s shares %d bytes with a critique of it", rf.round, rf.agent, best)
			}
		}
	}
}

// TestDesignDebateCachedLayoutReplaysRecordings replays recorded debates of
// the original tool in the cached layout: the run makes the same calls and
// records the same contributions, summaries and solution as in the
// original layout (replayRecording's checks, with every prompt showing
// what it must), and on the recordings' own texts a larger share of the
// input is cacheable, at a lower cost at list prices.
func TestDesignDebateCachedLayoutReplaysRecordings(t *testing.T) {
	dir := shared.Dir(t, dialecticDir)
	recordings := []struct{ file, config, problem string }{
		{"kata2/rounds_test/all_agents_3R_no_clarify.json", "kata2/debate-config.json", "kata2/kata2.md"},
		{"kata2/summary_length_test/all_sum-length-1250_clarify.json", "kata2/summary_length_test/debate-config-sum-t-1250.json", "kata2/kata2.md"},
	}
	models := map[string]string{"default": "gpt-4o-mini", "judge": "gpt-4o"}
	for _, rc := range recordings {
		t.Run(strings.TrimSuffix(rc.file, ".json"), func(t *testing.T) {
			t.Parallel()
			file, config, problem := filepath.Join(dir, rc.file), filepath.Join(dir, rc.config), filepath.Join(dir, rc.problem)
			orig := replayRecordingIn(t, file, config, problem, false)
			cached := replayRecordingIn(t, file, config, problem, true)
			share := func(u runresult.UsageReport) float64 {
				return float64(u.Total.CachedTokens) / float64(u.Total.PromptTokens)
			}
			o, _ := debateCost(t, orig, models)
			c, _ := debateCost(t, cached, models)
			mini := map[string]string{"default": "gpt-4o-mini", "judge": "gpt-4o-mini"}
			om, _ := debateCost(t, orig, mini)
			cm, _ := debateCost(t, cached, mini)
			os, _ := debateCost(t, orig, map[string]string{"default": "claude-sonnet-4", "judge": "claude-sonnet-4"})
			cs, _ := debateCost(t, cached, map[string]string{"default": "claude-sonnet-4", "judge": "claude-sonnet-4"})
			t.Logf("original layout: %d prompt tokens, %.1f%% cacheable, $%.4f (gpt-4o-mini, judge gpt-4o), $%.4f (gpt-4o-mini), $%.4f (claude-sonnet-4)",
				orig.Total.PromptTokens, 100*share(orig), o, om, os)
			t.Logf("cached layout:   %d prompt tokens, %.1f%% cacheable, $%.4f (gpt-4o-mini, judge gpt-4o), $%.4f (gpt-4o-mini), $%.4f (claude-sonnet-4)",
				cached.Total.PromptTokens, 100*share(cached), c, cm, cs)
			if share(cached) <= share(orig) || cs >= os {
				t.Errorf("the cached layout serves %.3f of its input from the cache at $%.4f (claude-sonnet-4), the original %.3f at $%.4f", share(cached), cs, share(orig), os)
			}
			checkCacheableShare(t, "original layout", orig)
			checkCacheableShare(t, "cached layout", cached)
			if cached.Total.RunCacheableShare <= orig.Total.RunCacheableShare {
				t.Errorf("cacheable share over the run: %.3f in the cached layout, %.3f in the original", cached.Total.RunCacheableShare, orig.Total.RunCacheableShare)
			}

			// Claude with prompt_cache: breakpoints, against a cache that
			// follows Anthropic's rules: reads at 0.1x, writes at 1.25x.
			sonnet := map[string]string{"default": "claude-sonnet-4", "judge": "claude-sonnet-4"}
			ob := replayRecordingCache(t, file, config, problem, false, true)
			cb := replayRecordingCache(t, file, config, problem, true, true)
			obc, _ := debateCost(t, ob, sonnet)
			cbc, _ := debateCost(t, cb, sonnet)
			written := func(u runresult.UsageReport) float64 {
				return float64(u.Total.CacheWriteTokens) / float64(u.Total.PromptTokens)
			}
			t.Logf("claude-sonnet-4, breakpoints, original layout: %d prompt tokens, %.1f%% read from the cache, %.1f%% written, $%.4f", ob.Total.PromptTokens, 100*share(ob), 100*written(ob), obc)
			t.Logf("claude-sonnet-4, breakpoints, cached layout:   %d prompt tokens, %.1f%% read from the cache, %.1f%% written, $%.4f", cb.Total.PromptTokens, 100*share(cb), 100*written(cb), cbc)
			if share(cb) <= share(ob) || cbc >= obc {
				t.Errorf("with breakpoints the cached layout reads %.3f of its input from the cache at $%.4f, the original %.3f at $%.4f", share(cb), cbc, share(ob), obc)
			}
		})
	}
}

// checkCacheableShare logs a run's cacheable share per agent and over the
// run and checks they add up: every agent's tokens are counted, a start
// shared with the same agent is one shared with some agent, and the run's
// figures are the agents' sums.
func checkCacheableShare(t *testing.T, name string, u runresult.UsageReport) {
	t.Helper()
	var parts []string
	sumAgent, sumRun, prompt := 0, 0, 0
	for _, a := range slices.Sorted(maps.Keys(u.ByAgent)) {
		x := u.ByAgent[a]
		if x.CacheableTokens > x.RunCacheableTokens || x.RunCacheableTokens > x.PromptTokens {
			t.Errorf("%s, agent %s: %d cacheable with itself, %d with any agent, of %d", name, a, x.CacheableTokens, x.RunCacheableTokens, x.PromptTokens)
		}
		sumAgent, sumRun, prompt = sumAgent+x.CacheableTokens, sumRun+x.RunCacheableTokens, prompt+x.PromptTokens
		parts = append(parts, fmt.Sprintf("%s %.1f%%/%.1f%%", a, 100*x.CacheableShare, 100*x.RunCacheableShare))
	}
	tot := u.Total
	if sumAgent != tot.CacheableTokens || sumRun != tot.RunCacheableTokens || prompt != tot.PromptTokens {
		t.Errorf("%s: the agents' cacheable tokens add up to %d and %d of %d, the run's are %d and %d of %d", name, sumAgent, sumRun, prompt, tot.CacheableTokens, tot.RunCacheableTokens, tot.PromptTokens)
	}
	t.Logf("%s: cacheable share with the same agent / any agent: run %.1f%%/%.1f%%; %s", name, 100*tot.CacheableShare, 100*tot.RunCacheableShare, strings.Join(parts, ", "))
}
