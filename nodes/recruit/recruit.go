// Package recruit is the node kind that makes agents at run time: it
// fills a recruited group (an agent declared with recruit:) with the
// members a list gives, each with its name, role, persona and model, and
// every node that runs after it and names the group gets them.
package recruit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
	"github.com/expr-lang/expr/vm"
)

//go:embed schema.json
var schema []byte

//go:embed example.yaml
var example string

// Kind is the recruit node kind.
type Kind struct{}

// Name implements spec.Kind.
func (Kind) Name() string { return "recruit" }

// Description implements spec.Kind.
func (Kind) Description() string {
	return "Makes the agents of a recruited group at run time from a list (names, roles, personas, models), for the nodes after it."
}

// Schema implements spec.Kind.
func (Kind) Schema() []byte { return schema }

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// PromptData implements spec.Kind: a recruit node renders no prompt.
func (Kind) PromptData() any { return nil }

type rawConfig struct {
	From syntax.Expr        `yaml:"from"`
	Min  *syntax.Value[int] `yaml:"min"`
}

// Config is a compiled recruit node.
type Config struct {
	// Group is the recruited declaration the node fills.
	Group string
	From  *spec.Program
	Min   int
}

// Compile implements kit.Def.
func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	cfg := &Config{Min: 1}
	plan := c.Plan()
	var rp *spec.RecruitPlan
	switch {
	case len(c.Decl.Agents) != 1:
		c.Errorf(c.FieldPos("agents"), "a recruit node names one recruited group (an agent declared with recruit:) as its agents")
	default:
		a := c.Decl.Agents[0]
		if rp = plan.Recruits[a.V]; rp == nil {
			if _, known := plan.AgentByID[a.V]; known || plan.Groups[a.V] != nil {
				c.Errorf(a.Pos, "agent %q is not a recruited group: declare it with recruit: {max: N}", a.V)
			}
		} else {
			cfg.Group = a.V
		}
	}
	if raw.Min != nil {
		cfg.Min = raw.Min.V
		if rp != nil && cfg.Min > rp.Max {
			c.Errorf(raw.Min.Pos, "min is %d, more than %q's recruit.max, %d", cfg.Min, rp.Group, rp.Max)
		}
	}
	if raw.From.IsZero() {
		c.Errorf(c.Decl.Pos, "needs from: an expression giving the list of members")
		return cfg
	}
	cfg.From = c.Expr(raw.From, nil, spec.ListResult, "from")
	if rp != nil {
		// A list from vars alone is known now: check it as the run would.
		if v, ok := c.VarsValue(raw.From); ok {
			if list, isList := v.([]any); isList {
				if err := check(plan, cfg, list); err != nil {
					c.Errorf(raw.From.Pos, "from: %v", err)
				}
			}
		}
	}
	reported := false
	c.SetOutputOf(func(typeOf func(*spec.Program) *spec.Type) *spec.Type {
		if cfg.From != nil && !reported {
			if msg := elemProblem(typeOf(cfg.From)); msg != "" {
				reported = true
				c.Errorf(raw.From.Pos, "from: %s", msg)
			}
		}
		return spec.ListOf(spec.RecruitMemberType)
	})
	return cfg
}

// elemProblem says why a list of this type cannot be members, or "".
func elemProblem(t *spec.Type) string {
	if t == nil || t.Kind != spec.ListType || t.Elem == nil {
		return ""
	}
	e := t.Elem
	switch e.Kind {
	case spec.AnyType, spec.StringType, spec.MapType:
		return ""
	case spec.ObjectType:
		for _, f := range e.Fields {
			known := false
			for _, k := range spec.RecruitKeys {
				known = known || k == f.Name
			}
			if !known {
				return fmt.Sprintf("its elements have a property %q; a member's keys are %s%s", f.Name, strings.Join(spec.RecruitKeys, ", "), syntax.DidYouMean(f.Name, spec.RecruitKeys))
			}
			if (f.Name == "name" || f.Name == "role" || f.Name == "model") && f.Type != nil && f.Type.Kind != spec.AnyType && f.Type.Kind != spec.StringType {
				return fmt.Sprintf("its elements' %s is %s, not text", f.Name, f.Type)
			}
		}
		return ""
	}
	return fmt.Sprintf("its elements are %s; a member is a name or a mapping with %s", e, strings.Join(spec.RecruitKeys, ", "))
}

// check makes the members of list as a run would, for the errors.
func check(plan *spec.Plan, cfg *Config, list []any) error {
	if len(list) < cfg.Min {
		return fmt.Errorf("%d members for %q, fewer than min, %d", len(list), cfg.Group, cfg.Min)
	}
	_, err := plan.Recruit(cfg.Group, list)
	return err
}

// Execute implements kit.Def: it evaluates the list and recruits its
// members.
func (Kind) Execute(_ context.Context, h kit.Host, node *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	members, err := h.Recruit(cfg.Group, func() ([]any, error) {
		v, err := vm.Run(cfg.From.Program, h.Env().Map())
		if err != nil {
			return nil, fmt.Errorf("node %q: from (%s): %w", node.ID, cfg.From.Source, errors.New(strings.SplitN(err.Error(), "\n", 2)[0]))
		}
		list, ok := v.([]any)
		if !ok {
			if v != nil {
				return nil, fmt.Errorf("node %q: from (%s) gave %T, not a list", node.ID, cfg.From.Source, v)
			}
		}
		if len(list) < cfg.Min {
			return nil, fmt.Errorf("node %q: from (%s) gave %d members for %q, fewer than min, %d", node.ID, cfg.From.Source, len(list), cfg.Group, cfg.Min)
		}
		return list, nil
	})
	if err != nil {
		return value.NodeResult{}, err
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	return value.NodeResult{Output: spec.RecruitMembers(members), Outputs: map[string]any{}, Text: strings.Join(names, ", ")}, nil
}
