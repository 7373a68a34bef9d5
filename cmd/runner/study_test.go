package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/study"
)

// studyModels are the two scripted models of the study tests: an agent
// answers right with probability first in its first round and later after
// it (chancySolver, a draw from a hash of the request). The debate's three
// agents send identical requests (no persona, the same question), which
// such a model answers alike, so their majority is right with probability
// later, and the single agent with probability first.
var studyModels = map[string][2]float64{"solver-a": {0.55, 0.85}, "solver-b": {0.7, 0.9}}

func studyHandler(delay time.Duration) llmtest.Handler {
	solvers := map[string]llmtest.Handler{}
	for m, p := range studyModels {
		solvers[m] = chancySolver(p[0], p[1])
	}
	return func(r llmtest.Request) llmtest.Reply {
		h, ok := solvers[r.Model]
		if !ok {
			return llmtest.Reply{Content: "no such model " + r.Model}
		}
		rep := h(r)
		rep.Delay = delay
		return rep
	}
}

// writeStudy writes the study of (du-society-of-minds, its baseline) x
// (solver-a, solver-b) x arithmetic n=100.
func writeStudy(t *testing.T) string {
	t.Helper()
	ex, err := filepath.Abs("../../examples/protocols/du-society-of-minds")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "study.yaml")
	src := fmt.Sprintf(`version: 1
name: du-two-models
dataset: gen:arithmetic?n=100&seed=1
specs:
  - {path: %s, label: single-agent}
  - {path: %s, label: debate}
baseline: single-agent
models: [solver-a, solver-b]
resamples: 2000
`, filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func studyEnv(srv *llmtest.Server, cache string) []string {
	return append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-study-test", "RUNNER_CACHE_DIR="+cache)
}

// killStudyAt starts cmd with env and kills it with SIGKILL once srv has
// had calls requests; it fails the test if the study ends first or the
// calls do not come within wait.
func killStudyAt(t *testing.T, cmd *exec.Cmd, env []string, srv *llmtest.Server, calls int, wait time.Duration) {
	t.Helper()
	out, exited := started(t, cmd, env)
	deadline := time.Now().Add(wait)
	for srv.Count() < calls {
		select {
		case err := <-exited:
			t.Fatalf("the study ended before the kill: %v\n%s", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls within %v\n%s", srv.Count(), wait, out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// journaledResponses counts the model responses that came from the
// endpoint (not the cache) in the journals of every run under dir.
func journaledResponses(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "*", "journal.jsonl"))
	for _, p := range paths {
		evs, err := journal.Read(p)
		if err != nil {
			continue // a journal cut mid-line by the kill is read by resume
		}
		for _, e := range evs {
			var rep struct {
				Source string `json:"source"`
			}
			if e.Type == "model_response" && json.Unmarshal(e.Data, &rep) == nil && rep.Source == "" {
				n++
			}
		}
	}
	return n
}

// withoutSeconds drops the columns of results.csv that two runs of a study
// may differ in: wall time and sweep directories.
func withoutSeconds(t *testing.T, data string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	drop := map[int]bool{}
	for i, h := range recs[0] {
		if h == "seconds" || h == "sweep" {
			drop[i] = true
		}
	}
	var out [][]string
	for _, r := range recs {
		var row []string
		for i, c := range r {
			if !drop[i] {
				row = append(row, c)
			}
		}
		out = append(out, row)
	}
	return out
}

// TestStudyKilledAndContinued runs the study of Du et al.'s debate and its
// single-agent baseline over two scripted models and 100 arithmetic items
// with the real binary, SIGKILLs it mid-study, runs the same command again,
// and checks: the table is the one an uninterrupted study gives, no call
// journaled before the kill was asked again, the accuracies' intervals hold
// the scripted models' true accuracies, and results.md, results.csv and
// results.json agree.
func TestStudyKilledAndContinued(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	bin := runnerBinary(t)
	path := writeStudy(t)

	// The uninterrupted reference.
	refSrv := llmtest.New(t, studyHandler(0))
	refDir := filepath.Join(t.TempDir(), "ref")
	start := time.Now()
	cmd := exec.Command(bin, "study", path, "--dir", refDir, "-q")
	cmd.Env = studyEnv(refSrv, t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference study: %v\n%s", err, out)
	}
	t.Logf("uninterrupted study: %.1f s wall, %d calls sent", time.Since(start).Seconds(), refSrv.Count())
	refCSV, err := os.ReadFile(filepath.Join(refDir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}

	// Killed once a third of the calls are made, then continued.
	srv := llmtest.New(t, studyHandler(2*time.Millisecond))
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "study")
	killStudyAt(t, exec.Command(bin, "study", path, "--dir", dir, "-q"), studyEnv(srv, cache), srv, refSrv.Count()/3, 60*time.Second)
	asked := srv.Count()
	journaled := journaledResponses(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "results.csv")); err == nil {
		t.Fatal("a killed study has results.csv")
	}

	cmd = exec.Command(bin, "study", path, "--dir", dir)
	cmd.Env = studyEnv(srv, cache)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("continued study: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "resumed") {
		t.Errorf("the continued study resumed no sweep:\n%s", stderr.String())
	}
	// Every call answered before the kill was journaled or in flight; the
	// study asks again at most those in flight, never a journaled one.
	again := srv.Count() - refSrv.Count()
	if inFlight := asked - journaled; again > inFlight {
		t.Errorf("the killed and continued study sent %d calls more than an uninterrupted one, but only %d were unanswered at the kill (%d asked, %d journaled)", again, inFlight, asked, journaled)
	}
	t.Logf("killed after %d calls (%d journaled); continued: %d calls in all, %d more than uninterrupted\n%s", asked, journaled, srv.Count(), again, stdout.String())
	gotCSV, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The tables agree but for the calls sent: a reply that reached the
	// cache but not the journal before the kill is served by the cache
	// after it, so at most the calls in flight count as not sent.
	a, b := withoutSeconds(t, string(refCSV)), withoutSeconds(t, string(gotCSV))
	sent := slices.Index(a[0], "sent_calls")
	for i := 1; i < len(a) && i < len(b); i++ {
		x, _ := strconv.Atoi(a[i][sent])
		y, _ := strconv.Atoi(b[i][sent])
		if y > x || y < x-(asked-journaled) {
			t.Errorf("row %d: %d calls sent, uninterrupted %d", i, y, x)
		}
		a[i][sent], b[i][sent] = "", ""
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the continued study's table differs from the uninterrupted one:\n%s\nvs\n%s", gotCSV, refCSV)
	}

	// The three forms agree, and the intervals hold the true accuracies.
	var rep study.Report
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(md) {
		t.Errorf("the printed table is not results.md:\n%s", stdout.String())
	}
	if !strings.Contains(string(md), "Holm-adjusted across the 2 comparisons") {
		t.Errorf("results.md does not say the p-values are Holm-adjusted:\n%s", md)
	}
	rows := withoutSeconds(t, string(gotCSV))
	if len(rep.Rows) != 4 || len(rows) != 5 {
		t.Fatalf("want 4 rows (2 protocols x 2 models), got %d in JSON and %d in CSV", len(rep.Rows), len(rows)-1)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(s string) float64 {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("CSV cell %q: %v", s, err)
		}
		return x
	}
	var ps []float64
	for i, r := range rep.Rows {
		c := rows[i+1]
		p := studyModels[r.Model]
		want := p[0]
		if r.Protocol == "debate" {
			want = p[1]
		}
		a := r.Accuracy
		if a == nil || r.N != 100 {
			t.Fatalf("row %d: n=%d, accuracy %v", i, r.N, a)
		}
		if want < a.Low || want > a.High {
			t.Errorf("%s with %s: the 95%% interval %.3f–%.3f misses the true accuracy %.3f", r.Protocol, r.Model, a.Low, a.High, want)
		}
		if c[col["protocol"]] != r.Protocol || c[col["model"]] != r.Model || math.Abs(num(c[col["accuracy"]])-a.Mean) > 1e-12 ||
			num(c[col["calls"]]) != float64(r.Calls) || num(c[col["tokens"]]) != float64(r.Tokens) {
			t.Errorf("CSV row %d %v disagrees with JSON row %+v", i+1, c, r)
		}
		cell := fmt.Sprintf("| %s | %s | 100 | %.3f (%.3f–%.3f) |", r.Protocol, r.Model, a.Mean, a.Low, a.High)
		if !strings.Contains(string(md), cell) {
			t.Errorf("results.md lacks %q", cell)
		}
		if r.Protocol != "debate" {
			if len(r.Rounds) != 1 {
				t.Errorf("%s with %s: %d rounds, want its one", r.Protocol, r.Model, len(r.Rounds))
			}
			continue
		}
		// Per round: the first round's majority is right as often as a
		// first answer, the last as often as a later one.
		if len(r.Rounds) < 2 {
			t.Fatalf("%s with %s: rounds %+v, want one per debate round", r.Protocol, r.Model, r.Rounds)
		}
		for i, rd := range []study.RoundRow{r.Rounds[0], r.Rounds[len(r.Rounds)-1]} {
			if a := rd.Accuracy; a == nil || a.N != 100 || p[i] < a.Low || p[i] > a.High {
				t.Errorf("%s with %s, round %d: accuracy %+v, want an interval over 100 runs holding %.2f", r.Protocol, r.Model, rd.Round, a, p[i])
			}
			cell := fmt.Sprintf("| %s | %s | %d | %.3f (%.3f–%.3f) |", r.Protocol, r.Model, rd.Round, rd.Accuracy.Mean, rd.Accuracy.Low, rd.Accuracy.High)
			if !strings.Contains(string(md), cell) {
				t.Errorf("results.md lacks the round %q", cell)
			}
		}
		if r.Difference == nil || r.P == nil || r.PHolm == nil {
			t.Fatalf("%s with %s has no paired difference or p-value", r.Protocol, r.Model)
		}
		if math.Abs(num(c[col["difference"]])-r.Difference.Estimate) > 1e-12 || math.Abs(num(c[col["p_holm"]])-*r.PHolm) > 1e-12 {
			t.Errorf("CSV row %d disagrees with JSON on the difference or p", i+1)
		}
		cell = fmt.Sprintf("%+.3f (%+.3f to %+.3f)", r.Difference.Estimate, r.Difference.Low, r.Difference.High)
		if !strings.Contains(string(md), cell) {
			t.Errorf("results.md lacks the difference %q", cell)
		}
		ps = append(ps, *r.P)
	}
	if len(ps) != 2 {
		t.Fatalf("want 2 comparisons, got %d", len(ps))
	}
	lo, hi := min(ps[0], ps[1]), max(ps[0], ps[1])
	wantHolm := map[float64]float64{lo: math.Min(1, 2*lo), hi: math.Min(1, math.Max(2*lo, hi))}
	for _, r := range rep.Rows {
		if r.P != nil && math.Abs(*r.PHolm-wantHolm[*r.P]) > 1e-12 {
			t.Errorf("%s with %s: Holm p %g, want %g (raw %g)", r.Protocol, r.Model, *r.PHolm, wantHolm[*r.P], *r.P)
		}
	}
}
