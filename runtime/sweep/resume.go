package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/batch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/spec"
)

// A sweep directory holds what it takes to finish the sweep: sweep.json
// (every run to make, with its resolved inputs, vars, seed and dataset
// line), the spec and its template libraries as the sweep started, and a
// summary written as runs finish. Resume finishes it: runs that completed
// are kept, runs that were interrupted are resumed from their journals,
// and runs never started are started.

// record is sweep.json.
type record struct {
	Summary   *Summary          `json:"summary"`
	Libraries map[string]string `json:"libraries,omitempty"`
	Base      baseRecord        `json:"base"`
	Jobs      []jobRecord       `json:"jobs"`
	// Batch is set for a sweep in batch mode (--batch): its resume polls
	// the batches batches.json records.
	Batch bool `json:"batch,omitempty"`
}

// baseRecord is what every run of the sweep was given.
type baseRecord struct {
	Sets       []string          `json:"sets,omitempty"`
	VarValues  map[string]any    `json:"var_values,omitempty"`
	ContextDir string            `json:"context_dir,omitempty"`
	Answers    map[string]string `json:"answers,omitempty"`
	Budget     []string          `json:"budget,omitempty"`
	// CacheScope keeps the runs' cache entries to the sweep (OwnSamples).
	CacheScope string `json:"cache_scope,omitempty"`
	// Flags are the runs' flags (runflags.Flags), each under its own key.
	runflags.Flags
}

// jobRecord is one run of the sweep.
type jobRecord struct {
	Index    int            `json:"index"`
	Sets     []string       `json:"sets,omitempty"`
	Inputs   map[string]any `json:"inputs"`
	Line     int            `json:"line,omitempty"`
	Expected any            `json:"expected,omitempty"`
	Sample   int            `json:"sample,omitempty"`
	Seed     int64          `json:"seed"`
	// Models are the models put in place of the spec's (a model axis, or
	// the sweep's own --model), so that a run started by a resume calls
	// the same model as the runs started before the kill.
	Models map[string]string `json:"models,omitempty"`
}

// saveSweep writes sweep.json, the spec's copy and the pending summary.
func saveSweep(dir string, plan *spec.Plan, sum *Summary, base runtime.Options, jobs []sweepJob, batched bool) error {
	libs, err := runtime.SaveSpec(dir, plan)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	rec := record{
		Summary: sum, Libraries: libs, Batch: batched,
		Base: baseRecord{Sets: base.Sets, VarValues: base.VarValues, ContextDir: absPath(base.ContextDir), Answers: base.Answers, Budget: base.Budget, CacheScope: base.CacheScope, Flags: base.Flags},
	}
	for i, j := range jobs {
		jr := jobRecord{Index: i + 1, Sets: j.sets, Inputs: j.inputs, Sample: j.sample, Seed: j.seed, Models: j.models}
		if j.line != nil {
			jr.Line, jr.Expected = j.line.Line, j.line.Expected
		}
		rec.Jobs = append(rec.Jobs, jr)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, "sweep.json"), rec); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return sum.writeTo(dir)
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// IsSweepDir reports whether dir is a sweep directory.
func IsSweepDir(dir string) bool {
	for _, name := range []string{"sweep.json", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// ResumeOptions configure Resume.
type ResumeOptions struct {
	// Run is the base of every run's options (endpoints' environment, the
	// cache, --budget flags, answers); the sweep's own settings win.
	Run runtime.Options
	// Parallel is how many runs go at once (default 4).
	Parallel int
	// OnBatch, when set, is told how the batches of a sweep in batch mode
	// are doing.
	OnBatch func(batch.Progress)
	// OnRun is told about each run as it finishes.
	OnRun func(done, total int, run Run)
	// Resume resumes the run in a directory and Start starts a run the
	// sweep had not started (nil: runtime.Resume and runtime.Start;
	// index is the run's place in the sweep, from 1). A sweep whose runs
	// are made elsewhere (on Temporal) follows each of them through these.
	Resume func(dir string, reg *spec.Registry, opts runtime.Options) (*runtime.Run, error)
	Start  func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error)
}

// Resume finishes a sweep that was killed or interrupted: every run that
// did not complete is resumed (or started), then the summary is written.
func Resume(ctx context.Context, dir string, reg *spec.Registry, opts ResumeOptions) (*Summary, error) {
	if rundir.IsStaging(dir) {
		return nil, &args.FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s is a sweep that was killed while its directory was being set up, before any run started; nothing can be resumed from it: start the sweep again (and delete the folder)", dir)}
	}
	data, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &args.FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s has no sweep.json: the sweep was made by an older runner and cannot be resumed; resume its runs one by one", dir)}
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Summary == nil {
		if err == nil {
			err = errors.New("no summary")
		}
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "sweep.json"), err)
	}
	plan, err := runtime.CompileSaved(dir, rec.Summary.SpecPath, rec.Libraries, reg)
	if err != nil {
		return nil, err
	}
	sum := rec.Summary
	sum.Dir = dir
	if prev, err := Load(dir); err == nil && len(prev.Runs) == len(rec.Jobs) {
		sum.DurationMS = prev.DurationMS
	}
	dirs, err := childDirs(dir)
	if err != nil {
		return nil, err
	}
	base := opts.Run
	base.RunsDir = dir
	base.Sweep = sum.ID
	base.Ask = nil
	base.Observer = nil
	base.Sets, base.VarValues, base.Flags = rec.Base.Sets, rec.Base.VarValues, rec.Base.Flags
	base.ContextDir, base.Answers = rec.Base.ContextDir, rec.Base.Answers
	base.CacheScope = rec.Base.CacheScope
	base.Budget = append(append([]string(nil), rec.Base.Budget...), opts.Run.Budget...)
	if base.Clients == nil {
		base.Clients = runtime.NewClientPool()
	}
	if err := runtime.CheckEndpoints(plan, base); err != nil {
		return nil, err
	}
	sum.Runs = make([]Run, len(rec.Jobs))
	for i, j := range rec.Jobs {
		sr := Run{Index: j.Index, Vars: varsOf(sum, j), Sample: j.Sample, Seed: j.Seed, Line: j.Line, Expected: j.Expected, Status: StatusPending}
		if j.Line > 0 {
			sr.Inputs = j.Inputs
		}
		if d, ok := dirs[j.Index]; ok {
			sr.Dir = d
			if res, m, done := runtime.ResultOf(d); done {
				sr.RunID, sr.Status, sr.Outputs, sr.OutputOrder, sr.Score, sr.Rounds = m.RunID, res.Status, res.Outputs, res.OutputOrder, res.Score, res.Rounds
				sr.Judgements, sr.Dynamics = judgementsOf(res), res.Dynamics
				sr.Inconclusive = inconclusiveOf(res)
				sr.Usage, sr.DurationMS = res.Usage.Total, res.DurationMS
			}
		}
		sum.Runs[i] = sr
	}
	run := func(ctx context.Context, i int) Run {
		j, sr := rec.Jobs[i], sum.Runs[i]
		if sr.Dir != "" {
			resume := runtime.Resume
			if opts.Resume != nil {
				resume = opts.Resume
			}
			r, err := resume(sr.Dir, reg, withoutResumeFields(base))
			if errors.Is(err, runtime.ErrCompleted) {
				if res, m, ok := runtime.ResultOf(sr.Dir); ok {
					sr.RunID, sr.Status, sr.Outputs, sr.OutputOrder, sr.Score, sr.Rounds = m.RunID, res.Status, res.Outputs, res.OutputOrder, res.Score, res.Rounds
					sr.Judgements, sr.Dynamics = judgementsOf(res), res.Dynamics
					sr.Inconclusive = inconclusiveOf(res)
					sr.Usage, sr.DurationMS = res.Usage.Total, res.DurationMS
					return sr
				}
			}
			// A run that failed on what its journal holds is not resumed
			// (it would fail the same way): it stays as it failed.
			var stuck *runtime.StuckError
			if errors.As(err, &stuck) && stuck.Result != nil {
				res := stuck.Result
				sr.RunID, sr.Status, sr.Outputs, sr.OutputOrder, sr.Score, sr.Rounds = stuck.RunID, res.Status, res.Outputs, res.OutputOrder, res.Score, res.Rounds
				sr.Judgements, sr.Dynamics = judgementsOf(res), res.Dynamics
				sr.Usage, sr.DurationMS = res.Usage.Total, res.DurationMS
				sr.Error = res.Error + " (" + stuck.Short() + ")"
				return sr
			}
			if err != nil {
				sr.Status, sr.Error = result.StatusFailed, err.Error()
				return sr
			}
			return finishRun(ctx, r, sr)
		}
		o := base
		o.Sets = append(append([]string(nil), base.Sets...), j.Sets...)
		o.Inputs, o.InputValues = nil, j.Inputs
		o.Sample, o.SweepIndex, o.DatasetLine = j.Sample, j.Index, j.Line
		if j.Models != nil {
			o.Models = j.Models
		}
		seed := j.Seed
		o.Seed = &seed
		if j.Line > 0 {
			o.Expected = j.Expected
		}
		start := func(_ int, plan *spec.Plan, o runtime.Options) (*runtime.Run, error) { return runtime.Start(plan, o) }
		if opts.Start != nil {
			start = opts.Start
		}
		r, err := start(j.Index, plan, o)
		if err != nil {
			sr.Status, sr.Error = result.StatusFailed, err.Error()
			return sr
		}
		return finishRun(ctx, r, sr)
	}
	po := Options{Parallel: opts.Parallel, OnRun: opts.OnRun}
	if rec.Batch {
		col, err := openBatches(dir, opts.OnBatch)
		if err != nil {
			return sum, err
		}
		base.Batch = col
		po.Parallel = len(rec.Jobs)
	}
	err = runAll(ctx, sum, len(rec.Jobs), po, run)
	return sum, closeBatches(base.Batch, err)
}

// withoutResumeFields is the base options as Resume takes them: a run's
// own manifest gives its inputs, vars, seed and place in the sweep.
func withoutResumeFields(o runtime.Options) runtime.Options {
	o.Sets, o.VarValues, o.Inputs, o.InputValues, o.Seed = nil, nil, nil, nil, nil
	o.ContextDir, o.Answers = "", nil
	return o
}

// varsOf are a job's matrix values, as the summary lists them.
func varsOf(sum *Summary, j jobRecord) map[string]string {
	if len(sum.Matrix) == 0 {
		return nil
	}
	out := map[string]string{}
	sets := map[string]string{}
	for _, s := range j.Sets {
		if k, v, ok := strings.Cut(s, "="); ok {
			sets[k] = v
		}
	}
	for _, a := range sum.Matrix {
		if v, ok := sets[a.Name]; ok {
			out[a.Name] = v
		} else if v, ok := j.Inputs[a.Name]; ok {
			out[a.Name] = fmt.Sprint(v)
		}
	}
	return out
}

// childDirs finds the sweep's run directories by their index in the sweep.
func childDirs(dir string) (map[int]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, e := range entries {
		if !e.IsDir() || rundir.IsStaging(e.Name()) {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		m, err := result.ReadManifest(sub)
		if err != nil || m.SweepIndex == 0 {
			continue
		}
		out[m.SweepIndex] = sub
	}
	return out, nil
}
