package spec

import (
	"io/fs"
	"sort"

	"github.com/debate-runner/runner/spec/syntax"
)

// BudgetPlan is what a run may spend: limits on the whole run and on the
// calls of single nodes. It is the run-time form of budget: (Budget is the
// YAML form): compiled into the plan, changed by --budget, kept in
// run.json and checked before each call. A zero BudgetPlan limits nothing.
type BudgetPlan struct {
	// BudgetLimits limit the whole run.
	syntax.BudgetLimits
	Nodes map[string]syntax.BudgetLimits `json:"nodes,omitempty"`
	// MaxEvaluations is the most node executions a run makes, model calls
	// or not: a loop of compute nodes with a large max spends no call, yet
	// fills the journal. 0 means DefaultMaxEvaluations.
	MaxEvaluations int `json:"max_evaluations,omitempty"`
}

// DefaultMaxEvaluations is the most node executions a run makes unless
// budget.max_evaluations says otherwise: far more than any debate needs
// (a design debate of 10 rounds executes about 40), few enough that a
// runaway loop stops within seconds.
const DefaultMaxEvaluations = 20_000

// Evaluations is the bound on node executions the plan gives a run.
func (b BudgetPlan) Evaluations() int {
	if b.MaxEvaluations > 0 {
		return b.MaxEvaluations
	}
	return DefaultMaxEvaluations
}

// Empty reports whether the budget limits nothing.
func (b BudgetPlan) Empty() bool { return b.BudgetLimits.Empty() && len(b.Nodes) == 0 }

// NodeIDs are the nodes with limits of their own, sorted.
func (b BudgetPlan) NodeIDs() []string {
	ids := make([]string, 0, len(b.Nodes))
	for id := range b.Nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// budget compiles budget:, checking that the nodes it names exist.
func (c *compiler) budget() {
	b := c.file.Budget
	c.plan.Budget = BudgetPlan{BudgetLimits: b.BudgetLimits}
	if b.MaxEvaluations != nil {
		c.plan.Budget.MaxEvaluations = *b.MaxEvaluations
	}
	for _, k := range b.Nodes.Keys {
		if !c.file.Nodes.Has(k.V) {
			c.r.Errorf(k.Pos, "budget: node %q is not declared under nodes:%s", k.V, syntax.DidYouMean(k.V, c.file.Nodes.Names()))
			continue
		}
		if c.plan.Budget.Nodes == nil {
			c.plan.Budget.Nodes = map[string]syntax.BudgetLimits{}
		}
		c.plan.Budget.Nodes[k.V] = *b.Nodes.Values[k.V]
	}
}

// Library is a template library a spec used, with the files read from it:
// what a run saves so that it resumes with the same prompts.
type Library struct {
	// Use is the name the spec's templates: list gives the library.
	Use string
	// Name starts the names of its templates (LIBRARY/NAME).
	Name string
	// Origin is "library:NAME" for a library built into runner, else the
	// folder it was read from.
	Origin string
	// Files are the library's template, schema and preset files by name.
	Files map[string][]byte
}

// CompileOptions change where Compile reads from.
type CompileOptions struct {
	// Libraries stand in for the template libraries the spec uses, by the
	// name its templates: list gives them (a run's saved copies).
	Libraries map[string]fs.FS
	// Folders, when set, stand in for the file system for library folders
	// (see CompileIn).
	Folders Folders
	// Overrides are the run's values that change what compiles (see
	// Plan.Specialize).
	Overrides Overrides
}

// CompileWith is Compile reading template libraries as opts says.
func CompileWith(path string, data []byte, reg *Registry, opts CompileOptions) (*Plan, syntax.Diagnostics) {
	return compile(path, data, reg, opts)
}
