package study

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/sweep"
)

// sampler is a scripted model that samples: each time a request's
// messages come again it draws afresh (the draw is a hash of the
// messages and how many times they came before), so N samples of one
// prompt are N draws, as at a temperature above 0. A first-round answer
// (one user message that holds no other agent's answer) is right with
// chance first, an answer after reading others' with chance later; a
// wrong answer is off by 1 to 4, so wrong answers scatter and a majority
// over samples helps.
type sampler struct {
	first, later float64
	mu           sync.Mutex
	seen         map[uint64]int
}

func newSampler(first, later float64) *sampler {
	return &sampler{first: first, later: later, seen: map[uint64]int{}}
}

func (s *sampler) reply(r llmtest.Request) llmtest.Reply {
	v, ok := runtest.Arithmetic(r.LastUser())
	if !ok {
		return llmtest.Reply{Content: `\boxed{0}`}
	}
	h := fnv.New64a()
	for _, msg := range r.Messages {
		h.Write([]byte(msg.Role + "\x00" + msg.Content + "\x00"))
	}
	key := h.Sum64()
	s.mu.Lock()
	k := s.seen[key]
	s.seen[key]++
	s.mu.Unlock()
	fmt.Fprintf(h, "#%d", k)
	draw := h.Sum64()
	p := s.first
	if strings.Contains(r.LastUser(), "most recent answers") {
		p = s.later
	}
	if float64(draw%10000)/10000 >= p {
		v += 1 + int(draw/10000%4)
	}
	return llmtest.Reply{Content: fmt.Sprintf("Step by step it comes to \\boxed{%d}.", v)}
}

// runEqualStudy runs the reasoning debate, its single-agent baseline and
// self-consistency at the debate's compute over n generated items.
func runEqualStudy(t *testing.T, n int, match string) (*Report, *Study, Options) {
	t.Helper()
	ex, err := filepath.Abs("../../examples/reasoning-debate")
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`version: 1
name: equal
dataset: gen:arithmetic?n=%d&seed=7
specs:
  - {path: %s, label: single-agent}
  - {path: %s, label: debate}
baseline: single-agent
resamples: 2000
parallel: 8
equal_compute: {spec: %s, match: %s}
`, n, filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"), filepath.Join(ex, "self-consistency.yaml"), match)
	return runScriptedStudy(t, "equal", src, newSampler(0.5, 0.8).reply)
}

// runScriptedStudy writes src as the study file NAME.yaml and runs the
// study, every call answered by reply on the local server (the API key
// sk-study-NAME), its runs in a temporary folder.
func runScriptedStudy(t *testing.T, name, src string, reply llmtest.Handler) (*Report, *Study, Options) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Prepare(f, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, reply)
	root := t.TempDir()
	opts := Options{Run: runtime.Options{Settings: runtime.Settings{RunsDir: root, Getenv: runtest.Env(srv.URL, "sk-study-"+name)},
		Seams: runtime.Seams{Sleep: runtest.NoSleep}}, Dir: DefaultDir(root, f), Registry: nodes.Registry()}
	rep, err := Run(context.Background(), st, opts)
	if err != nil {
		t.Fatalf("study: %v", err)
	}
	return rep, st, opts
}

// scores are a sweep's scores by dataset line.
func scores(t *testing.T, dir string) map[int]float64 {
	t.Helper()
	s, err := sweep.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]float64{}
	for _, r := range s.Runs {
		if r.Score != nil {
			out[r.Line] = *r.Score
		}
	}
	return out
}

// TestEqualComputeStudy runs a study with an equal-compute baseline
// against a sampling scripted model and checks, from the sweeps' own
// records: self-consistency ran with the debate's mean calls per item as
// its samples, each of its runs made that many calls, and the table's
// difference is the debate's accuracy minus self-consistency's over the
// same items, with its McNemar test counted in Holm's adjustment.
func TestEqualComputeStudy(t *testing.T) {
	const n = 12
	rep, st, opts := runEqualStudy(t, n, "calls")
	dir := opts.Dir
	if len(rep.Rows) != 3 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	single, debate, sc := rep.Rows[0], rep.Rows[1], rep.Rows[2]
	if sc.EqualComputeOf != "debate" || sc.Compute == nil || debate.EqualCompute == nil || single.EqualCompute != nil {
		t.Fatalf("self-consistency row %+v, debate's comparison %+v", sc, debate.EqualCompute)
	}
	ds, err := sweep.Load(filepath.Join(dir, debate.Sweep))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, r := range ds.Runs {
		calls += r.Usage.Calls
	}
	want := int(math.Round(float64(calls) / float64(len(ds.Runs))))
	if sc.Compute.Samples != want || sc.Compute.Items != n || sc.Compute.Match != "calls" {
		t.Errorf("compute %+v, want %d samples from %d calls over %d items", sc.Compute, want, calls, len(ds.Runs))
	}
	ss, err := sweep.Load(filepath.Join(dir, sc.Sweep))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ss.Runs {
		// No reply lacks its box, so no repair: one call per sample.
		if r.Usage.Calls != sc.Compute.Samples {
			t.Errorf("self-consistency run %d made %d calls, not %d", r.Line, r.Usage.Calls, sc.Compute.Samples)
		}
	}
	a, b := scores(t, filepath.Join(dir, debate.Sweep)), scores(t, filepath.Join(dir, sc.Sweep))
	sum, pairs, onlyA, onlyB := 0.0, 0, 0, 0
	for line, x := range a {
		y, ok := b[line]
		if !ok {
			continue
		}
		pairs++
		sum += x - y
		if x > y {
			onlyA++
		} else if y > x {
			onlyB++
		}
	}
	ec := debate.EqualCompute
	if ec.Pairs != n || pairs != n || math.Abs(ec.Difference.Estimate-sum/float64(pairs)) > 1e-9 || ec.OnlyProtocol != onlyA || ec.OnlySelf != onlyB {
		t.Errorf("comparison %+v (difference %+v), want %d pairs, difference %.4f, discordant %d/%d", ec, ec.Difference, pairs, sum/float64(pairs), onlyA, onlyB)
	}
	if ec.Difference.Low > ec.Difference.Estimate || ec.Difference.High < ec.Difference.Estimate {
		t.Errorf("interval %+v does not hold its estimate", ec.Difference)
	}
	if rep.Comparisons != 3 || ec.P == nil || ec.PHolm == nil || *ec.PHolm < *ec.P || sc.PHolm == nil {
		t.Errorf("comparisons %d, p %v, Holm %v", rep.Comparisons, ec.P, ec.PHolm)
	}
	md := rep.Markdown()
	for _, w := range []string{"## Equal compute", "self-consistency ≡ debate", "mean calls per item"} {
		if !strings.Contains(md, w) {
			t.Errorf("results.md lacks %q:\n%s", w, md)
		}
	}
	// What the study prints also has the debate's accuracy and flips per
	// round, as its sweep summed them.
	if len(ds.Rounds) != 2 || !strings.Contains(md, "## Per round") {
		t.Errorf("the debate's sweep has %d rounds; results.md:\n%s", len(ds.Rounds), md)
	}
	for _, rd := range ds.Rounds {
		row := fmt.Sprintf("| debate | (spec's) | %d | %.3f (%.3f–%.3f) | %.3f | %d | %d | %d | %d |", rd.Round, rd.Accuracy.Mean, rd.Accuracy.Low, rd.Accuracy.High,
			rd.AgentAccuracy.Mean, rd.RightToWrong, rd.WrongToRight, rd.ChangedWhileWrong, rd.MajorityChanges)
		if !strings.Contains(strings.Join(strings.Fields(md), " "), strings.Join(strings.Fields(row), " ")) {
			t.Errorf("results.md lacks the debate's round %d as %s", rd.Round, row)
		}
	}
	csv := rep.CSV()
	if !strings.Contains(strings.Split(csv, "\n")[0], "ec_p_holm") {
		t.Errorf("results.csv header: %s", strings.Split(csv, "\n")[0])
	}
	t.Logf("\n%s", md)

	// Continued, the finished study keeps its samples and its table.
	again, err := Run(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Rows[2].Compute.Samples != sc.Compute.Samples || again.EqualComputeTable().Markdown(80) != rep.EqualComputeTable().Markdown(80) {
		t.Errorf("continued: %+v\n%s", again.Rows[2].Compute, again.EqualComputeTable().Markdown(80))
	}
}

// TestEqualComputeTokens matches tokens: the samples are the debate's
// mean tokens per item over the baseline's mean tokens per call, both
// read from the sweeps' runs.
func TestEqualComputeTokens(t *testing.T) {
	rep, _, opts := runEqualStudy(t, 6, "tokens")
	sum := func(label string) (calls, tokens int) {
		for _, row := range rep.Rows {
			if row.Protocol == label {
				s, err := sweep.Load(filepath.Join(opts.Dir, row.Sweep))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range s.Runs {
					calls += r.Usage.Calls
					tokens += r.Usage.PromptTokens + r.Usage.CompletionTokens
				}
				return calls, tokens
			}
		}
		t.Fatalf("no row %s", label)
		return
	}
	_, dt := sum("debate")
	bc, bt := sum("single-agent")
	per := float64(bt) / float64(bc)
	want := int(math.Round(float64(dt) / 6 / per))
	c := rep.Rows[2].Compute
	if c == nil || c.Match != "tokens" || c.Samples != want || math.Abs(c.PerSample-per) > 1e-9 || math.Abs(c.PerItem-float64(dt)/6) > 1e-9 {
		t.Errorf("compute %+v, want %d samples (%.1f tokens per item, %.1f per call)", c, want, float64(dt)/6, per)
	}
	if !strings.Contains(rep.Markdown(), "mean tokens per item over the mean tokens of one call of the baseline") {
		t.Error("results.md does not say tokens were matched")
	}
}
