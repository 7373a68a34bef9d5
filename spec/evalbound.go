package spec

// checkEvaluationBound warns of a loop that no run can finish within the
// run's bound on evaluations (budget.max_evaluations): a loop with no
// until (or break) always runs to its max, so when the node executions and
// iterations it makes at the least pass the bound, every run of the spec
// stops on its budget. The loop is marked (LeastEvaluations) so that a run
// stops as it starts instead of after minutes of work below it when its
// nodes call no model (a loop of compute nodes, or of agents whose answers
// are carried). Stopping on a budget is an honest end, so this is a
// warning, not an error: --strict makes it one.
func (c *compiler) checkEvaluationBound() {
	limit := c.plan.Budget.Evaluations()
	var walk func(steps []*FlowStep) int
	walk = func(steps []*FlowStep) int {
		total := 0
		for _, s := range steps {
			switch s.Kind {
			case StepNode:
				total++
			case StepIf:
				// Either branch may be the one taken.
				total += min(walk(s.Do), walk(s.Else))
			case StepForeach:
				// The list may be empty; its body is still checked.
				walk(s.Do)
			case StepLoop:
				body := walk(s.Do)
				runs := 1
				if s.Until == nil && s.Break == nil && s.MaxConst > 0 {
					runs = s.MaxConst
				}
				least := runs * (body + 1)
				if least > limit {
					s.LeastEvaluations = least
					c.r.Warnf(s.Pos, "this loop runs %d times (max %d, and no until ends it sooner), %d evaluations at the least, more than budget.max_evaluations allows (%d): every run stops on its budget as the loop starts; lower max, add an until, or raise budget.max_evaluations", runs, s.MaxConst, least, limit)
					least = 0 // told once, at the loop that passes the bound
				}
				total += least
			}
			if total > limit {
				total = limit + 1
			}
		}
		return total
	}
	walk(c.plan.Flow)
}
