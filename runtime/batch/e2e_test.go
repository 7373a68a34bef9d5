package batch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/batchtest"
	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/batch"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/study"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

func TestMain(m *testing.M) {
	// The sweeps of these tests wait milliseconds, not seconds, for a wave
	// and between polls.
	sweep.BatchWindow, sweep.BatchPoll = 25*time.Millisecond, 2*time.Millisecond
	os.Exit(m.Run())
}

// kinds are the provider kinds with a batch API, each with its endpoint's
// base URL below the fake server and a model with a list price.
var kinds = []struct {
	kind, path, model, key string
}{
	{"openai", "/v1", "gpt-4o-mini", "OPENAI_API_KEY"},
	{"anthropic", "", "claude-haiku-4-5", "ANTHROPIC_API_KEY"},
	{"gemini", "", "gemini-2.5-flash", "GEMINI_API_KEY"},
}

// debatePlan is examples/reasoning-debate with its agents on a model of
// kind at the fake server, at its list price, over rounds rounds.
func debatePlan(t testing.TB, kind, url, model, key string, rounds int) *spec.Plan {
	t.Helper()
	src, err := os.ReadFile("../../examples/reasoning-debate/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A server on this machine is not priced at a hosted model's list
	// price unless the spec declares it: these declare it.
	list := spec.BuiltinPrice(model)
	text := regexp.MustCompile(`\{name: (Agent [A-C])\}`).ReplaceAllString(string(src), "{name: $1, model: m}")
	text = strings.Replace(text, "rounds: 2", fmt.Sprintf("rounds: %d", rounds), 1)
	text = strings.Replace(text, "agents:", fmt.Sprintf(`endpoints:
  e: {kind: %s, base_url: %q, api_key_env: %s}

models:
  m: {model: %s, endpoint: e, max_tokens: 512, price: {prompt: %g, completion: %g}}

agents:`, kind, url, key, model, list.Prompt, list.Completion), 1)
	return runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), text))
}

// dataset writes n arithmetic questions.
func dataset(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"question\": \"What is %d+%d?\", \"expected\": %d}\n", i, 2*i, 3*i)
	}
	path := filepath.Join(t.TempDir(), "dataset.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runOptions(t testing.TB, key string) runtime.Options {
	return runtime.Options{
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: func(k string) string {
			if k == key {
				return "sk-test-batch-key-0123456789"
			}
			return ""
		}},
		Seams: runtime.Seams{Sleep: runtest.NoSleep},
	}
}

// replies reads the model replies the sweep's runs journaled: each run's
// replies by call key, counting repeats.
func replies(t testing.TB, sum *sweep.Summary) (byRun []map[string]int, batched int) {
	t.Helper()
	for _, r := range sum.Runs {
		evs, err := journal.Read(filepath.Join(r.Dir, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, ev := range evs {
			if ev.Type != event.ModelResponse {
				continue
			}
			got[ev.Key]++
			var rep struct {
				Batch string `json:"batch"`
			}
			_ = json.Unmarshal(ev.Data, &rep)
			if rep.Batch != "" {
				batched++
			}
		}
		byRun = append(byRun, got)
	}
	return byRun, batched
}

// checkOnce fails unless every run completed with each of its calls
// answered exactly once, and no request was billed twice.
func checkOnce(t testing.TB, srv *batchtest.Server, sum *sweep.Summary, calls int) {
	t.Helper()
	for _, r := range sum.Runs {
		if r.Status != result.StatusCompleted {
			t.Fatalf("run %d: %s %s", r.Index, r.Status, r.Error)
		}
	}
	byRun, _ := replies(t, sum)
	n := 0
	for i, m := range byRun {
		for k, c := range m {
			if c != 1 {
				t.Errorf("run %d: call %s has %d recorded replies, want 1", i+1, k, c)
			}
			n++
		}
	}
	if n != calls {
		t.Errorf("%d calls recorded, want %d", n, calls)
	}
	if twice := srv.TwiceBilled(); len(twice) > 0 {
		t.Errorf("requests paid twice: %v", twice)
	}
	srv.Lock()
	for id, c := range srv.Submitted {
		if c != 1 {
			t.Errorf("request %s was submitted in %d batches", id, c)
		}
	}
	srv.Unlock()
	if got := srv.BilledCount(); got != calls {
		t.Errorf("the server billed %d requests, want %d (one per call)", got, calls)
	}
}

// TestBatchSweepEndToEnd runs a dataset sweep of reasoning-debate in batch
// mode against the fake batch APIs of each kind: every call is answered
// from a batch (none sent on its own), each request is submitted and billed
// once, the batches are recorded in batches.json, and the sweep costs half
// of the same sweep without batches.
func TestBatchSweepEndToEnd(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			const items, rounds = 4, 2
			srv := batchtest.New(t)
			plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, rounds)
			data := dataset(t, items)
			var told []batch.Progress
			sum, err := sweep.Sweep(context.Background(), plan, sweep.Options{
				Run: runOptions(t, k.key), Dataset: data, Batch: true,
				OnBatch: func(p batch.Progress) { told = append(told, p) },
			})
			if err != nil {
				t.Fatal(err)
			}
			calls := items * rounds * 3
			checkOnce(t, srv, sum, calls)
			if srv.Direct != 0 {
				t.Errorf("%d requests were sent on their own, want 0", srv.Direct)
			}
			if srv.Submissions < rounds {
				t.Errorf("%d batches, want at least one per round (%d)", srv.Submissions, rounds)
			}
			if sum.Usage.BatchCalls != calls {
				t.Errorf("summary counts %d batched calls, want %d", sum.Usage.BatchCalls, calls)
			}
			md, err := os.ReadFile(filepath.Join(sum.Dir, "summary.md"))
			if want := fmt.Sprintf("- Batch: %d of %d calls answered in provider batches", calls, calls); err != nil || !strings.Contains(string(md), want) {
				t.Errorf("summary.md lacks %q (%v)", want, err)
			}
			var rec struct {
				Batches []batch.Entry `json:"batches"`
			}
			data2, err := os.ReadFile(filepath.Join(sum.Dir, batch.FileName))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data2, &rec); err != nil {
				t.Fatal(err)
			}
			if len(rec.Batches) != srv.Submissions {
				t.Errorf("batches.json records %d batches, the server made %d", len(rec.Batches), srv.Submissions)
			}
			for _, b := range rec.Batches {
				if !b.Ended || b.Done != len(b.Requests) {
					t.Errorf("batch %s recorded as %+v", b.ID, b)
				}
			}
			if strings.Contains(string(data2), "sk-test") {
				t.Error("batches.json holds the API key")
			}
			if len(told) == 0 || told[len(told)-1].Done != calls {
				t.Errorf("progress told: %+v", told)
			}

			// The same sweep without batches, against the same server: the
			// same tokens at the list price.
			plain, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: data, Parallel: items})
			if err != nil {
				t.Fatal(err)
			}
			if plain.Usage.PromptTokens != sum.Usage.PromptTokens || plain.Usage.CompletionTokens != sum.Usage.CompletionTokens {
				t.Fatalf("tokens differ: batch %+v, plain %+v", sum.Usage, plain.Usage)
			}
			if ratio := sum.Usage.Cost / plain.Usage.Cost; !(plain.Usage.Cost > 0) || math.Abs(ratio-0.5) > 1e-6 || plain.Usage.BatchCalls != 0 {
				t.Errorf("batch cost %g, plain %g: ratio %g, want 0.5", sum.Usage.Cost, plain.Usage.Cost, ratio)
			}
		})
	}
}

// waitFor polls cond every millisecond for up to a minute.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// killedTwice runs a batch-mode sweep of items over plan (whose model is
// reached with key), kills it (cancels its context) while its first
// wave's batch is pending, resumes it, kills it again while the second
// wave's batch is pending, and resumes it to its end, which it returns.
// It fails when a resume submits a request its batches.json records.
func killedTwice(tb testing.TB, srv *batchtest.Server, plan *spec.Plan, key string, items int) *sweep.Summary {
	tb.Helper()
	srv.Hold()
	submitted := func() int { srv.Lock(); defer srv.Unlock(); return len(srv.Submitted) }
	polls := func() int { srv.Lock(); defer srv.Unlock(); return srv.Polls }
	type ended struct {
		sum *sweep.Summary
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ended, 1)
	go func() {
		sum, err := sweep.Sweep(ctx, plan, sweep.Options{Run: runOptions(tb, key), Dataset: dataset(tb, items), Batch: true})
		done <- ended{sum, err}
	}()
	wave := items * 3
	waitFor(tb, "the first wave's batch", func() bool { return submitted() == wave })
	cancel() // the first kill
	first := <-done
	if first.sum == nil || first.sum.Pending != items {
		tb.Fatalf("killed sweep: %+v, %v", first.sum, first.err)
	}
	dir := first.sum.Dir
	resume := func(ctx context.Context) chan ended {
		ch := make(chan ended, 1)
		go func() {
			sum, err := sweep.Resume(ctx, dir, nodes.Registry(), sweep.ResumeOptions{Run: runOptions(tb, key)})
			ch <- ended{sum, err}
		}()
		return ch
	}
	before := polls()
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := resume(ctx2)
	waitFor(tb, "the resume to poll the recorded batch", func() bool { return polls() > before+2 })
	if submitted() != wave {
		tb.Fatalf("the resume submitted again: %d requests submitted, want %d", submitted(), wave)
	}
	srv.ReleaseExisting() // the first wave ends; the second is held
	waitFor(tb, "the second wave's batch", func() bool { return submitted() == 2*wave })
	cancel2() // the second kill
	if r := <-second; r.sum == nil || r.sum.Pending != items {
		tb.Fatalf("sweep killed again: %+v, %v", r.sum, r.err)
	}
	srv.Release()
	last := <-resume(context.Background())
	if last.err != nil {
		tb.Fatal(last.err)
	}
	return last.sum
}

// TestBatchSweepKilledWhilePending kills a batch-mode sweep while its
// first wave's batch is pending, resumes it, kills it again while the
// second wave's batch is pending, and resumes it to its end: the resumes
// poll the recorded batches instead of submitting their requests again,
// and no request is paid twice.
func TestBatchSweepKilledWhilePending(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			const items, rounds = 3, 2
			srv := batchtest.New(t)
			plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, rounds)
			sum := killedTwice(t, srv, plan, k.key, items)
			checkOnce(t, srv, sum, items*rounds*3)
			if srv.Direct != 0 {
				t.Errorf("%d requests were sent on their own, want 0", srv.Direct)
			}
		})
	}
}

// TestBatchFailedRequestsGoAlone has the batches fail, expire or cancel
// some of their requests: those are sent on their own (at the list price),
// every call is answered once, and none is paid twice.
func TestBatchFailedRequestsGoAlone(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			const items, rounds = 3, 2
			srv := batchtest.New(t)
			srv.Outcome = func(id string) batchtest.Outcome {
				switch id[0] {
				case '0', '1', '2':
					return batchtest.Error
				case '3':
					return batchtest.Expire
				case '4':
					return batchtest.Cancel
				}
				return batchtest.Succeed
			}
			plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, rounds)
			sum, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: dataset(t, items), Batch: true})
			if err != nil {
				t.Fatal(err)
			}
			calls := items * rounds * 3
			checkOnce(t, srv, sum, calls)
			if srv.Direct == 0 {
				t.Fatal("no request was sent on its own")
			}
			_, batched := replies(t, sum)
			if batched+srv.Direct != calls || sum.Usage.BatchCalls != batched {
				t.Errorf("%d batched + %d alone, want %d calls; summary counts %d batched", batched, srv.Direct, calls, sum.Usage.BatchCalls)
			}
		})
	}
}

// FuzzBatchSweepOutcomes runs a batch-mode sweep whose batches give each
// request a random outcome (answered, errored, expired, cancelled), of
// either kind: every run completes with exactly one recorded reply per
// call, and the server bills exactly one request per call.
func FuzzBatchSweepOutcomes(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(2026), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8) {
		k := kinds[int(kind)%len(kinds)]
		outcomes := []batchtest.Outcome{batchtest.Succeed, batchtest.Succeed, batchtest.Error, batchtest.Expire, batchtest.Cancel}
		srv := batchtest.New(t)
		srv.Outcome = func(id string) batchtest.Outcome {
			// A request's outcome is drawn from the seed and its id, so
			// that every poll of its batch tells the same.
			var h uint64 = seed
			for _, c := range id {
				h = h*1099511628211 ^ uint64(c)
			}
			return outcomes[h%uint64(len(outcomes))]
		}
		const items, rounds = 3, 1
		plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, rounds)
		sum, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: dataset(t, items), Batch: true})
		if err != nil {
			t.Fatal(err)
		}
		checkOnce(t, srv, sum, items*rounds*3)
	})
}

// TestBatchStudy runs a study (the reasoning debate against its
// single-agent baseline) with batch: true against the fake OpenAI Batch
// API: each sweep's calls are answered from batches, none sent on its own,
// and each sweep records its batches.
func TestBatchStudy(t *testing.T) {
	srv := batchtest.New(t)
	ex, err := filepath.Abs("../../examples/reasoning-debate")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "study.yaml")
	src := fmt.Sprintf("version: 1\nname: batched\ndataset: %s\nspecs:\n  - {path: %s, label: single-agent}\n  - {path: %s, label: debate}\nbaseline: single-agent\nresamples: 100\nbatch: true\n",
		dataset(t, 3), filepath.Join(ex, "baseline.yaml"), filepath.Join(ex, "spec.yaml"))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := study.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := study.Prepare(f, nodes.Registry())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	o := runOptions(t, "OPENAI_API_KEY")
	getenv := o.Getenv
	o.Getenv = func(k string) string {
		if k == "OPENAI_BASE_URL" {
			return srv.URL + "/v1"
		}
		return getenv(k)
	}
	if _, err := study.Run(context.Background(), st, study.Options{Run: o, Dir: study.DefaultDir(root, f), Registry: nodes.Registry()}); err != nil {
		t.Fatal(err)
	}
	if srv.Direct != 0 || srv.Submissions < 2 || srv.BilledCount() == 0 {
		t.Errorf("%d requests sent on their own, %d batches, %d billed", srv.Direct, srv.Submissions, srv.BilledCount())
	}
	recs, _ := filepath.Glob(filepath.Join(root, "*", "*", batch.FileName))
	if len(recs) != 2 {
		t.Errorf("batches.json of the sweeps: %v", recs)
	}
}

// TestBatchStreamedModel runs a batch-mode sweep of a model that streams:
// its requests go into the batch without streaming (the fake server
// refuses a batch line that asks for it), and every call is answered from
// the batch.
func TestBatchStreamedModel(t *testing.T) {
	k := kinds[0]
	srv := batchtest.New(t)
	plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, 1)
	for _, m := range plan.Models {
		m.Stream = true
	}
	sum, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: dataset(t, 2), Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	checkOnce(t, srv, sum, 2*3)
	if srv.Direct != 0 {
		t.Errorf("%d requests were sent on their own, want 0", srv.Direct)
	}
}

// TestBatchSharedRequestsBilledOnce: a dataset whose lines repeat makes
// runs ask identical calls in one wave; the batch holds each request once,
// the provider bills it once, and the sweep's cost is that of the distinct
// lines at batch prices: the runs that shared a request are not charged
// for it again (their replies are marked batch_shared).
func TestBatchSharedRequestsBilledOnce(t *testing.T) {
	k := kinds[0]
	const distinct, rounds = 2, 1
	srv := batchtest.New(t)
	plan := debatePlan(t, k.kind, srv.URL+k.path, k.model, k.key, rounds)
	twice := dataset(t, distinct)
	data, err := os.ReadFile(twice)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(twice, append(data, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: twice, Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := distinct * rounds * 3
	if got := srv.BilledCount(); got != calls {
		t.Errorf("the server billed %d requests, want %d (the repeated lines ask the same)", got, calls)
	}
	plain, err := sweep.Sweep(context.Background(), plan, sweep.Options{Run: runOptions(t, k.key), Dataset: dataset(t, distinct)})
	if err != nil {
		t.Fatal(err)
	}
	if ratio := sum.Usage.Cost / plain.Usage.Cost; !(plain.Usage.Cost > 0) || math.Abs(ratio-0.5) > 1e-6 {
		t.Errorf("batch sweep of the lines twice cost %g, the distinct lines alone %g at list price: ratio %g, want 0.5", sum.Usage.Cost, plain.Usage.Cost, ratio)
	}
	shared := 0
	for _, r := range sum.Runs {
		evs, err := journal.Read(filepath.Join(r.Dir, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == event.ModelResponse && strings.Contains(string(ev.Data), `"batch_shared":true`) {
				shared++
			}
		}
	}
	if shared != calls {
		t.Errorf("%d replies marked batch_shared, want %d (one per call of the repeated lines)", shared, calls)
	}
}
