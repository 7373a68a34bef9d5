package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/expr-lang/expr"
)

// Overrides are what a run gives that changes what a spec compiles to,
// beyond the values templates and expressions read at run time: the values
// of vars that decide how many agents a replicated declaration makes, and
// models put in place of the spec's (--matrix model=...).
type Overrides struct {
	// Vars are var values by name (after --set), as the run resolved them.
	Vars map[string]any
	// Models maps a model name of the spec ("default" when undeclared) to
	// a model the run uses instead: another model the spec declares, whose
	// settings it takes, or else a model id the endpoint knows, which
	// replaces the model's `model` and keeps its other settings.
	Models map[string]string
	// Inputs are input values by name, as the run resolved them: counts
	// read them (see Count).
	Inputs map[string]any
	// CountsAtMaximum compiles every count written as an expression at
	// its declared maximum (the path check's second walk).
	CountsAtMaximum bool
}

// AtCountMaximum is the plan with every count written as an expression
// at its declared maximum instead of its value, or nil when the spec has
// no such count (or does not compile so): the path check walks it too, so
// that what fails only past the defaults' counts is found.
func (p *Plan) AtCountMaximum() *Plan {
	if p.CountExprs == 0 {
		return nil
	}
	plan, diags := CompileWith(p.Path, p.Source, p.Registry, CompileOptions{Overrides: Overrides{CountsAtMaximum: true}, Libraries: p.libraries})
	if diags.HasErrors() {
		return nil
	}
	return plan
}

// maxReplicas bounds a replicated declaration: more agents than this is a
// mistake, not a debate.
const maxReplicas = 1000

// Specialize returns the plan a run with these var values and model
// overrides executes: the plan itself when they change nothing it compiled
// (no replicas read a var whose value differs from its default, no model is
// replaced), else the spec compiled again with them. Errors name what to
// change (the flag or the spec).
func (p *Plan) Specialize(vars map[string]any, models map[string]string) (*Plan, error) {
	return p.SpecializeFor(Overrides{Vars: vars, Models: models})
}

// SpecializeFor is Specialize with the run's inputs too: a spec whose
// counts read inputs compiles again with the inputs a run is given.
func (p *Plan) SpecializeFor(o Overrides) (*Plan, error) {
	vars, models := o.Vars, o.Models
	changed := len(models) > 0
	for _, name := range p.CountInputs {
		if _, ok := o.Inputs[name]; ok {
			changed = true
		}
	}
	for _, name := range p.ReplicaVars {
		v, ok := vars[name]
		if !ok {
			continue
		}
		for _, vp := range p.Vars {
			if vp.Name == name && fmt.Sprint(vp.Default) != fmt.Sprint(v) {
				changed = true
			}
		}
	}
	if !changed {
		return p, nil
	}
	for name := range models {
		if _, ok := p.Models[name]; !ok {
			names := slices.Sorted(maps.Keys(p.Models))
			return nil, fmt.Errorf("model %q: the spec has no model of that name (its models: %s)", name, strings.Join(names, ", "))
		}
	}
	plan, diags := CompileWith(p.Path, p.Source, p.Registry, CompileOptions{Overrides: o, Libraries: p.libraries})
	if diags.HasErrors() {
		return nil, fmt.Errorf("the spec does not compile with these values:\n%s", diags.Format())
	}
	plan.Overridden = models
	return plan, nil
}

var varRef = regexp.MustCompile(`\bvars\.([A-Za-z_][A-Za-z0-9_]*)`)

// replicaValue evaluates a replicas expression against the run's var
// values (the defaults when validating), noting the vars it reads so a run
// that sets one compiles the spec again.
func (c *compiler) replicaValue(id string, e syntax.Expr) (any, bool) {
	return c.varsValue(id, "replicas", e)
}

// varsValue evaluates an agent's expression over vars (what names its key
// in errors), as replicaValue does.
func (c *compiler) varsValue(id, what string, e syntax.Expr) (any, bool) {
	v, err := c.evalVars(strings.TrimSpace(e.Source))
	if err != nil {
		c.r.Errorf(e.Pos, "agent %q: %s: %s", id, what, firstLine(err.Error()))
		return nil, false
	}
	return v, true
}

// evalVars evaluates src with vars bound to the run's var values (the
// defaults when validating), noting the vars it reads in the plan's
// ReplicaVars, so that a run that sets one compiles the spec again.
func (c *compiler) evalVars(src string) (any, error) {
	for _, m := range varRef.FindAllStringSubmatch(src, -1) {
		if !slices.Contains(c.plan.ReplicaVars, m[1]) {
			c.plan.ReplicaVars = append(c.plan.ReplicaVars, m[1])
		}
	}
	vars := map[string]any{}
	for _, v := range c.plan.Vars {
		vars[v.Name] = v.Default
	}
	for k, v := range c.overrides.Vars {
		vars[k] = v
	}
	prog, err := expr.Compile(src, expr.Env(map[string]any{"vars": vars}))
	if err != nil {
		return nil, err
	}
	return expr.Run(prog, map[string]any{"vars": vars})
}

// replicas is how many agents a declaration makes: 0 when it is not
// replicated (one agent under its own id), else N from 1 to maxReplicas,
// evaluated against the run's var values (the defaults when validating).
func (c *compiler) replicas(id string, e syntax.Expr) int {
	src := strings.TrimSpace(e.Source)
	if src == "" {
		return 0
	}
	n, err := strconv.Atoi(src)
	if err != nil {
		v, ok := c.replicaValue(id, e)
		if !ok {
			return 0
		}
		switch x := v.(type) {
		case int:
			n = x
		case int64:
			n = int(x)
		case float64:
			if x != float64(int(x)) {
				c.r.Errorf(e.Pos, "agent %q: replicas is %v, not a whole number", id, x)
				return 0
			}
			n = int(x)
		default:
			c.r.Errorf(e.Pos, "agent %q: replicas must be a whole number or an expression over vars giving one, such as vars.n (%s gives %T)", id, src, v)
			return 0
		}
	}
	if n < 1 || n > maxReplicas {
		c.r.Errorf(e.Pos, "agent %q: replicas is %d; it must be from 1 to %d", id, n, maxReplicas)
		return 0
	}
	return n
}

// replicaID is the id of the i-th (1-based) agent of a replicated
// declaration.
func replicaID(id string, i int) string { return id + "_" + strconv.Itoa(i) }

// overrideModels puts the run's models in place of the spec's.
func (c *compiler) overrideModels() {
	for _, name := range slices.Sorted(maps.Keys(c.overrides.Models)) {
		value := c.overrides.Models[name]
		mp, ok := c.plan.Models[name]
		if !ok {
			c.r.Errorf(syntax.Pos{}, "model %q: the spec has no model of that name", name)
			continue
		}
		if other, ok := c.plan.Models[value]; ok {
			*mp = *other
			mp.Name = name
			continue
		}
		mp.Model = value
		if (mp.Price == nil || mp.Price.Builtin != "") && !c.unpriced(mp.Endpoint) {
			mp.Price = BuiltinPrice(value) // a built-in price follows the model
		}
	}
}
