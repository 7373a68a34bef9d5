package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// TestBuiltinPricesShowCost: a run on gpt-4o-mini (the implicit model)
// with no price in the spec shows its cost at the built-in list price
// everywhere cost is shown (result.json, report.md, `runner runs`, the dry
// run), marked with the prices' date, and the prompt tokens the provider
// served from its cache cost the cached price. A price in the spec
// overrides the built-in one.
func TestBuiltinPricesShowCost(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "answer to " + e2eCallKey(r), PromptTokens: 1000, CachedTokens: 400, CompletionTokens: 100}
	})
	note := "built-in list prices of " + spec.BuiltinPricesDate
	usage := func(t *testing.T, extra string) (result.Usage, string, string) {
		t.Helper()
		path := e2eSpec(t, simpleSource, extra)
		runs := t.TempDir()
		if code, _, stderr := invoke(t, e2eEnv(srv), "run", path, "-i", "question=q", "--runs-dir", runs, "--no-cache"); code != exitcode.OK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		dirs := runDirs(t, runs)
		if len(dirs) != 1 {
			t.Fatalf("%d run directories", len(dirs))
		}
		data, err := os.ReadFile(filepath.Join(dirs[0], "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		var res result.Result
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		report, err := os.ReadFile(filepath.Join(dirs[0], "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		code, listing, stderr := invoke(t, nil, "runs", runs)
		if code != exitcode.OK {
			t.Fatalf("runner runs: exit %d\n%s", code, stderr)
		}
		return res.Usage.Total, string(report), listing
	}

	u, report, listing := usage(t, "")
	// Two calls, each 600 fresh prompt tokens at 0.15, 400 cached at 0.075
	// and 100 completion tokens at 0.60 per million.
	want := 2 * (600*0.15 + 400*0.075 + 100*0.60) / 1e6
	if u.Calls != 2 || !u.Priced || math.Abs(u.Cost-want) > 1e-12 || u.BuiltinPrices != spec.BuiltinPricesDate {
		t.Errorf("usage %+v, want 2 calls costing %g at built-in prices of %s", u, want, spec.BuiltinPricesDate)
	}
	if !strings.Contains(report, "0.0004*") || !strings.Contains(report, note) {
		t.Errorf("report.md does not show the built-in cost:\n%s", report)
	}
	if !strings.Contains(listing, "0.0004*") || !strings.Contains(listing, note) {
		t.Errorf("runner runs does not show the built-in cost:\n%s", listing)
	}
	code, dry, stderr := invoke(t, nil, "run", e2eSpec(t, simpleSource, ""), "-i", "question=q", "--dry-run")
	if code != exitcode.OK || !strings.Contains(dry, "*") || !strings.Contains(dry, note) || strings.Contains(dry, "no price") {
		t.Errorf("dry run: exit %d, no built-in cost:\n%s\n%s", code, dry, stderr)
	}

	u, report, _ = usage(t, "models:\n  default: {model: gpt-4o-mini, price: {prompt: 1, completion: 2}}\n")
	want = 2 * (1000*1 + 100*2.0) / 1e6
	if math.Abs(u.Cost-want) > 1e-12 || u.BuiltinPrices != "" || strings.Contains(report, note) {
		t.Errorf("a price in the spec: usage %+v, want cost %g and no built-in price", u, want)
	}
}
