package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/runtime/sweep"
)

const (
	duSpec     = "../../examples/protocols/du-society-of-minds/spec.yaml"
	duBaseline = "../../examples/protocols/du-society-of-minds/baseline.yaml"
	duData     = "gen:arithmetic?n=20&seed=3"
)

// chancySolver answers an arithmetic question right with probability first
// in an agent's first round and later in the rounds after it, wrong (one
// off) otherwise. The draw is a hash of the whole request, so the same
// request is answered alike every time: the known probabilities hold over
// items, and the answers are reproducible.
func chancySolver(first, later float64) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		var m []string
		users := 0
		h := fnv.New64a()
		for _, msg := range r.Messages {
			h.Write([]byte(msg.Role + "\x00" + msg.Content + "\x00"))
			if msg.Role == "user" {
				users++
				if m == nil {
					m = arithmetic.FindStringSubmatch(msg.Content)
				}
			}
		}
		if m == nil {
			return llmtest.Reply{Content: "19"}
		}
		n := make([]int, 6)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		v := n[0] + n[1]*n[2] + n[3] - n[4]*n[5]
		p := first
		if users > 1 {
			p = later
		}
		if float64(h.Sum64()%10000)/10000 >= p {
			v++
		}
		return llmtest.Reply{Content: fmt.Sprintf("Working it out, the answer is %d.", v)}
	}
}

// TestComparePairsDebateWithBaseline runs Du et al.'s debate and its
// single-agent baseline over the same dataset against a scripted model,
// then checks compare's paired figures against a direct computation from
// the two sweeps' summaries.
func TestComparePairsDebateWithBaseline(t *testing.T) {
	srv := llmtest.New(t, chancySolver(0.55, 0.85))
	runs := t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	_, stderr := mustRun(t, env, "run", duSpec, "--dataset", duData, "--runs-dir", runs, "-q")
	debate := sweepDir(t, stderr)
	sent := srv.Count()
	_, stderr = mustRun(t, env, "run", duBaseline, "--dataset", duData, "--runs-dir", runs, "-q")
	baseline := sweepDir(t, stderr)
	if srv.Count() != sent {
		t.Errorf("the baseline sent %d requests; its requests are the debate's first", srv.Count()-sent)
	}
	sd, err := sweep.Load(debate)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sweep.Load(baseline)
	if err != nil {
		t.Fatal(err)
	}
	// The direct computation.
	var a, b []float64
	aOnly, bOnly := 0, 0
	for i := range sd.Runs {
		x, y := *sd.Runs[i].Score, *sb.Runs[i].Score
		if sd.Runs[i].Line != sb.Runs[i].Line {
			t.Fatal("runs not in dataset order")
		}
		a, b = append(a, x), append(b, y)
		if x > y {
			aOnly++
		} else if x < y {
			bOnly++
		}
	}
	iv, _ := stats.BootstrapMeanDiff(a, b, 10000, 1, 0.95)
	accA, accB := sweep.MeanCI(a), sweep.MeanCI(b)
	p := stats.McNemarExact(aOnly, bOnly)

	stdout, _ := mustRun(t, env, "compare", debate, baseline)
	t.Logf("compare:\n%s", stdout[strings.Index(stdout, "## Paired"):])
	for _, w := range []string{
		fmt.Sprintf("| accuracy on the pairs (95%% CI) | %.3f (%.3f–%.3f, wilson) | %.3f (%.3f–%.3f, wilson) |", accA.Mean, accA.Low, accA.High, accB.Mean, accB.Low, accB.High),
		fmt.Sprintf("Difference A − B: %+.3f (95%% paired bootstrap CI %+.3f to %+.3f; 10000 resamples, seed 1; n=20 pairs)", iv.Estimate, iv.Low, iv.High),
		fmt.Sprintf("Exact McNemar test: p = %.4f (two-sided; discordant pairs: A right/B wrong %d, A wrong/B right %d;", p, aOnly, bOnly),
		"| calls per item | 6.00 | 1.00 | 6.00x |",
		"| calls from the cache (sent by the other sweep) | 0 (0) | 20 (20) |",
		"B took 20 from requests A sent",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare lacks %q", w)
		}
	}
	if aOnly+bOnly == 0 {
		t.Error("no discordant pair: the scripted probabilities should give some")
	}

	// JSON and CSV say the same.
	stdout, _ = mustRun(t, env, "compare", debate, baseline, "--json")
	var res struct {
		Pairs      int
		Difference stats.Interval
		Tests      []stats.Test
		AOnly      int `json:"a_right_b_wrong"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if res.Pairs != 20 || res.Difference != iv || math.Abs(res.Tests[0].P-p) > 1e-12 || res.AOnly != aOnly {
		t.Errorf("JSON %+v", res)
	}
	stdout, _ = mustRun(t, env, "compare", debate, baseline, "--csv")
	if !strings.Contains(stdout, fmt.Sprintf("difference,%.4f,,", iv.Estimate)) || !strings.Contains(stdout, fmt.Sprintf("a_right_b_wrong,%d,,", aOnly)) {
		t.Errorf("CSV:\n%s", stdout)
	}

	// The gate on the interval's lower end: debate against the baseline.
	code, _, stderr := invoke(t, env, "compare", debate, "--baseline", baseline, "--margin", "0", "--margin-on", "lower", "--csv")
	wantCode := exitcode.OK
	if iv.Low < 0 {
		wantCode = exitcode.Gate
	}
	if code != wantCode || !strings.Contains(stderr, fmt.Sprintf("lower end of its 95%% paired interval %+.3f", iv.Low)) {
		t.Errorf("gate --margin-on lower: exit %d (want %d)\n%s", code, wantCode, stderr)
	}
	// The baseline against the debate: the interval lies below 0, so the
	// gate fails even with a margin the point estimate would clear.
	if iv.Low < 0 || iv.Estimate > 0.3 {
		worse := fmt.Sprintf("%.2f", iv.Estimate+0.01)
		if code, _, stderr := invoke(t, env, "compare", baseline, "--baseline", debate, "--margin", worse); code != exitcode.OK {
			t.Errorf("mean gate with margin %s: exit %d\n%s", worse, code, stderr)
		}
		code, _, stderr := invoke(t, env, "compare", baseline, "--baseline", debate, "--margin", worse, "--margin-on", "lower")
		if code != exitcode.Gate || !strings.Contains(stderr, fmt.Sprintf("lower end of its 95%% paired interval %+.3f is below −%s", -iv.High, worse)) {
			t.Errorf("lower gate with margin %s: exit %d\n%s", worse, code, stderr)
		}
	}
	if code, _, stderr := invoke(t, env, "compare", debate, "--baseline", baseline, "--margin", "1", "--margin-on", "lower"); code != exitcode.OK {
		t.Errorf("gate with margin 1: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, env, "compare", debate, "--json"); code != exitcode.Usage || !strings.Contains(stderr, "two sweep") {
		t.Errorf("--json of one sweep: exit %d\n%s", code, stderr)
	}

	// An item only one side has is listed, not dropped: drop the
	// baseline's last run from a copy of its summary.
	sb.Runs = sb.Runs[:len(sb.Runs)-1]
	data, _ := json.Marshal(sb)
	short := filepath.Join(t.TempDir(), "sweep-short")
	if err := os.MkdirAll(short, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(short, "summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _ = mustRun(t, env, "compare", debate, short)
	if !strings.Contains(stdout, "Items left out of the pairing (1):") || !strings.Contains(stdout, "| 20 | 0 | -1148 | only in A |") && !strings.Contains(stdout, "only in A") {
		t.Errorf("unpaired item not listed:\n%s", stdout)
	}
}

// A CSV dataset runs like a JSONL one; a bad row is named by file and line.
func TestCSVDatasetThroughTheCLI(t *testing.T) {
	srv := llmtest.New(t, chancySolver(1, 1))
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	good := filepath.Join(dir, "items.csv")
	if err := os.WriteFile(good, []byte("question,expected,source\nWhat is the result of 1+2*3+4-5*6?,-19,x\n\"What is the result of 10+0*3+4-1*1?\",13,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _ := mustRun(t, env, "run", duBaseline, "--dataset", good, "--runs-dir", t.TempDir(), "-q")
	if !strings.Contains(stdout, "accuracy: 1.000") || !strings.Contains(stdout, "n=2)") {
		t.Errorf("CSV sweep:\n%s", stdout)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("question,expected\nq,1\nq,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, env, "run", duBaseline, "--dataset", bad, "--runs-dir", t.TempDir())
	if code != exitcode.Usage || !strings.Contains(stderr, "bad.csv:3: 3 fields, but the header row names 2") {
		t.Errorf("bad CSV: exit %d\n%s", code, stderr)
	}
}
