package study

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

// Study is a study file with its specs compiled.
type Study struct {
	File *File
	// Cells are the sweeps to make, spec by spec, model by model.
	Cells []Cell
	// Digest identifies what the study runs (the file's settings and its
	// specs' digests): a study directory holds one study.
	Digest string
}

// Cell is one sweep of a study: a spec with a model.
type Cell struct {
	Label    string `json:"label"`
	SpecPath string `json:"spec_path"`
	Model    string `json:"model,omitempty"`
	Baseline bool   `json:"baseline,omitempty"`
	// EqualComputeOf, on a self-consistency cell of the equal-compute
	// baseline, is the label of the protocol whose compute it is given.
	EqualComputeOf string `json:"equal_compute_of,omitempty"`
	// Sets are the vars the cell's sweep sets (NAME=VALUE), Personas the
	// personas its panel seats (a study over panels).
	Sets     []string   `json:"sets,omitempty"`
	Personas []string   `json:"personas,omitempty"`
	Plan     *spec.Plan `json:"-"`
}

// Prepare compiles the study's specs: a spec that does not compile, two
// specs with one label, or a baseline that names none of them is an error
// at the file's line.
func Prepare(f *File, reg *spec.Registry) (*Study, error) {
	st := &Study{File: f}
	var errs yamljson.Errors
	labels := map[string]bool{}
	type entry struct {
		label    string
		plan     *spec.Plan
		path     string
		sets     []string
		personas []string
	}
	var entries []entry
	for i, e := range f.Specs {
		path := f.resolve(e.Path)
		plan, diags := runtime.Load(path, reg)
		if diags.HasErrors() {
			errs = append(errs, f.errorAt(f.specPos[i], "spec %s is invalid:\n%s", e.Path, strings.TrimRight(diags.Format(), "\n")))
			continue
		}
		label := e.Label
		if label == "" {
			label = plan.Name
		}
		if labels[label] {
			errs = append(errs, f.errorAt(f.specPos[i], "a second spec is labelled %q: give each spec its own label", label))
			continue
		}
		if !plan.Scored() {
			errs = append(errs, f.errorAt(f.specPos[i], "spec %s has no score expression: its runs would have no accuracy to compare", e.Path))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(e.Set)) {
			if !slices.ContainsFunc(plan.Vars, func(v *spec.VarPlan) bool { return v.Name == k }) {
				errs = append(errs, f.errorAt(f.specPos[i], "set: spec %s declares no var %q", e.Path, k))
			}
		}
		labels[label] = true
		entries = append(entries, entry{label, plan, path, e.Sets(), e.Personas})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if err := checkPanels(f); err != nil {
		return nil, yamljson.Errors{err}
	}
	if !labels[f.Baseline] {
		var names []string
		for _, e := range entries {
			names = append(names, e.label)
		}
		return nil, yamljson.Errors{f.errorAt(f.baselinePos, "baseline %q is none of the specs (their labels: %s)", f.Baseline, strings.Join(names, ", "))}
	}
	models := f.Models
	if len(models) == 0 {
		models = []string{""}
	}
	h := sha256.New()
	settings, _ := json.Marshal(struct {
		D string
		M []string
		R int
	}{f.DatasetSource(), f.Models, f.Repeat})
	h.Write(settings)
	for _, e := range entries {
		fmt.Fprintf(h, "\x00%s\x00%s", e.label, e.plan.Digest)
		if len(e.sets) > 0 || e.personas != nil {
			fmt.Fprintf(h, "\x00sets\x00%s\x00personas\x00%s", strings.Join(e.sets, "\x00"), strings.Join(e.personas, "\x00"))
		}
	}
	if f.OwnSamples {
		h.Write([]byte("\x00own samples"))
	}
	var sc *entry
	if ec := f.EqualCompute; ec != nil {
		path := f.resolve(ec.Spec)
		plan, diags := runtime.Load(path, reg)
		if diags.HasErrors() {
			return nil, yamljson.Errors{f.errorAt(f.ecPos, "equal_compute: spec %s is invalid:\n%s", ec.Spec, strings.TrimRight(diags.Format(), "\n"))}
		}
		if !plan.Scored() {
			return nil, yamljson.Errors{f.errorAt(f.ecPos, "equal_compute: spec %s has no score expression: its runs would have no accuracy to compare", ec.Spec)}
		}
		if !slices.ContainsFunc(plan.Vars, func(v *spec.VarPlan) bool { return v.Name == ec.VarName() }) {
			return nil, yamljson.Errors{f.errorAt(f.ecPos, "equal_compute: spec %s declares no var %q to set its number of samples with (name it with var:)", ec.Spec, ec.VarName())}
		}
		if labels[ec.LabelOr()] {
			return nil, yamljson.Errors{f.errorAt(f.ecPos, "equal_compute: its label %q is a spec's label: give it another (label:)", ec.LabelOr())}
		}
		sc = &entry{label: ec.LabelOr(), plan: plan, path: path}
		fmt.Fprintf(h, "\x00equal compute\x00%s\x00%s\x00%s\x00%s", sc.label, plan.Digest, ec.VarName(), ec.Matched())
	}
	st.Digest = hex.EncodeToString(h.Sum(nil))
	for _, m := range models {
		for _, e := range entries {
			st.Cells = append(st.Cells, Cell{Label: e.label, SpecPath: e.path, Model: m, Baseline: e.label == f.Baseline, Sets: e.sets, Personas: e.personas, Plan: e.plan})
		}
		// The self-consistency cells come after the model's protocols:
		// their number of samples is read from the protocols' sweeps
		// (and, matching tokens, the baseline's).
		if sc != nil {
			for _, e := range entries {
				if e.label != f.Baseline {
					st.Cells = append(st.Cells, Cell{Label: sc.label + " ≡ " + e.label, SpecPath: sc.path, Model: m, EqualComputeOf: e.label, Plan: sc.plan})
				}
			}
		}
	}
	return st, nil
}

// record is study.json: what the study runs and which sweep is which.
type record struct {
	Name    string       `json:"name"`
	File    string       `json:"file"`
	Digest  string       `json:"digest"`
	Study   *File        `json:"study"`
	Cells   []cellRecord `json:"cells"`
	Created time.Time    `json:"created"`
}

type cellRecord struct {
	Cell
	// Started is set before the cell's sweep is made, Sweep (the sweep
	// directory's name) once it exists.
	Started bool   `json:"started,omitempty"`
	Sweep   string `json:"sweep,omitempty"`
	// Compute is how a self-consistency cell's samples were set, fixed
	// before its sweep starts (so a continued study keeps it).
	Compute *Compute `json:"compute,omitempty"`
}

// Compute is how a self-consistency cell's samples were set.
type Compute = sweep.Compute

// Options configure Run.
type Options struct {
	// Run is the base of every run's options: environment, cache, client
	// pool, version. Its RunsDir is ignored: sweeps go in Dir.
	Run runtime.Options
	// Dir is the study directory.
	Dir      string
	Registry *spec.Registry
	// OnSweep is told about each sweep as it starts, is resumed or is
	// found finished.
	OnSweep func(c Cell, dir, what string)
	// OnRun is told about each run as it finishes.
	OnRun func(c Cell, done, total int, run sweep.Run)
	// Sweeps, when set, makes the sweeps elsewhere (on Temporal); nil
	// makes them here.
	Sweeps Sweeper
	// OnOpen, when set, is called with the study directory once it
	// exists, before any sweep starts.
	OnOpen func(dir string) error
}

// Sweeper makes a study's sweeps elsewhere (runtime/durable.Sweeps makes
// them on Temporal).
type Sweeper interface {
	// Start submits the sweep so describes for plan and sets so.Start to
	// follow its runs, so that sweep.Sweep records them.
	Start(ctx context.Context, plan *spec.Plan, so *sweep.Options) error
	// Resume returns how the runs of the sweep in dir are continued (its
	// Resume and Start).
	Resume(ctx context.Context, dir string) (sweep.ResumeOptions, error)
}

// DefaultDir is the directory of a study in a runs folder.
func DefaultDir(runsDir string, f *File) string { return filepath.Join(runsDir, "study-"+f.Name) }

// Run makes (or finishes) every sweep of the study in opts.Dir, then
// writes and returns its report. A directory holding the same study
// continues it: finished sweeps are read, killed ones resumed, the rest
// made. A directory holding another study is an error.
func Run(ctx context.Context, st *Study, opts Options) (*Report, error) {
	rec, err := openRecord(st, opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.OnOpen != nil {
		if err := opts.OnOpen(opts.Dir); err != nil {
			return nil, err
		}
	}
	base := opts.Run
	if base.Clients == nil {
		base.Clients = runtime.NewClientPool()
	}
	base.Ask, base.Observer = nil, nil
	f := st.File
	sums := make([]*sweep.Summary, len(st.Cells))
	var failed error
	for i, c := range st.Cells {
		if ctx.Err() != nil {
			break
		}
		cr := &rec.Cells[i]
		if cr.Sweep == "" && cr.Started {
			cr.Sweep = adopt(opts.Dir, rec, c)
		}
		onRun := func(done, total int, r sweep.Run) {
			if opts.OnRun != nil {
				opts.OnRun(c, done, total, r)
			}
		}
		var sum *sweep.Summary
		var err error
		if cr.Sweep != "" {
			dir := filepath.Join(opts.Dir, cr.Sweep)
			prev, lerr := sweep.Load(dir)
			if lerr == nil && prev.Pending == 0 && prev.Failed == 0 && prev.Waiting == 0 {
				if opts.OnSweep != nil {
					opts.OnSweep(c, dir, "finished")
				}
				sums[i] = prev
				continue
			}
			if opts.OnSweep != nil {
				opts.OnSweep(c, dir, "resumed")
			}
			var ro sweep.ResumeOptions
			if opts.Sweeps != nil {
				if ro, err = opts.Sweeps.Resume(ctx, dir); err != nil {
					return nil, fmt.Errorf("%s with %s: %w", c.Label, modelName(c.Model), err)
				}
			}
			ro.Run, ro.Parallel, ro.OnRun = base, f.Parallel, onRun
			sum, err = sweep.Resume(ctx, dir, opts.Registry, ro)
		} else {
			// A self-consistency cell's samples are fixed, and recorded
			// with its start, before its sweep exists.
			if c.EqualComputeOf != "" && cr.Compute == nil {
				proto, bl := cellSummary(st, sums, c.Model, c.EqualComputeOf)
				if proto == nil {
					return nil, fmt.Errorf("%s with %s: the sweep of %s did not finish, so its compute is unknown", c.Label, modelName(c.Model), c.EqualComputeOf)
				}
				cp, err := sweep.EqualCompute(f.EqualCompute.Matched(), proto, bl)
				if err != nil {
					return nil, fmt.Errorf("%s with %s: %w", c.Label, modelName(c.Model), err)
				}
				cr.Compute = cp
			}
			cr.Started = true
			if err := writeRecord(opts.Dir, rec); err != nil {
				return nil, err
			}
			o := base
			o.RunsDir = opts.Dir
			if c.Model != "" {
				o.Models = map[string]string{"default": c.Model}
			}
			if len(c.Sets) > 0 {
				o.Sets = append(slices.Clone(o.Sets), c.Sets...)
			}
			if c.EqualComputeOf != "" {
				o.Sets = append(slices.Clone(o.Sets), fmt.Sprintf("%s=%d", f.EqualCompute.VarName(), cr.Compute.Samples))
			}
			so := sweep.Options{Run: o, Dataset: f.DatasetSource(), Repeat: f.Repeat, Parallel: f.Parallel, OnRun: onRun, OwnSamples: f.OwnSamples, Batch: f.Batch}
			so.OnStart = func(dir string, total int) {
				cr.Sweep = filepath.Base(dir)
				// A sweep started is recorded before its first run, so
				// a kill after this point resumes it.
				_ = writeRecord(opts.Dir, rec)
				if opts.OnSweep != nil {
					opts.OnSweep(c, dir, fmt.Sprintf("started (%d runs)", total))
				}
			}
			if opts.Sweeps != nil {
				if err := opts.Sweeps.Start(ctx, c.Plan, &so); err != nil {
					return nil, fmt.Errorf("%s with %s: %w", c.Label, modelName(c.Model), err)
				}
			}
			sum, err = sweep.Sweep(ctx, c.Plan, so)
		}
		if sum == nil {
			return nil, fmt.Errorf("%s with %s: %w", c.Label, modelName(c.Model), err)
		}
		sums[i] = sum
		if err != nil && failed == nil {
			failed = fmt.Errorf("%s with %s: %w", c.Label, modelName(c.Model), err)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep, err := report(st, rec, sums)
	if err != nil {
		return nil, err
	}
	if err := rep.write(opts.Dir); err != nil {
		return nil, err
	}
	return rep, failed
}

// checkPanels checks the personas of a study over panels: when a spec
// lists them every spec does, and each persona sits on some panels and is
// missing from others, or its effect could not be read.
func checkPanels(f *File) *yamljson.Error {
	listed := -1
	for i, e := range f.Specs {
		if e.Personas != nil {
			listed = i
		}
	}
	if listed < 0 {
		return nil
	}
	seats := map[string]int{}
	var order []string
	for i, e := range f.Specs {
		if e.Personas == nil {
			return f.errorAt(f.specPos[i], "spec %s lists no personas while %s does: give every panel its personas (personas: [] for none)", e.Path, f.Specs[listed].Path)
		}
		for _, p := range e.Personas {
			if seats[p] == 0 {
				order = append(order, p)
			}
			seats[p]++
		}
	}
	for _, p := range order {
		if seats[p] == len(f.Specs) {
			return f.errorAt(f.specPos[0], "persona %q sits on every panel: its effect needs a panel without it", p)
		}
	}
	return nil
}

// cellSummary is the sweep of the protocol labelled label under model,
// and the baseline's, among those made so far.
func cellSummary(st *Study, sums []*sweep.Summary, model, label string) (proto, base *sweep.Summary) {
	for i, c := range st.Cells {
		if c.Model != model || c.EqualComputeOf != "" {
			continue
		}
		if c.Label == label {
			proto = sums[i]
		}
		if c.Baseline {
			base = sums[i]
		}
	}
	return proto, base
}

func modelName(m string) string {
	if m == "" {
		return "the spec's model"
	}
	return m
}

// openRecord reads study.json of dir, or makes dir with a new one.
func openRecord(st *Study, dir string) (*record, error) {
	data, err := os.ReadFile(filepath.Join(dir, "study.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			return nil, fmt.Errorf("%s exists and holds no study.json: give the study another directory (--dir) or delete it", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("study directory: %w", err)
		}
		rec := &record{Name: st.File.Name, File: abs(st.File.Path), Digest: st.Digest, Study: st.File, Created: time.Now().UTC()}
		for _, c := range st.Cells {
			rec.Cells = append(rec.Cells, cellRecord{Cell: c})
		}
		return rec, writeRecord(dir, rec)
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "study.json"), err)
	}
	if rec.Digest != st.Digest || len(rec.Cells) != len(st.Cells) {
		return nil, fmt.Errorf("%s holds another study (its file, dataset, models or specs changed since it started): give this one another directory (--dir), or delete %s to start again", dir, dir)
	}
	return &rec, nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func writeRecord(dir string, rec *record) error {
	if err := rundir.WriteJSON(filepath.Join(dir, "study.json"), rec); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return nil
}

// adopt finds the sweep of a cell that was killed after its sweep
// directory appeared but before study.json named it: a sweep directory no
// cell claims, of the cell's spec and model. "" when there is none.
func adopt(dir string, rec *record, c Cell) string {
	claimed := map[string]bool{}
	for _, cr := range rec.Cells {
		claimed[cr.Sweep] = true
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() || claimed[e.Name()] || !sweep.IsSweepDir(filepath.Join(dir, e.Name())) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "sweep.json"))
		if err != nil {
			continue
		}
		var sj struct {
			Summary struct {
				SpecDigest string `json:"spec_digest"`
			} `json:"summary"`
			Jobs []struct {
				Models map[string]string `json:"models"`
			} `json:"jobs"`
		}
		if json.Unmarshal(data, &sj) != nil || sj.Summary.SpecDigest != c.Plan.Digest || len(sj.Jobs) == 0 {
			continue
		}
		want := map[string]string(nil)
		if c.Model != "" {
			want = map[string]string{"default": c.Model}
		}
		if maps.Equal(sj.Jobs[0].Models, want) {
			return e.Name()
		}
	}
	return ""
}

// IsStudyDir reports whether dir is a study directory (it has study.json).
func IsStudyDir(dir string) bool {
	info, err := os.Stat(filepath.Join(dir, "study.json"))
	return err == nil && info.Mode().IsRegular()
}

// FileOf is the study file a study directory was made from.
func FileOf(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "study.json"))
	if err != nil {
		return "", err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "study.json"), err)
	}
	return rec.File, nil
}
