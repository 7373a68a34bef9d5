package runtime

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/expr-lang/expr/vm"
)

// score evaluates the spec's score expression on a completed run's outputs
// against the expected value. A score that cannot be computed is a warning,
// not a failed run: the run's outputs stand on their own.
func (r *Run) score(res *result.Result) {
	if r.Plan.Score == nil || r.opts.Expected == nil {
		return
	}
	res.Expected = r.opts.Expected
	env := r.env(kit.Scope{}).Map()
	env["outputs"] = res.Outputs
	env["expected"] = r.opts.Expected
	v, err := vm.Run(r.Plan.Score.Program, env)
	if err != nil {
		msg := fmt.Sprintf("score (%s): %s", r.Plan.Score.Source, strings.SplitN(err.Error(), "\n", 2)[0])
		r.warn("%s", msg)
		res.Warnings = append(res.Warnings, msg)
		return
	}
	f, ok := scoreValue(v)
	if !ok {
		msg := fmt.Sprintf("score (%s) gave %v (%T), not a number or true/false", r.Plan.Score.Source, v, v)
		r.warn("%s", msg)
		res.Warnings = append(res.Warnings, msg)
		return
	}
	res.Score = &f
	res.Rounds = roundScores(r.Plan, r.env(kit.Scope{}), r.opts.Expected)
}

// scoreInconclusive scores a run that did not reach its purpose: an answer
// not reached is a wrong answer, whatever its stand-in value would score,
// so a dataset's accuracy over all its items counts it as 0.
func (r *Run) scoreInconclusive(res *result.Result) {
	if r.Plan.Judge != nil {
		// A judged run is scored with or without an expected value.
		zero := 0.0
		res.Expected, res.Score = r.opts.Expected, &zero
		return
	}
	if r.Plan.Score == nil || r.opts.Expected == nil {
		return
	}
	zero := 0.0
	res.Expected, res.Score = r.opts.Expected, &zero
	res.Rounds = roundScores(r.Plan, r.env(kit.Scope{}), r.opts.Expected)
}

// scoreJudged scores a completed run by its judges: the mean of the
// scores of those that gave a level. A run none of them graded has no
// score, and a warning says why.
func (r *Run) scoreJudged(res *result.Result, js []result.Judgement) {
	res.Expected, res.Judgements = r.opts.Expected, js
	res.Score = judgedScore(js)
	for _, j := range js {
		if j.Error != "" {
			msg := fmt.Sprintf("judge %s gave no level: %s", j.Judge, j.Error)
			r.warn("%s", msg)
			res.Warnings = append(res.Warnings, msg)
		}
	}
}
