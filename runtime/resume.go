package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/runtime/images"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// ErrCompleted is returned when resuming a run that already completed.
var ErrCompleted = errors.New("the run already completed; nothing to resume")

// Resume reopens a run directory to continue a run that was killed, failed,
// is waiting for answers or stopped at its budget. The flow is executed
// again from the start, but every model call whose response is in the
// journal (for the same request) is served from it, and every answer and
// tool result the journal holds is given again, so nothing is asked twice
// and the result is the one an uninterrupted run would have produced.
//
// The run continues with the spec and template libraries it started with
// (its copies), whatever became of the files since; opts.Spec names a
// fixed spec to continue with instead. A run that completed but whose
// result.json is missing is resumed to write it and its reports; one whose
// result.json is there is refused (a *CompletedError) and left as it is.
func Resume(dir string, reg *spec.Registry, opts Options) (*Run, error) {
	if rundir.IsStaging(dir) {
		return nil, &args.FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s is a run that was killed while its directory was being set up, before any model call; nothing can be resumed from it: start the run again (and delete the folder)", dir)}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, &args.FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s is not a run directory: %w", dir, args.UnwrapPathError(err))}
	}
	if _, err := os.Stat(filepath.Join(dir, "run.json")); errors.Is(err, fs.ErrNotExist) {
		return nil, &args.FlagError{Flag: "RUN_DIR", Err: fmt.Errorf("%s is not a run directory (no run.json)", dir)}
	}
	// The lock comes first: what the journal says is only true while no
	// other process appends to it.
	_, noLock := os.Stat(filepath.Join(dir, ".lock"))
	lock, err := rundir.TakeLock(dir)
	if err != nil {
		return nil, err
	}
	// Questions a terminal asked before the run was killed are asked no
	// more: the view must not offer them.
	_ = os.RemoveAll(filepath.Join(dir, answers.AskingDir))
	r, err := resumeLocked(dir, reg, opts)
	if err != nil {
		_ = lock.Unlock()
		if noLock != nil && errors.Is(err, ErrCompleted) {
			// A run of a runner from before locks: refused, it is left
			// without a file it did not have.
			_ = os.Remove(filepath.Join(dir, ".lock"))
		}
		return nil, err
	}
	r.lock = lock
	return r, nil
}

func resumeLocked(dir string, reg *spec.Registry, opts Options) (*Run, error) {
	m, err := result.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	prior, err := readPrior(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if prior.completed {
		// A result.json that is there is never rewritten: the run ended,
		// perhaps under another runner whose rules it was judged by.
		if res, err := result.Read(dir); err == nil {
			return nil, completedError(dir, m, res)
		}
	}
	plan, replaced, err := resumePlan(dir, m, reg, opts.Spec)
	if err != nil {
		return nil, err
	}
	// A run that failed on what its journal holds fails the same way on
	// every resume as it is: say so before anything changes, unless a
	// different spec or --resample feeds it anew. (A run on Temporal keeps
	// its own way of trying failed calls again.)
	sameSpec := replaced == nil || plan.Digest == m.SpecDigest && sameTemplates(plan.TemplateSources, m.TemplateSources)
	if stuck := prior.stuck(dir); stuck != nil && sameSpec && !opts.Resample && opts.Remote == nil {
		stuck.RunID = m.RunID
		stuck.Result, _ = result.Read(dir)
		return nil, stuck
	}
	budget := m.Budget
	if replaced != nil {
		budget = args.SpecBudget(plan.Budget)
	}
	if budget, err = args.ApplyBudget(plan, budget, opts.Budget); err != nil {
		return nil, err
	}
	opts.RunsDir = filepath.Dir(dir)
	// What run.json keeps of the launch, taken back whole.
	opts.Place, opts.Flags, opts.ReplayFrom = m.Place, m.Flags, m.ReplayedFrom
	if opts.ContextDir == "" {
		opts.ContextDir = m.ContextDir
	} else {
		opts.ContextDir = absPath(opts.ContextDir)
	}
	opts.Answers = mergeAnswers(m.Answers, opts.Answers, prior.answers)
	r := newRun(plan, opts)
	r.ID, r.Dir = m.RunID, dir
	r.inputs, r.vars, r.seed = normalizeNumbers(m.Inputs), normalizeNumbers(m.Vars), m.Seed
	// Its image inputs' bytes, from the directory (checked by digest).
	if err := images.LoadDir(dir); err != nil {
		return nil, err
	}
	r.manifest = m
	r.recorded, r.requests, r.already, r.tools = prior.replies, prior.requests, prior.already, prior.tools
	r.absent = prior.absent
	r.threads.sent = prior.threads
	r.mcpKnown = prior.mcp
	r.fresh = prior.fresh
	var resampled []string
	if opts.Resample {
		if resampled, err = r.resample(prior); err != nil {
			return nil, err
		}
	}
	if replaced == nil && len(m.Libraries) == 0 {
		// A run from before libraries were saved compiled them from disk.
		for d := range plan.TemplateSources {
			if old, ok := m.TemplateSources[d]; ok && old.Digest != plan.TemplateSources[d].Digest {
				r.warnings = append(r.warnings, fmt.Sprintf("template %s changed since the run started; replies already recorded are kept", d))
			}
		}
	}
	var spent map[string]calls.Spend
	if budget != nil {
		spent = prior.spent(plan)
	}
	if err := r.setUpCalls(budget, spent); err != nil {
		return nil, err
	}
	// What the run now goes on with is what run.json says, for the next
	// resume: a fixed spec, a raised budget, a moved context folder.
	m.ContextDir, m.Answers, m.Budget = opts.ContextDir, mergeAnswers(m.Answers, opts.Answers), budget
	resumed := map[string]any{"recorded_calls": len(prior.replies)}
	if replaced != nil {
		libs, err := saveReplacedSpec(dir, plan, &m)
		if err != nil {
			return nil, err
		}
		m.Libraries = libs
		resumed["spec"], resumed["spec_digest"], resumed["previous_spec_digest"] = plan.Path, plan.Digest, replaced.digest
		resumed["previous_spec_saved_as"] = replaced.savedAs
	}
	if len(resampled) > 0 {
		resumed["resampled"] = resampled
		if prior.last.node != "" {
			resumed["resample_node"] = prior.last.node
		}
	}
	m.Status = "" // running again: the last attempt's end is no longer the run's
	r.manifest = m
	if err := r.writeJSON(filepath.Join(dir, "run.json"), m); err != nil {
		return nil, err
	}
	j, err := journal.OpenAppendWith(filepath.Join(dir, "journal.jsonl"), journal.Options{Redact: r.red})
	if err != nil {
		return nil, err
	}
	r.journal = j
	resumed["truncated_bytes"] = j.Truncated()
	if prior.completed {
		resumed["rewriting_outputs"] = true
	}
	if err := r.event(event.RunResumed, "", resumed); err != nil {
		_ = j.Close()
		return nil, err
	}
	r.warnUnpricedBudget(budget)
	if len(resampled) > 0 {
		whose := fmt.Sprintf("node %q's", prior.last.node)
		if prior.last.node == "" {
			whose = "the fallen-back"
		}
		r.warn("--resample: %s %d journaled call(s) are asked afresh: %s", whose, len(resampled), strings.Join(resampled, ", "))
	}
	return r, nil
}

// sameTemplates reports whether two sets of templates have the same
// digests: the same prompts, wherever the files are now.
func sameTemplates(a, b map[string]spec.TemplateSource) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w.Digest != v.Digest {
			return false
		}
	}
	return true
}

// outputsWritten reports whether a completed run's records are all there.
func outputsWritten(dir string) bool {
	if _, err := result.Read(dir); err != nil {
		return false
	}
	for _, name := range []string{"report.md", "report.html"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Size() == 0 {
			return false
		}
	}
	return true
}

// replacedSpec is the spec a resume with a fixed one replaced.
type replacedSpec struct{ digest, savedAs string }

// resumePlan compiles the spec a resumed run goes on with: the run's own
// copy with its saved libraries, or the fixed spec file given.
func resumePlan(dir string, m result.Manifest, reg *spec.Registry, fixed string) (*spec.Plan, *replacedSpec, error) {
	if fixed != "" {
		plan, diags := Load(fixed, reg)
		if diags.HasErrors() {
			return nil, nil, &SpecError{Path: fixed, Diags: diags}
		}
		if abs, err := filepath.Abs(fixed); err == nil {
			plan.Path = abs
		}
		plan, err := plan.SpecializeFor(spec.Overrides{Vars: normalizeNumbers(m.Vars), Models: m.ModelOverrides, Inputs: normalizeNumbers(m.Inputs)})
		if err != nil {
			return nil, nil, err
		}
		return plan, &replacedSpec{digest: m.SpecDigest}, nil
	}
	source, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	// Compile under the original path so that the .env next to the spec is
	// found again (and, for runs without saved libraries, the folders).
	plan, diags := spec.CompileWith(m.SpecPath, source, reg, spec.CompileOptions{Libraries: savedLibraries(dir, m),
		Overrides: spec.Overrides{Vars: normalizeNumbers(m.Vars), Models: m.ModelOverrides, Inputs: normalizeNumbers(m.Inputs)}})
	if diags.HasErrors() {
		return nil, nil, fmt.Errorf("the spec saved in %s no longer compiles (resume with --spec FILE to continue with a fixed one):\n%s", dir, diags.Format())
	}
	return plan, nil, nil
}

// SpecError is a spec given to resume that does not compile; the CLI exits
// 4 and prints its diagnostics.
type SpecError struct {
	Path  string
	Diags syntax.Diagnostics
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s is invalid; the run was not resumed:\n%s", e.Path, e.Diags.Format())
}

func (e *SpecError) ExitCode() int { return exitcode.InvalidSpec }

// saveReplacedSpec puts a fixed spec in place of a run's copy: the old
// copy is kept as spec.N.yaml, the libraries are saved again, and the
// manifest names the new spec. It returns the new library copies.
func saveReplacedSpec(dir string, plan *spec.Plan, m *result.Manifest) (map[string]string, error) {
	old := filepath.Join(dir, "spec.yaml")
	n := 1
	for ; ; n++ {
		if _, err := os.Stat(filepath.Join(dir, "spec."+strconv.Itoa(n)+".yaml")); errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if data, err := os.ReadFile(old); err == nil {
		if err := rundir.WriteFile(filepath.Join(dir, "spec."+strconv.Itoa(n)+".yaml"), data); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, librariesDir)); err != nil {
		return nil, err
	}
	var files rundir.Batch
	libs, err := saveLibraries(dir, plan, &files, files.Replace)
	if err != nil {
		return nil, err
	}
	files.Replace(old, plan.Source)
	if err := files.Sync(); err != nil {
		return nil, err
	}
	m.SpecPath, m.SpecName, m.SpecDigest, m.TemplateSources = plan.Path, plan.Name, plan.Digest, plan.TemplateSources
	return libs, nil
}

// normalizeNumbers turns JSON numbers that are whole back into ints, as the
// spec typed them.
func normalizeNumbers(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			out[k] = int(f)
			continue
		}
		out[k] = v
	}
	return out
}

// CompletedError refuses to resume a run that completed: its result.json
// is there and stays as the runner that finished it wrote it.
type CompletedError struct {
	Dir, Status, Runner string
	// MissingReports are report files the run lacks (a run of a runner
	// from before reports, or killed while writing them).
	MissingReports []string
}

func (e *CompletedError) Error() string {
	by := ""
	if e.Runner != "" {
		by = ", by runner " + e.Runner
	}
	msg := fmt.Sprintf("the run already completed (status %s%s); nothing to resume, and nothing in %s was changed", e.Status, by, e.Dir)
	if len(e.MissingReports) > 0 {
		msg += fmt.Sprintf(" (it has no %s: runner show and runner view read the run as it is)", strings.Join(e.MissingReports, " or "))
	}
	return msg
}

// Is makes a CompletedError an ErrCompleted.
func (e *CompletedError) Is(target error) bool { return target == ErrCompleted }

func completedError(dir string, m result.Manifest, res *result.Result) error {
	e := &CompletedError{Dir: dir, Status: res.Status, Runner: m.RunnerVersion}
	if m.RunnerCommit != "" {
		e.Runner += " (commit " + m.RunnerCommit + ")"
	}
	for _, name := range []string{"report.md", "report.html"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Size() == 0 {
			e.MissingReports = append(e.MissingReports, name)
		}
	}
	return e
}

// resample sets up --resample: the calls of the node occurrence that
// failed the last attempt are taken out of the replies the journal serves
// and get their next resample number (see calls.Call.Resample), and the
// events the node journaled are no longer taken for ones it repeats. It
// returns the calls, sorted.
func (r *Run) resample(p *prior) ([]string, error) {
	keys := p.failedCalls()
	if p.last.status != result.StatusFailed || p.last.prefix == "" && len(keys) == 0 {
		why := "it did not fail"
		switch {
		case p.last.status == result.StatusFailed && p.last.err != "":
			why = fmt.Sprintf("no node failed and no reply gave way to a fallback output; the run failed on: %s; continue it with a fixed spec (--spec FIXED.yaml)", firstLineOf(errors.New(p.last.err)))
		case p.last.status == "":
			why = "its last attempt did not finish (it was killed): resume it without --resample"
		case p.last.status != result.StatusFailed:
			why = fmt.Sprintf("its last attempt ended %s", p.last.status)
		}
		return nil, &args.FlagError{Flag: "--resample", Err: fmt.Errorf("nothing to ask afresh: %s", why)}
	}
	if len(keys) == 0 {
		return nil, &args.FlagError{Flag: "--resample", Err: fmt.Errorf("node %q failed without a journaled model reply to ask afresh (%s); fix the spec and resume with --spec FILE", p.last.node, firstLineOf(errors.New(p.last.nodeErr)))}
	}
	if r.fresh == nil {
		r.fresh = map[string]int{}
	}
	for _, k := range keys {
		delete(r.recorded, k)
		r.fresh[k] = p.fresh[k] + 1
	}
	// The events of the failed node (of the calls asked afresh, for
	// fallbacks) are journaled again as the new samples make them.
	prefix, resampled := p.last.prefix, map[string]bool{}
	for _, k := range keys {
		resampled[k] = true
	}
	for k := range r.already {
		_, key, _ := strings.Cut(k, "\x00")
		if prefix != "" && (key == prefix || strings.HasPrefix(key, prefix+"/")) || resampled[key] {
			delete(r.already, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}
