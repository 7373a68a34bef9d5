package outcome

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// Scoring is what a run's score is made of.
type Scoring struct {
	// Plan is the run's plan, its score expression and its judges.
	Plan *spec.Plan
	// Expected is what the score expression compares the outputs with
	// (nil: none).
	Expected any
	// Env is the expressions' environment at the run's end.
	Env func() *spec.Env
	// Warn says what could not be scored.
	Warn func(format string, args ...any)
}

// Score evaluates the spec's score expression on a completed run's outputs
// against the expected value. A score that cannot be computed is a warning,
// not a failed run: the run's outputs stand on their own.
func (sc Scoring) Score(res *result.Result) {
	if sc.Plan.Score == nil || sc.Expected == nil {
		return
	}
	res.Expected = sc.Expected
	env := sc.Env().Map()
	env["outputs"] = res.Outputs
	env["expected"] = sc.Expected
	v, err := vm.Run(sc.Plan.Score.Program, env)
	if err != nil {
		msg := fmt.Sprintf("score (%s): %s", sc.Plan.Score.Source, strings.SplitN(err.Error(), "\n", 2)[0])
		sc.Warn("%s", msg)
		res.Warnings = append(res.Warnings, msg)
		return
	}
	f, ok := scoreValue(v)
	if !ok {
		msg := fmt.Sprintf("score (%s) gave %v (%T), not a number or true/false", sc.Plan.Score.Source, v, v)
		sc.Warn("%s", msg)
		res.Warnings = append(res.Warnings, msg)
		return
	}
	res.Score = &f
	res.Rounds = roundScores(sc.Plan, sc.Env(), sc.Expected)
}

// Inconclusive scores a run that did not reach its purpose: an answer
// not reached is a wrong answer, whatever its stand-in value would score,
// so a dataset's accuracy over all its items counts it as 0.
func (sc Scoring) Inconclusive(res *result.Result) {
	if sc.Plan.Judge != nil {
		// A judged run is scored with or without an expected value.
		zero := 0.0
		res.Expected, res.Score = sc.Expected, &zero
		return
	}
	if sc.Plan.Score == nil || sc.Expected == nil {
		return
	}
	zero := 0.0
	res.Expected, res.Score = sc.Expected, &zero
	res.Rounds = roundScores(sc.Plan, sc.Env(), sc.Expected)
}

// Judged scores a completed run by its judges: the mean of the
// scores of those that gave a level. A run none of them graded has no
// score, and a warning says why.
func (sc Scoring) Judged(res *result.Result, js []result.Judgement) {
	res.Expected, res.Judgements = sc.Expected, js
	res.Score = judgedScore(js)
	for _, j := range js {
		if j.Error != "" {
			msg := fmt.Sprintf("judge %s gave no level: %s", j.Judge, j.Error)
			sc.Warn("%s", msg)
			res.Warnings = append(res.Warnings, msg)
		}
	}
}

// judgedScore is the run's score from its judgements: the mean of the
// judges' scores, nil when none gave a level.
func judgedScore(js []result.Judgement) *float64 {
	sum, n := 0.0, 0
	for _, j := range js {
		if j.Score != nil {
			sum += *j.Score
			n++
		}
	}
	if n == 0 {
		return nil
	}
	s := sum / float64(n)
	return &s
}
