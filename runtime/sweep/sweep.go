// Package sweep runs a spec many times over a matrix of var and input values,
// repeats and the lines of a dataset, and summarizes the runs with their
// accuracy; its tables also list and compare run directories. It is built on
// package runtime, which knows nothing of it.
package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/batch"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// Axis is one dimension of a sweep (--matrix NAME=V1,V2,...): a var or an
// input of the spec and the values to try, as command-line text.
type Axis struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// ParseAxis parses NAME=V1,V2,...
func ParseAxis(s string) (Axis, error) {
	name, list, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(list) == "" {
		return Axis{}, &args.FlagError{Flag: "--matrix " + s, Err: errors.New("expected NAME=V1,V2 (the values separated by commas)")}
	}
	a := Axis{Name: name}
	seen := map[string]bool{}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if seen[v] {
			return Axis{}, &args.FlagError{Flag: "--matrix " + name, Err: fmt.Errorf("value %q is given twice", v)}
		}
		seen[v] = true
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// DatasetLine is one line of a --dataset file: inputs for one run and the
// value its outputs are scored against.
type DatasetLine struct {
	Line     int            `json:"line"`
	Inputs   map[string]any `json:"inputs"`
	Expected any            `json:"expected,omitempty"`
}

// ReadDataset reads a JSONL file: one JSON object per line, whose fields
// become inputs, except "expected" (or "answer"), which is what the spec's
// score compares the outputs with. Fields the spec declares no input for are
// returned in unused; blank lines are skipped.
func ReadDataset(plan *spec.Plan, path string) (lines []DatasetLine, unused []string, err error) {
	if objs, ok, err := otherDataset(path); ok {
		if err != nil {
			return nil, nil, &args.FlagError{Flag: "--dataset", Err: err}
		}
		return datasetLines(plan, path, objs)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &args.FlagError{Flag: "--dataset", Err: fmt.Errorf("%s: %w", path, args.UnwrapPathError(err))}
	}
	declared := map[string]bool{}
	for _, in := range plan.Inputs {
		declared[in.Name] = true
	}
	unusedSet := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			if err == nil {
				err = errors.New("not a JSON object")
			}
			return nil, nil, &args.FlagError{Flag: "--dataset", Err: fmt.Errorf("%s:%d: %v", path, n, err)}
		}
		lines = append(lines, datasetLine(n, obj, declared, unusedSet))
	}
	if len(lines) == 0 {
		return nil, nil, &args.FlagError{Flag: "--dataset", Err: fmt.Errorf("%s has no lines", path)}
	}
	return lines, slices.Sorted(maps.Keys(unusedSet)), nil
}

// plainNumbers turns json.Numbers into ints when whole, else float64s.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plainNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = plainNumbers(x[k])
		}
	}
	return v
}

// Options configure a sweep.
type Options struct {
	// Run is the base of every run's options. Its RunsDir is where the sweep
	// directory is created; its Cache is what lets runs share calls.
	Run runtime.Options
	// Matrix are the axes; every combination of their values is run.
	Matrix []Axis
	// Repeat runs each combination this many times (default 1), each with
	// its own sample index and seed.
	Repeat int
	// Dataset runs every combination once per line of this JSONL file.
	Dataset string
	// Parallel is how many runs go at once (default 4). Endpoint limits
	// hold across all of them, as they share one client pool.
	Parallel int
	// OwnSamples keeps the sweep's samples its own: its calls' cache
	// entries are keyed by the sweep's id (see result.Place.CacheScope),
	// so no reply comes from another sweep's identical request, nor goes
	// to one. Its runs still share calls among themselves, and a resume
	// of the sweep is served the calls it made before.
	OwnSamples bool
	// Batch sends each wave of the runs' calls as one provider batch
	// (package runtime/batch): every run goes at once, whatever Parallel
	// says, so that a wave holds a call of each.
	Batch bool
	// OnBatch, when set, is told how the batches are doing.
	OnBatch func(batch.Progress)
	// OnRun, when set, is told about each run as it finishes (one at a time).
	OnRun func(done, total int, run Run)
	// OnStart, when set, is told the sweep directory and the number of runs
	// before the first run starts.
	OnStart func(dir string, total int)
	// Start starts each run (nil: runtime.Start); index is the run's place
	// in the sweep, from 1. A sweep whose runs are made elsewhere (on
	// Temporal) follows each of them through it.
	Start func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error)
}

// Run is one run of a sweep as the summary lists it.
type Run struct {
	Index int    `json:"index"`
	RunID string `json:"run_id,omitempty"`
	Dir   string `json:"dir,omitempty"`
	// Vars are the matrix values of the run's combination, as given.
	Vars map[string]string `json:"vars,omitempty"`
	// Line is the dataset line (1-based), 0 without a dataset.
	Line        int            `json:"line,omitempty"`
	Inputs      map[string]any `json:"inputs,omitempty"`
	Sample      int            `json:"sample,omitempty"`
	Seed        int64          `json:"seed"`
	Expected    any            `json:"expected,omitempty"`
	Status      string         `json:"status"`
	Error       string         `json:"error,omitempty"`
	Outputs     map[string]any `json:"outputs,omitempty"`
	OutputOrder []string       `json:"output_order,omitempty"`
	Score       *float64       `json:"score,omitempty"`
	// Rounds are the run's per-round scores (result.json's rounds).
	Rounds []result.Round `json:"rounds,omitempty"`
	// Judgements are the judges' grades of a judged score.
	Judgements []result.Judgement `json:"judgements,omitempty"`
	// Dynamics are the run's verdict dynamics per goal.
	Dynamics []result.GoalDynamics `json:"dynamics,omitempty"`
	// Inconclusive says why a run that finished did not reach its
	// purpose (status inconclusive).
	Inconclusive string             `json:"inconclusive,omitempty"`
	Usage        result.Usage       `json:"usage"`
	Calls        runtime.CallCounts `json:"calls"`
	DurationMS   int64              `json:"duration_ms"`
}

// Accuracy is the mean score of a sweep with a 95% confidence interval:
// Wilson's when every score is 0 or 1, else the normal approximation.
type Accuracy struct {
	Mean   float64 `json:"mean"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	N      int     `json:"n"`
	Method string  `json:"method"`
}

// Summary is summary.json of a sweep directory.
type Summary struct {
	ID         string    `json:"id"`
	Dir        string    `json:"dir"`
	Spec       string    `json:"spec"`
	SpecPath   string    `json:"spec_path"`
	SpecDigest string    `json:"spec_digest"`
	Created    time.Time `json:"created"`
	Matrix     []Axis    `json:"matrix,omitempty"`
	Repeat     int       `json:"repeat"`
	Dataset    string    `json:"dataset,omitempty"`
	// UnusedFields are dataset fields that are no input of the spec.
	UnusedFields []string `json:"unused_fields,omitempty"`
	Runs         []Run    `json:"runs"`
	Completed    int      `json:"completed"`
	// Inconclusive are runs that finished without reaching their
	// purpose; Completed are those that did (concluded).
	Inconclusive int `json:"inconclusive"`
	Failed       int `json:"failed"`
	Waiting      int `json:"waiting"`
	// Pending are runs not finished: the sweep was killed before; resume
	// it to run them.
	Pending int          `json:"pending,omitempty"`
	Usage   result.Usage `json:"usage"`
	// CallsMade were sent to endpoints; CallsWithoutCache is how many the
	// runs would have sent each on its own with no cache (all their calls).
	CallsMade         int `json:"calls_made"`
	CallsWithoutCache int `json:"calls_without_cache"`
	// Accuracy is over every run that finished: an inconclusive run
	// counts as wrong (its score is 0). AccuracyConcluded is over the
	// concluded runs alone. Failed runs are in neither: the sweep exits 1
	// and resuming it finishes them.
	Accuracy          *Accuracy `json:"accuracy,omitempty"`
	AccuracyConcluded *Accuracy `json:"accuracy_concluded,omitempty"`
	// Rounds are the per-round accuracy, flips and agreement over the
	// scored runs whose spec loops (see RoundSummary).
	Rounds []RoundSummary `json:"rounds,omitempty"`
	// Judges are a judged score's judges: their mean scores and their
	// agreement (kappa).
	Judges *Judges `json:"judges,omitempty"`
	// Dynamics are the verdict dynamics per goal over the runs: changes,
	// consensus, whisper influence.
	Dynamics []GoalDynamics `json:"dynamics,omitempty"`
	// ByCombination is the accuracy of each matrix combination, when the
	// sweep has a matrix and scores.
	ByCombination []CombinationAccuracy `json:"by_combination,omitempty"`
	DurationMS    int64                 `json:"duration_ms"`
	// CacheScope is set when the sweep kept its samples its own
	// (--own-samples): its id, which its calls' cache keys carry.
	CacheScope string `json:"cache_scope,omitempty"`
}

// CombinationAccuracy is the mean score of the runs of one combination of
// matrix values.
type CombinationAccuracy struct {
	Vars     map[string]string `json:"vars"`
	Label    string            `json:"label"`
	Runs     int               `json:"runs"`
	Calls    int               `json:"calls"`
	Accuracy *Accuracy         `json:"accuracy,omitempty"`
}

// sweepJob is one run to make.
type sweepJob struct {
	vars        map[string]string
	sets        []string
	inputFlags  []string
	line        *DatasetLine
	sample      int
	seed        int64
	inputValues map[string]any
	// models are the models put in place of the spec's (model axes).
	models map[string]string
	// inputs are the run's inputs, resolved (files read), for a resume
	// that starts the run.
	inputs map[string]any
}

// modelAxis reads a matrix axis that sweeps a model: "model" is the spec's
// default model, "model.NAME" its model NAME.
func modelAxis(plan *spec.Plan, axis string) (string, bool) {
	if axis == "model" {
		return "default", true
	}
	name, ok := strings.CutPrefix(axis, "model.")
	if !ok {
		return "", false
	}
	_, declared := plan.Models[name]
	return name, declared
}

// ModelAxes reads the --matrix flags that sweep models: for each model of
// the plan a model axis sweeps, the values it takes (a model's name in
// the plan, or a model id on the same endpoint). An axis named as a var or
// an input of the plan sweeps that, not a model.
func ModelAxes(plan *spec.Plan, matrix []string) (map[string][]string, error) {
	declared := map[string]bool{}
	for _, v := range plan.Vars {
		declared[v.Name] = true
	}
	for _, in := range plan.Inputs {
		declared[in.Name] = true
	}
	out := map[string][]string{}
	for _, m := range matrix {
		a, err := ParseAxis(m)
		if err != nil {
			return nil, err
		}
		if model, ok := modelAxis(plan, a.Name); ok && !declared[a.Name] {
			out[model] = append(out[model], a.Values...)
		}
	}
	return out, nil
}

// mergeModels adds a run's model overrides to the sweep's.
func mergeModels(base, job map[string]string) map[string]string {
	if len(base) == 0 {
		return job
	}
	out := maps.Clone(base)
	maps.Copy(out, job)
	return out
}

// Sweep runs every combination of the matrix (times Repeat, times the
// dataset's lines) concurrently, each in its own run directory under a new
// sweep directory, and writes summary.json and summary.md there. Runs share
// one client pool, so endpoint limits hold for the sweep as a whole, and
// the cache of opts.Run, so calls that are the same across runs (the early
// rounds of a sweep over a round limit) are made once. A failed run does not
// stop the others; the summary is returned with an error when any failed.
func Sweep(ctx context.Context, plan *spec.Plan, opts Options) (*Summary, error) {
	jobs, unused, err := planSweep(plan, opts)
	if err != nil {
		return nil, err
	}
	base := opts.Run
	if base.RunsDir == "" {
		base.RunsDir = "runs"
	}
	if base.Clients == nil {
		base.Clients = runtime.NewClientPool()
	}
	base.Ask = nil // concurrent runs cannot share a terminal
	base.Observer = nil
	// A missing API key would fail every run the same way: say so once,
	// before any directory is made.
	if err := runtime.CheckEndpoints(plan, base); err != nil {
		return nil, err
	}
	// The sweep directory appears whole, with what a resume needs (see
	// saveSweep), like a run directory.
	id, dir, staging, err := rundir.CreateStaged(base.RunsDir, "sweep-", plan.Name, rundir.SweepTime, time.Now())
	if err != nil {
		return nil, err
	}
	sum := &Summary{
		ID: id, Dir: dir, Spec: plan.Name, SpecPath: plan.Path, SpecDigest: plan.Digest, Created: time.Now().UTC(),
		Matrix: opts.Matrix, Repeat: max(opts.Repeat, 1), Dataset: opts.Dataset, UnusedFields: unused,
		Runs: make([]Run, len(jobs)),
	}
	if opts.OwnSamples {
		base.CacheScope, sum.CacheScope = id, id
	}
	for i, job := range jobs {
		sum.Runs[i] = pendingRun(i+1, job)
	}
	// What a resume needs to finish the sweep goes in first: the spec and
	// its libraries, every run to make, and a summary of runs pending.
	if err := saveSweep(staging, plan, sum, base, jobs, opts.Batch); err != nil {
		os.RemoveAll(staging)
		return nil, err
	}
	if err := rundir.Publish(staging, dir); err != nil {
		os.RemoveAll(staging)
		return nil, err
	}
	if opts.OnStart != nil {
		opts.OnStart(dir, len(jobs))
	}
	if opts.Batch {
		col, err := openBatches(dir, opts.OnBatch)
		if err != nil {
			return sum, err
		}
		base.Batch = col
		opts.Parallel = len(jobs)
	}
	run := func(ctx context.Context, i int) Run {
		return runSweepJob(ctx, plan, base, opts.Start, id, dir, i+1, jobs[i])
	}
	err = runAll(ctx, sum, len(jobs), opts, run)
	return sum, closeBatches(base.Batch, err)
}

// closeBatches stops a sweep's batches (nil: none) and returns err, or
// the failure to record them when there was no other.
func closeBatches(col *batch.Collector, err error) error {
	if col == nil {
		return err
	}
	if cerr := col.Close(); cerr != nil && err == nil {
		return cerr
	}
	return err
}

// BatchWindow and BatchPoll, when not 0, replace the collector's quiet
// window and poll interval (tests).
var BatchWindow, BatchPoll time.Duration

// openBatches is the collector of a sweep in batch mode, recording its
// batches in the sweep directory.
func openBatches(dir string, onBatch func(batch.Progress)) (*batch.Collector, error) {
	col, err := batch.Open(dir)
	if err != nil {
		return nil, err
	}
	col.Window, col.Poll, col.OnProgress = BatchWindow, BatchPoll, onBatch
	return col, nil
}

// pendingRun is a run of the sweep that has not finished yet.
func pendingRun(index int, job sweepJob) Run {
	r := Run{Index: index, Vars: job.vars, Sample: job.sample, Seed: job.seed, Status: StatusPending}
	if job.line != nil {
		r.Line, r.Inputs, r.Expected = job.line.Line, job.line.Inputs, job.line.Expected
	}
	return r
}

// StatusPending is the status of a sweep's run that has not finished (or
// not started): a killed sweep's summary lists them, and resuming the
// sweep runs them.
const StatusPending = "pending"

// runAll runs the sweep's runs whose summary entry is pending, up to
// opts.Parallel at once, and writes the summary as each finishes, so that
// a killed sweep still has one. It returns an error when a run failed.
func runAll(ctx context.Context, sum *Summary, total int, opts Options, run func(ctx context.Context, i int) Run) error {
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	started := time.Now()
	sem := make(chan struct{}, parallel)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		done   int
		runErr error
	)
	for i := range sum.Runs {
		if sum.Runs[i].Status != StatusPending {
			mu.Lock() // runs started before count theirs under mu
			done++
			mu.Unlock()
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			continue // left pending: a resume runs it
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			sr := run(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			sum.Runs[i] = sr
			done++
			if sr.Status == result.StatusFailed && runErr == nil {
				runErr = fmt.Errorf("run %d (%s) failed: %s", sr.Index, sr.Dir, sr.Error)
			}
			sum.tally()
			_ = sum.write()
			if opts.OnRun != nil {
				opts.OnRun(done, total, sr)
			}
		}(i)
	}
	wg.Wait()
	sum.DurationMS += time.Since(started).Milliseconds()
	sum.tally()
	if err := sum.write(); err != nil {
		return err
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	return runErr
}

// planSweep lists the runs of a sweep and checks every one's inputs and
// vars, so that a bad value is reported before anything runs.
func planSweep(plan *spec.Plan, opts Options) ([]sweepJob, []string, error) {
	declaredVar := map[string]bool{}
	for _, v := range plan.Vars {
		declaredVar[v.Name] = true
	}
	declaredInput := map[string]bool{}
	for _, in := range plan.Inputs {
		declaredInput[in.Name] = true
	}
	seenAxis := map[string]bool{}
	for _, a := range opts.Matrix {
		if seenAxis[a.Name] {
			return nil, nil, &args.FlagError{Flag: "--matrix " + a.Name, Err: errors.New("the same name is swept twice; give all its values in one --matrix")}
		}
		seenAxis[a.Name] = true
		if _, ok := modelAxis(plan, a.Name); ok && !declaredVar[a.Name] && !declaredInput[a.Name] {
			continue
		}
		if !declaredVar[a.Name] && !declaredInput[a.Name] {
			var names []string
			for _, v := range plan.Vars {
				names = append(names, v.Name)
			}
			for _, in := range plan.Inputs {
				names = append(names, in.Name)
			}
			return nil, nil, &args.FlagError{Flag: "--matrix " + a.Name, Err: fmt.Errorf("the spec declares no var or input %q (declared: %s; models are swept as model=... or model.NAME=...)", a.Name, strings.Join(names, ", "))}
		}
	}
	var lines []*DatasetLine
	var unused []string
	if opts.Dataset != "" {
		ls, un, err := ReadDataset(plan, opts.Dataset)
		if err != nil {
			return nil, nil, err
		}
		unused = un
		for i := range ls {
			for name := range ls[i].Inputs {
				if seenAxis[name] {
					return nil, nil, &args.FlagError{Flag: "--matrix " + name, Err: fmt.Errorf("the dataset gives input %q too", name)}
				}
			}
			lines = append(lines, &ls[i])
		}
	} else {
		lines = []*DatasetLine{nil}
	}
	combos := []map[string]string{{}}
	for _, a := range opts.Matrix {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range a.Values {
				m := make(map[string]string, len(c)+1)
				for k, x := range c {
					m[k] = x
				}
				m[a.Name] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	repeat := max(opts.Repeat, 1)
	baseSeed := launch.Seed(plan, opts.Run.Seed)
	var jobs []sweepJob
	var prep launch.Preparer
	for _, line := range lines {
		for _, c := range combos {
			for s := 0; s < repeat; s++ {
				j := sweepJob{vars: c, line: line, sample: s, seed: baseSeed + int64(s)}
				for _, a := range opts.Matrix {
					if model, ok := modelAxis(plan, a.Name); ok && !declaredVar[a.Name] && !declaredInput[a.Name] {
						if j.models == nil {
							j.models = map[string]string{}
						}
						j.models[model] = c[a.Name]
						continue
					}
					if declaredVar[a.Name] {
						j.sets = append(j.sets, a.Name+"="+c[a.Name])
					} else {
						j.inputFlags = append(j.inputFlags, a.Name+"="+c[a.Name])
					}
				}
				j.inputValues = map[string]any{}
				for k, v := range opts.Run.InputValues {
					j.inputValues[k] = v
				}
				if line != nil {
					for k, v := range line.Inputs {
						j.inputValues[k] = v
					}
				}
				where := ""
				if line != nil {
					where = fmt.Sprintf("dataset line %d: ", line.Line)
					if err := lineLacksInput(plan, opts, j, line); err != nil {
						return nil, nil, err
					}
				}
				j.models = mergeModels(opts.Run.Models, j.models)
				// Every run's values are prepared as a run prepares them
				// (what compiles is checked once per combination).
				v, err := prep.Prepare(plan, jobOptions(opts.Run, j).Given)
				if err != nil {
					var fe *args.FlagError
					if errors.As(err, &fe) && (fe.Flag == "--set" || fe.Flag == "--model") {
						return nil, nil, &args.FlagError{Flag: "--matrix", Err: fmt.Errorf("%s%w", where, fe.Err)}
					}
					return nil, nil, prefixFlagError(where, err)
				}
				j.inputs = v.Inputs
				jobs = append(jobs, j)
			}
		}
	}
	return jobs, unused, nil
}

func prefixFlagError(prefix string, err error) error {
	var fe *args.FlagError
	if prefix != "" && errors.As(err, &fe) {
		return &args.FlagError{Flag: fe.Flag, Err: fmt.Errorf("%s%w", prefix, fe.Err)}
	}
	return err
}

// runSweepJob makes one run of a sweep; its failures go into the Run it
// returns.
func runSweepJob(ctx context.Context, plan *spec.Plan, base runtime.Options, start func(int, *spec.Plan, runtime.Options) (*runtime.Run, error), sweepID, dir string, index int, job sweepJob) Run {
	opts := jobOptions(base, job)
	opts.RunsDir = dir
	opts.Sweep = sweepID
	opts.SweepIndex = index
	sr := pendingRun(index, job)
	if start == nil {
		start = func(_ int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error) {
			return runtime.Start(plan, opts)
		}
	}
	r, err := start(index, plan, opts)
	if err != nil {
		sr.Status, sr.Error = result.StatusFailed, err.Error()
		return sr
	}
	return finishRun(ctx, r, sr)
}

// finishRun executes a started or resumed run of the sweep to its end.
func finishRun(ctx context.Context, r *runtime.Run, sr Run) Run {
	sr.RunID, sr.Dir = r.ID, r.Dir
	res, err := r.Execute(ctx)
	if res != nil {
		sr.Status, sr.Outputs, sr.OutputOrder, sr.Score, sr.Rounds = res.Status, res.Outputs, res.OutputOrder, res.Score, res.Rounds
		sr.Judgements, sr.Dynamics = judgementsOf(res), res.Dynamics
		sr.Inconclusive = inconclusiveOf(res)
		sr.Usage, sr.DurationMS = res.Usage.Total, res.DurationMS
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Interrupted: the run is resumed with the sweep.
		sr.Status, sr.Error = StatusPending, ""
	case err != nil && !errors.Is(err, kit.ErrWaiting) && (res == nil || res.Status != result.StatusBudget):
		sr.Status, sr.Error = result.StatusFailed, err.Error()
	case err != nil && res != nil && res.Status == result.StatusBudget:
		sr.Error = err.Error()
	}
	sr.Calls = r.CallCounts()
	return sr
}

// inconclusiveOf says why a run was inconclusive ("" when it was not).
func inconclusiveOf(res *result.Result) string {
	if res.Status != result.StatusInconclusive {
		return ""
	}
	return res.Conclusion.Short()
}

// jobOptions are the options of a sweep's run: the sweep's, plus the run's
// vars, inputs, sample, seed and expected value.
func jobOptions(base runtime.Options, job sweepJob) runtime.Options {
	opts := base
	opts.Sets = append(append([]string(nil), base.Sets...), job.sets...)
	opts.Inputs = append(append([]string(nil), base.Inputs...), job.inputFlags...)
	opts.InputValues = job.inputValues
	opts.Models = job.models
	opts.Sample = job.sample
	seed := job.seed
	opts.Seed = &seed
	if job.line != nil {
		opts.Expected, opts.DatasetLine = job.line.Expected, job.line.Line
	}
	return opts
}

// RunOptions returns the options of every run a sweep with opts makes, in
// order, without running anything (bad values are reported as by Sweep):
// what a sweep whose runs are made elsewhere (on Temporal) submits.
func RunOptions(plan *spec.Plan, opts Options) ([]runtime.Options, error) {
	jobs, _, err := planSweep(plan, opts)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Options, len(jobs))
	for i, j := range jobs {
		out[i] = jobOptions(opts.Run, j)
	}
	return out, nil
}

// tally adds up the runs.
func (s *Summary) tally() {
	s.Usage = result.Usage{Priced: true}
	s.Completed, s.Failed, s.Waiting, s.Pending, s.CallsMade, s.CallsWithoutCache = 0, 0, 0, 0, 0, 0
	s.Inconclusive = 0
	var scores, concluded []float64
	for _, r := range s.Runs {
		switch r.Status {
		case result.StatusCompleted:
			s.Completed++
			if r.Score != nil {
				concluded = append(concluded, *r.Score)
			}
		case result.StatusInconclusive:
			s.Inconclusive++
		case result.StatusWaiting:
			s.Waiting++
		case StatusPending:
			s.Pending++
		default:
			s.Failed++
		}
		s.CallsMade += r.Calls.Network
		s.CallsWithoutCache += r.Usage.Calls
		s.Usage.Calls += r.Usage.Calls
		s.Usage.PromptTokens += r.Usage.PromptTokens
		s.Usage.CompletionTokens += r.Usage.CompletionTokens
		s.Usage.LatencyMS += r.Usage.LatencyMS
		s.Usage.Cost += r.Usage.Cost
		s.Usage.BatchCalls += r.Usage.BatchCalls
		if r.Usage.BuiltinPrices != "" {
			s.Usage.BuiltinPrices = r.Usage.BuiltinPrices
		}
		if r.Usage.Calls > 0 {
			s.Usage.Priced = s.Usage.Priced && r.Usage.Priced
		}
		if r.Score != nil {
			scores = append(scores, *r.Score)
		}
	}
	if s.Usage.Calls == 0 {
		s.Usage.Priced = false
	}
	s.Accuracy = MeanCI(scores)
	s.Rounds = summarizeRounds(s.Runs)
	s.Judges = summarizeJudges(s.Runs)
	s.Dynamics = summarizeDynamics(s.Runs)
	s.AccuracyConcluded = nil
	if s.Accuracy != nil {
		s.AccuracyConcluded = MeanCI(concluded)
	}
	s.ByCombination = nil
	if len(s.Matrix) == 0 || s.Accuracy == nil {
		return
	}
	index := map[string]int{}
	groupScores := map[string][]float64{}
	for _, r := range s.Runs {
		var parts []string
		for _, a := range s.Matrix {
			parts = append(parts, a.Name+"="+r.Vars[a.Name])
		}
		label := strings.Join(parts, " ")
		i, ok := index[label]
		if !ok {
			i = len(s.ByCombination)
			index[label] = i
			s.ByCombination = append(s.ByCombination, CombinationAccuracy{Vars: r.Vars, Label: label})
		}
		s.ByCombination[i].Runs++
		s.ByCombination[i].Calls += r.Usage.Calls
		if r.Score != nil {
			groupScores[label] = append(groupScores[label], *r.Score)
		}
	}
	for i := range s.ByCombination {
		s.ByCombination[i].Accuracy = MeanCI(groupScores[s.ByCombination[i].Label])
	}
}

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// MeanCI is the mean of scores with a 95% confidence interval: Wilson's
// score interval when every score is 0 or 1 (it stays inside [0, 1] and
// behaves at 0% and 100%, unlike the normal one), else mean ± z·s/√n.
// It is nil for no scores.
func MeanCI(scores []float64) *Accuracy {
	n := len(scores)
	if n == 0 {
		return nil
	}
	sum, binary := 0.0, true
	for _, x := range scores {
		sum += x
		if x != 0 && x != 1 {
			binary = false
		}
	}
	mean := sum / float64(n)
	a := &Accuracy{Mean: mean, N: n}
	if binary {
		nf, z2 := float64(n), z95*z95
		den := 1 + z2/nf
		center := (mean + z2/(2*nf)) / den
		half := z95 / den * math.Sqrt(mean*(1-mean)/nf+z2/(4*nf*nf))
		a.Low, a.High, a.Method = math.Max(0, center-half), math.Min(1, center+half), "wilson"
		return a
	}
	ss := 0.0
	for _, x := range scores {
		ss += (x - mean) * (x - mean)
	}
	half := 0.0
	if n > 1 {
		half = z95 * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	}
	a.Low, a.High, a.Method = mean-half, mean+half, "normal"
	return a
}

// write saves summary.json and summary.md in the sweep directory.
func (s *Summary) write() error { return s.writeTo(s.Dir) }

// writeTo saves summary.json and summary.md in dir.
func (s *Summary) writeTo(dir string) error {
	if err := rundir.WriteJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return fmt.Errorf("sweep summary: %w", err)
	}
	if err := rundir.WriteFile(filepath.Join(dir, "summary.md"), []byte(s.Markdown())); err != nil {
		return fmt.Errorf("sweep summary: %w", err)
	}
	return nil
}

// Load reads summary.json of a sweep directory.
func Load(dir string) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a sweep directory: %w", dir, args.UnwrapPathError(err))
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s/summary.json: %w", dir, err)
	}
	s.Dir = dir
	return &s, nil
}

// CountsLine counts the runs by outcome: concluded (status completed),
// inconclusive, failed and waiting.
func (s *Summary) CountsLine() string {
	line := fmt.Sprintf("%d concluded, %d inconclusive, %d failed, %d waiting", s.Completed, s.Inconclusive, s.Failed, s.Waiting)
	if s.Pending > 0 {
		line += fmt.Sprintf(", %d not finished", s.Pending)
	}
	return line
}

// CallsLine is the cache's effect on a sweep, as one line.
func (s *Summary) CallsLine() string {
	line := fmt.Sprintf("calls made: %d; without the cache: %d", s.CallsMade, s.CallsWithoutCache)
	if s.CallsWithoutCache > 0 && s.CallsMade < s.CallsWithoutCache {
		line += fmt.Sprintf(" (%.0f%% of the calls", 100*float64(s.CallsMade)/float64(s.CallsWithoutCache))
		if s.CallsMade > 0 {
			line += fmt.Sprintf(", %.2fx fewer", float64(s.CallsWithoutCache)/float64(s.CallsMade))
		}
		line += ")"
	}
	return line
}

// AccuracyLine is the mean score and its interval as one line, or "".
func (s *Summary) AccuracyLine() string {
	a := s.Accuracy
	if a == nil {
		return ""
	}
	line := "accuracy: " + a.String()
	if s.Inconclusive > 0 {
		line += fmt.Sprintf(", %d inconclusive run(s) counted wrong", s.Inconclusive)
	}
	if c := s.AccuracyConcluded; c != nil {
		line += "\naccuracy over concluded runs: " + c.String()
	} else {
		line += "\naccuracy over concluded runs: none concluded"
	}
	for _, c := range s.ByCombination {
		if c.Accuracy != nil {
			line += fmt.Sprintf("\naccuracy at %s: %s", c.Label, c.Accuracy)
		}
	}
	for _, r := range s.Rounds {
		line += "\n" + r.String()
	}
	if s.Judges != nil {
		line += "\n" + s.Judges.String()
	}
	return line
}

// String shows the mean with its interval.
func (a *Accuracy) String() string {
	return fmt.Sprintf("%.3f (95%% CI %.3f–%.3f, %s, n=%d)", a.Mean, a.Low, a.High, a.Method, a.N)
}

// Table lists the runs: matrix values, dataset line, outputs, score,
// status and usage.
func (s *Summary) Table() Table {
	var axes []string
	for _, a := range s.Matrix {
		axes = append(axes, a.Name)
	}
	outputs := []string{}
	seen := map[string]bool{}
	hasScore := false
	for _, r := range s.Runs {
		for _, o := range r.OutputOrder {
			if !seen[o] {
				seen[o] = true
				outputs = append(outputs, o)
			}
		}
		hasScore = hasScore || r.Score != nil || r.Expected != nil
	}
	t := Table{Header: []string{"#", "run"}, Whole: 2}
	t.Header = append(t.Header, axes...)
	if s.Dataset != "" {
		t.Header = append(t.Header, "line")
	}
	if s.Repeat > 1 {
		t.Header = append(t.Header, "sample")
	}
	t.Header = append(t.Header, "status")
	t.Header = append(t.Header, outputs...)
	if hasScore {
		t.Header = append(t.Header, "expected", "score")
	}
	t.Header = append(t.Header, "calls", "sent", "tokens", "cost", "seconds")
	for _, r := range s.Runs {
		run := ""
		if r.Dir != "" {
			run = filepath.Base(r.Dir)
		}
		row := []string{fmt.Sprint(r.Index), run}
		for _, a := range axes {
			row = append(row, r.Vars[a])
		}
		if s.Dataset != "" {
			row = append(row, fmt.Sprint(r.Line))
		}
		if s.Repeat > 1 {
			row = append(row, fmt.Sprint(r.Sample))
		}
		status := r.Status
		if r.Error != "" {
			status += ": " + r.Error
		} else if r.Inconclusive != "" {
			status += ": " + r.Inconclusive
		}
		row = append(row, status)
		for _, o := range outputs {
			row = append(row, FormatValue(r.Outputs[o]))
		}
		if hasScore {
			score := ""
			if r.Score != nil {
				score = fmt.Sprintf("%g", *r.Score)
			}
			row = append(row, FormatValue(r.Expected), score)
		}
		row = append(row, fmt.Sprint(r.Usage.Calls), fmt.Sprint(r.Calls.Network),
			fmt.Sprint(r.Usage.PromptTokens+r.Usage.CompletionTokens), FormatCost(r.Usage), fmt.Sprintf("%.1f", float64(r.DurationMS)/1000))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Markdown is summary.md.
func (s *Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep %s\n\n", s.ID)
	fmt.Fprintf(&b, "- Spec: %s (`%s`, sha256 `%s`)\n", s.Spec, s.SpecPath, short(s.SpecDigest))
	for _, a := range s.Matrix {
		fmt.Fprintf(&b, "- Matrix: %s = %s\n", a.Name, strings.Join(a.Values, ", "))
	}
	if s.Dataset != "" {
		fmt.Fprintf(&b, "- Dataset: `%s`\n", s.Dataset)
	}
	if len(s.UnusedFields) > 0 {
		fmt.Fprintf(&b, "- Dataset fields that are no input of the spec (ignored): %s\n", strings.Join(s.UnusedFields, ", "))
	}
	if s.Repeat > 1 {
		fmt.Fprintf(&b, "- Repeat: %d\n", s.Repeat)
	}
	fmt.Fprintf(&b, "- Runs: %d (%s)\n", len(s.Runs), s.CountsLine())
	fmt.Fprintf(&b, "- %s\n", strings.ToUpper(s.CallsLine()[:1])+s.CallsLine()[1:])
	if line := s.AccuracyLine(); line != "" {
		for _, l := range strings.Split(line, "\n") {
			fmt.Fprintf(&b, "- %s\n", strings.ToUpper(l[:1])+l[1:])
		}
	}
	for _, g := range s.Dynamics {
		for _, l := range strings.Split(g.String(), "\n") {
			fmt.Fprintf(&b, "- %s\n", strings.ToUpper(l[:1])+l[1:])
		}
	}
	fmt.Fprintf(&b, "- Tokens: %d prompt, %d completion", s.Usage.PromptTokens, s.Usage.CompletionTokens)
	if c := FormatCost(s.Usage); c != "" {
		fmt.Fprintf(&b, "; cost %s", c)
	}
	b.WriteString("\n")
	if s.Usage.BatchCalls > 0 {
		fmt.Fprintf(&b, "- Batch: %d of %d calls answered in provider batches, priced at half their model's prices\n", s.Usage.BatchCalls, s.Usage.Calls)
	}
	fmt.Fprintf(&b, "- Duration: %.1f s\n\n", float64(s.DurationMS)/1000)
	b.WriteString(s.Table().Markdown(80))
	return b.String()
}

// The helpers below are small pure functions that package runtime keeps to
// itself; they are copied rather than exported to keep runtime's API small.

// short is a digest cut to 12 characters for display.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// lineLacksInput is the error of a dataset line without a field for a
// required input that no --input or --matrix gives either: it names the
// file, the line and the field, where the check of a run's inputs would
// only suggest --input.
func lineLacksInput(plan *spec.Plan, opts Options, j sweepJob, line *DatasetLine) error {
	given := map[string]bool{}
	for k := range j.inputValues {
		given[k] = true
	}
	for _, f := range append(append([]string(nil), opts.Run.Inputs...), j.inputFlags...) {
		name, _, _ := strings.Cut(f, "=")
		given[name] = true
	}
	var missing []string
	for _, in := range plan.Inputs {
		if in.Required && !in.HasDefault && !given[in.Name] {
			missing = append(missing, strconv.Quote(in.Name))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	what := fmt.Sprintf("field %s: the spec's input %s is required and has no default", missing[0], missing[0])
	if len(missing) > 1 {
		what = fmt.Sprintf("fields %s: the spec's inputs of those names are required and have no default", strings.Join(missing, ", "))
	}
	return &args.FlagError{Flag: "--dataset", Err: fmt.Errorf("%s:%d: the line has no %s; add it to the line (or give all lines one value with --input NAME=VALUE)", opts.Dataset, line.Line, what)}
}
