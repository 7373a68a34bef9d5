package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/result"
)

// This file reads run directories for runner runs and runner compare, and
// lays them out as tables.

// RunDir is one run directory, read.
type RunDir struct {
	Dir      string
	Label    string
	Sweep    string
	Manifest result.Manifest
	Result   *result.Result // nil while running or after a kill
}

// ReadRun reads run.json and, when present, result.json of a run directory.
func ReadRun(dir string) (RunDir, error) {
	info := RunDir{Dir: dir, Label: filepath.Base(dir)}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return info, fmt.Errorf("%s is not a run directory (no run.json)", dir)
	}
	if err := json.Unmarshal(data, &info.Manifest); err != nil {
		return info, fmt.Errorf("%s/run.json: %w", dir, err)
	}
	info.Sweep = info.Manifest.Sweep
	if res, err := result.Read(dir); err == nil {
		info.Result = res
	}
	return info, nil
}

// CollectRuns finds the runs in dir and in its sweep directories.
func CollectRuns(dir string) ([]RunDir, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "%s: %v", dir, args.UnwrapPathError(err))
	}
	var out []RunDir
	for _, en := range entries {
		if !en.IsDir() {
			continue
		}
		sub := filepath.Join(dir, en.Name())
		if ri, err := ReadRun(sub); err == nil {
			out = append(out, ri)
			continue
		}
		inner, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, in := range inner {
			if !in.IsDir() {
				continue
			}
			if ri, err := ReadRun(filepath.Join(sub, in.Name())); err == nil {
				ri.Label = en.Name() + "/" + in.Name()
				out = append(out, ri)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Manifest.Created.Equal(out[j].Manifest.Created) {
			return out[i].Manifest.Created.Before(out[j].Manifest.Created)
		}
		return out[i].Label < out[j].Label
	})
	return out, nil
}

// roundsAndGoals counts the rounds (the highest round of a message) and
// the goals a run went through.
func roundsAndGoals(res *result.Result) (int, int) {
	rounds := 0
	goals := map[string]bool{}
	for _, m := range res.Messages {
		rounds = max(rounds, m.Round)
		if m.Goal != "" {
			goals[m.Goal] = true
		}
	}
	return rounds, len(goals)
}

// countText shows a count, or nothing for none (a run without rounds).
func countText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func firstOutput(res *result.Result) string {
	if res == nil || len(res.OutputOrder) == 0 {
		return ""
	}
	return FormatValue(res.Outputs[res.OutputOrder[0]])
}

// ScoreOf is what the gate compares: a sweep's accuracy, a run's score.
func ScoreOf(dir string) (float64, error) {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		sum, err := Load(dir)
		if err != nil {
			return 0, err
		}
		if sum.Accuracy == nil {
			return 0, errors.New("the sweep has no scored runs, so no accuracy to compare")
		}
		return sum.Accuracy.Mean, nil
	}
	res, err := result.Read(dir)
	if err != nil {
		return 0, err
	}
	if res.Score == nil {
		return 0, errors.New("the run has no score (it needs a dataset line's expected value and the spec's score)")
	}
	return *res.Score, nil
}

// CompareTable lays runs side by side. Vars and inputs are shown when they
// differ between the runs (all of them for a single run), outputs in the
// order the specs declare them.
func CompareTable(runs []RunDir) Table {
	varying := func(get func(RunDir) map[string]any) []string {
		names := map[string]bool{}
		for _, r := range runs {
			for k := range get(r) {
				names[k] = true
			}
		}
		var out []string
		for k := range names {
			first := get(runs[0])[k]
			differs := len(runs) == 1
			for _, r := range runs[1:] {
				if !reflect.DeepEqual(get(r)[k], first) {
					differs = true
					break
				}
			}
			if differs {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	vars := varying(func(r RunDir) map[string]any { return r.Manifest.Vars })
	inputs := varying(func(r RunDir) map[string]any { return r.Manifest.Inputs })
	var outputs []string
	seen := map[string]bool{}
	hasScore := false
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		for _, o := range r.Result.OutputOrder {
			if !seen[o] {
				seen[o] = true
				outputs = append(outputs, o)
			}
		}
		hasScore = hasScore || r.Result.Score != nil || r.Result.Expected != nil
	}
	t := Table{Header: []string{"run", "spec"}, Whole: 1}
	for _, v := range vars {
		t.Header = append(t.Header, "var "+v)
	}
	for _, in := range inputs {
		t.Header = append(t.Header, "input "+in)
	}
	t.Header = append(t.Header, "status")
	t.Header = append(t.Header, outputs...)
	if hasScore {
		t.Header = append(t.Header, "expected", "score")
	}
	t.Header = append(t.Header, "calls", "prompt tokens", "completion tokens", "cost", "seconds")
	for _, r := range runs {
		row := []string{r.Label, r.Manifest.SpecName}
		for _, v := range vars {
			row = append(row, FormatValue(r.Manifest.Vars[v]))
		}
		for _, in := range inputs {
			row = append(row, FormatValue(r.Manifest.Inputs[in]))
		}
		res := r.Result
		if res == nil {
			row = append(row, "incomplete")
			t.Rows = append(t.Rows, row)
			continue
		}
		status := res.Status
		if res.Error != "" {
			status += ": " + strings.SplitN(res.Error, "\n", 2)[0]
		} else if res.Status == result.StatusInconclusive && res.Conclusion != nil {
			status += ": " + res.Conclusion.Short()
		}
		row = append(row, status)
		for _, o := range outputs {
			row = append(row, FormatValue(res.Outputs[o]))
		}
		if hasScore {
			score := ""
			if res.Score != nil {
				score = fmt.Sprintf("%g", *res.Score)
			}
			row = append(row, FormatValue(res.Expected), score)
		}
		u := res.Usage.Total
		row = append(row, fmt.Sprint(u.Calls), fmt.Sprint(u.PromptTokens), fmt.Sprint(u.CompletionTokens), FormatCost(u), fmt.Sprintf("%.1f", float64(res.DurationMS)/1000))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// RunsTable lists runs as runner runs shows them: id, spec, status,
// rounds and goals, calls, tokens, cost, duration and the first output.
func RunsTable(runs []RunDir) Table {
	t := Table{Header: []string{"id", "spec", "status", "rounds", "goals", "calls", "tokens", "cost", "seconds", "first output", "runner"}, Whole: 1}
	for _, r := range runs {
		row := []string{r.Label, r.Manifest.SpecName}
		if r.Result == nil {
			row = append(row, "incomplete", "", "", "", "", "", "", "", madeBy(r.Manifest))
		} else {
			rounds, goals := roundsAndGoals(r.Result)
			u := r.Result.Usage.Total
			status := r.Result.Status
			if status == result.StatusInconclusive && r.Result.Conclusion != nil {
				status += ": " + r.Result.Conclusion.Short()
			}
			row = append(row, status, countText(rounds), countText(goals), fmt.Sprint(u.Calls),
				fmt.Sprint(u.PromptTokens+u.CompletionTokens), FormatCost(u),
				fmt.Sprintf("%.1f", float64(r.Result.DurationMS)/1000), firstOutput(r.Result), madeBy(r.Manifest))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// madeBy names the runner that made a run: its version, the start of its
// commit, and the built-in library versions the spec resolved to (marked
// * when the spec did not pin them). runner show prints the whole of it.
func madeBy(m result.Manifest) string {
	s := m.RunnerVersion
	if c := m.RunnerCommit; c != "" {
		if len(c) > 7 {
			c = c[:7]
		}
		s += " " + c
	}
	for _, b := range m.BuiltIns {
		s += " " + b.Ref()
		if !b.Pinned {
			s += "*"
		}
	}
	return strings.TrimSpace(s)
}

// BuiltinPrices is the date of the built-in list prices some of runs'
// costs come from, "" when none does (see BuiltinPriceNote).
func BuiltinPrices(runs []RunDir) string {
	for _, r := range runs {
		if r.Result != nil && r.Result.Usage.Total.BuiltinPrices != "" {
			return r.Result.Usage.Total.BuiltinPrices
		}
	}
	return ""
}

// Compared reads what runner compare puts side by side: each run
// directory, and each sweep directory's runs (found where the sweep is now
// when it moved) with its summary.
func Compared(dirs []string) ([]RunDir, []*Summary, error) {
	var runs []RunDir
	var sweeps []*Summary
	for _, arg := range dirs {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err == nil {
			sum, err := Load(arg)
			if err != nil {
				return nil, nil, exitcode.With(exitcode.Failure, err)
			}
			sweeps = append(sweeps, sum)
			for _, sr := range sum.Runs {
				if sr.Dir == "" {
					continue // never started
				}
				dir := sr.Dir
				if _, err := os.Stat(dir); err != nil {
					dir = filepath.Join(arg, filepath.Base(sr.Dir)) // the sweep moved
				}
				ri, err := ReadRun(dir)
				if err != nil {
					return nil, nil, exitcode.With(exitcode.Failure, err)
				}
				ri.Label = filepath.Base(arg) + "/" + filepath.Base(dir)
				runs = append(runs, ri)
			}
			continue
		}
		ri, err := ReadRun(arg)
		if err != nil {
			return nil, nil, exitcode.With(exitcode.Usage, err)
		}
		runs = append(runs, ri)
	}
	return runs, sweeps, nil
}

// SweepsTable lists sweeps side by side: runs, accuracy with its
// interval, calls, tokens and cost.
func SweepsTable(sweeps []*Summary) Table {
	st := Table{Whole: 1, Header: []string{"sweep", "spec", "runs", "completed", "accuracy", "95% CI", "calls made", "without the cache", "tokens", "cost"}}
	for _, s := range sweeps {
		acc, ci := "", ""
		if a := s.Accuracy; a != nil {
			acc = fmt.Sprintf("%.3f (n=%d)", a.Mean, a.N)
			ci = fmt.Sprintf("%.3f–%.3f (%s)", a.Low, a.High, a.Method)
		}
		st.Rows = append(st.Rows, []string{filepath.Base(s.Dir), s.Spec, fmt.Sprint(len(s.Runs)), fmt.Sprint(s.Completed), acc, ci,
			fmt.Sprint(s.CallsMade), fmt.Sprint(s.CallsWithoutCache), fmt.Sprint(s.Usage.PromptTokens + s.Usage.CompletionTokens), FormatCost(s.Usage)})
	}
	return st
}
