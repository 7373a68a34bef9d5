package sweep

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/result"
)

// This file is what runner run and runner resume print of a sweep, and
// the exit code and gate a sweep ends with.

// Write prints the summary's table of runs, its calls line and its
// accuracy line (when runs were scored).
func (s *Summary) Write(w io.Writer) {
	fmt.Fprint(w, s.Table().Markdown(60))
	fmt.Fprintf(w, "\n%s\n", s.CallsLine())
	if line := s.AccuracyLine(); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, g := range s.Dynamics {
		fmt.Fprintln(w, g)
	}
}

// AppendCSV appends a row per run that has a result to the CSV file at
// path (see result.AppendCSV).
func (s *Summary) AppendCSV(path string) error {
	var err error
	for _, r := range s.Runs {
		if r.Dir == "" {
			continue // never started
		}
		res, rerr := result.Read(r.Dir)
		if rerr != nil {
			continue
		}
		if cerr := result.AppendCSV(path, res); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// Outcome is the error a sweep that ended with err exits with: a failure,
// runs waiting for answers (exit 5), or nil.
func (s *Summary) Outcome(err error) error {
	switch {
	case err != nil:
		return exitcode.With(exitcode.Failure, err)
	case s.Waiting > 0:
		return exitcode.With(exitcode.Waiting, fmt.Errorf("%d run(s) wait for answers to clarifying questions; resume each with runner resume DIR --answers FILE", s.Waiting))
	}
	return nil
}

// Gate holds a dataset sweep's accuracy (on "mean"), or the lower end of
// its interval (on "lower"), to threshold (--fail-under): an error with
// exit code 7 when it is below, else what passed, as data and a line. over
// says which accuracy: "concluded" the one over concluded runs, else the
// one over every run that finished, an inconclusive one counted wrong.
func (s *Summary) Gate(threshold float64, on, over string) (map[string]any, string, error) {
	a, which := s.Accuracy, "over all runs"
	if s.Inconclusive > 0 {
		which += fmt.Sprintf(", %d inconclusive counted wrong", s.Inconclusive)
	}
	if over == "concluded" {
		a, which = s.AccuracyConcluded, fmt.Sprintf("over the %d concluded runs", s.Completed)
	}
	if a == nil {
		return nil, "", exitcode.With(exitcode.Gate, fmt.Errorf("--fail-under %g: no run was scored (%s)", threshold, which))
	}
	value, what := a.Mean, "accuracy"
	if on == "lower" {
		value, what = a.Low, "lower end of the accuracy's 95% interval"
	}
	if value < threshold {
		return nil, "", exitcode.With(exitcode.Gate, fmt.Errorf("gate failed: %s %.3f is below --fail-under %g (%s: %s)", what, value, threshold, which, a))
	}
	data := map[string]any{"value": value, "on": on, "over": over, "threshold": threshold, "accuracy": a, "passed": true}
	return data, fmt.Sprintf("gate passed: %s %.3f is at least %g (%s)", what, value, threshold, which), nil
}

// InconclusiveErr is exit 8 for a sweep some of whose runs finished
// without reaching their purpose, when no gate decides: the summary is
// printed and the accuracy counts them, but a script must not take the
// sweep for a clean one.
func (s *Summary) InconclusiveErr() error {
	if s.Inconclusive == 0 {
		return nil
	}
	return exitcode.With(exitcode.Inconclusive, fmt.Errorf("%d of %d run(s) inconclusive (finished without reaching their purpose; see the status column of %s)",
		s.Inconclusive, len(s.Runs), filepath.Join(s.Dir, "summary.md")))
}

// Describe is a run's line of progress after its status: its vars,
// dataset line, sample, first output, score, error and directory.
func (r Run) Describe() string {
	var parts []string
	keys := make([]string, 0, len(r.Vars))
	for k := range r.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+r.Vars[k])
	}
	if r.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", r.Line))
	}
	if r.Sample > 0 {
		parts = append(parts, fmt.Sprintf("sample %d", r.Sample))
	}
	if len(r.OutputOrder) > 0 {
		out := FormatValue(r.Outputs[r.OutputOrder[0]])
		if len(out) > 40 {
			out = out[:40] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", r.OutputOrder[0], strings.Join(strings.Fields(out), " ")))
	}
	if r.Score != nil {
		parts = append(parts, fmt.Sprintf("score=%g", *r.Score))
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	s := " " + strings.Join(parts, " ")
	if r.Dir != "" {
		s += " (" + r.Dir + ")"
	}
	return s
}

// Passed is a gate that passed, as data and a line.
type Passed struct {
	Data map[string]any
	Text string
}

// ScoreGate holds runs or sweeps (others) to a baseline's score (a sweep's
// accuracy, a run's score; see ScoreOf): it fails (exit 7) when one scores
// worse by more than margin. It returns those that passed, with the error
// too.
func ScoreGate(baseline string, others []string, margin float64) ([]Passed, error) {
	base, err := ScoreOf(baseline)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--baseline %s: %v", baseline, err)
	}
	var passed []Passed
	var worse []string
	for _, dir := range others {
		s, err := ScoreOf(dir)
		if err != nil {
			return passed, exitcode.Errorf(exitcode.Usage, "%s: %v", dir, err)
		}
		line := fmt.Sprintf("%s: %.3f against the baseline's %.3f (%+.3f)", dir, s, base, s-base)
		if base-s > margin+1e-12 {
			worse = append(worse, line)
			continue
		}
		passed = append(passed, Passed{map[string]any{"run": dir, "score": s, "baseline": base, "margin": margin, "passed": true}, "gate passed: " + line})
	}
	if len(worse) > 0 {
		return passed, exitcode.With(exitcode.Gate, fmt.Errorf("gate failed: worse than the baseline %s by more than %g:\n  %s", baseline, margin, strings.Join(worse, "\n  ")))
	}
	return passed, nil
}
