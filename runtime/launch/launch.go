// Package launch is what a run is given, whichever way it is made: a run
// here, a dry run, a sweep's run, a run on Temporal. Given holds the
// values as the command line (or a sweep, a dataset line, a recording)
// gives them; Prepare turns them, once, into the values every executor
// runs with: inputs and vars checked against the spec and of the types it
// declares, the plan specialised for its replicas and models, the seed and
// the budget. An executor that prepared its values any other way could plan
// a run other than the one it makes.
package launch

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/spec"
)

// Launch is what a run is given: its values, the answers to its questions,
// its context folder, the response cache and the recording it replays.
type Launch struct {
	Given
	// Flags are the flags that change the run (runflags.Flags: declared
	// there once, carried by every way a run is made and resumed).
	runflags.Flags
	// Answers are answers to clarifying questions by question id.
	Answers map[string]string
	// ContextDir is the folder read_file and list_files may read.
	ContextDir string
	// Cache, when set, serves and stores responses by request content.
	Cache calls.Cache
	Recording
}

// Given are the values of a run as given, before Prepare.
type Given struct {
	// Inputs are --input NAME=VALUE / NAME=@PATH flags.
	Inputs []string
	// InputValues are inputs given as values rather than flags (a dataset
	// line, a replayed run's inputs); they are not parsed, so a value that
	// starts with "@" is not a file.
	InputValues map[string]any
	// Sets are --set NAME=VALUE flags.
	Sets []string
	// VarValues are vars given as values (a replayed run's); Sets override
	// them.
	VarValues map[string]any
	// Models puts models in place of the spec's, by the spec's model name
	// (see spec.Overrides.Models): --matrix model=... sweeps over them.
	Models map[string]string
	// Seed fixes random choices; nil picks the spec's default or 1.
	Seed *int64
	// Budget are --budget flags (see args.ApplyBudget): they override the
	// spec's budget, and on resume the run's.
	Budget []string
}

// Recording is a recorded run whose replies serve the run's calls.
type Recording struct {
	// Replay serves model calls from a recorded run by call key, with no
	// network; a call it lacks fails with MissingReplayError unless
	// ReplayMissingLive is set.
	Replay            map[string]kit.Reply
	ReplayMissingLive bool
	// ReplayFrom is the recording Replay was loaded from, for run.json.
	ReplayFrom string
	// ReplayThreads are the prompts of thread turns of the recording,
	// which the run's threads are rebuilt from.
	ReplayThreads map[string][]string
	// ReplayRequests are the recording's requests by call key (what its
	// journal says of each), which every served call's request is
	// compared with: a call whose request differs is served with a
	// warning naming it and the first message that differs.
	ReplayRequests map[string]RecordedRequest
	// Strict fails a replay, or a resume, at the first call whose request
	// differs from the recorded one, instead of warning.
	Strict bool
}

// RecordedRequest is what a journal says of a call's request: its digest,
// its prompt's, and each message's role, size and digest (and text, when
// the run logged prompts).
type RecordedRequest struct {
	Digest   string            `json:"request_digest"`
	Prompt   string            `json:"prompt_digest"`
	Messages []RecordedMessage `json:"messages"`
}

// RecordedMessage is a message of a RecordedRequest.
type RecordedMessage struct {
	Role    string `json:"role"`
	Chars   int    `json:"chars"`
	Digest  string `json:"digest"`
	Content string `json:"content,omitempty"`
}

// Values are a run's values prepared: what every executor runs with.
type Values struct {
	// Plan is the spec's plan specialised for the vars and models
	// (replicas, model overrides).
	Plan   *spec.Plan
	Inputs map[string]any
	Vars   map[string]any
	Models map[string]string
	Seed   int64
	// Budget is the spec's with the --budget flags applied; nil for none.
	Budget *spec.BudgetPlan
}

// Prepare checks and types what a run of plan is given: inputs (files
// read, defaults applied, required ones checked), vars of the types their
// defaults declare, the plan specialised for them, the seed (given, else
// the spec's, else 1) and the budget. Problems are *args.FlagError.
func Prepare(plan *spec.Plan, g Given) (*Values, error) {
	return new(Preparer).Prepare(plan, g)
}

// Preparer prepares the values of many runs of one plan (a sweep's),
// specialising the plan once per combination of vars and models.
type Preparer struct {
	plans map[string]*spec.Plan
}

// Prepare is launch.Prepare, reusing the plans specialised before.
func (pr *Preparer) Prepare(plan *spec.Plan, g Given) (*Values, error) {
	inputs, err := args.Inputs(plan, g.Inputs, g.InputValues)
	if err != nil {
		return nil, err
	}
	vars, err := args.Vars(plan, g.Sets, g.VarValues)
	if err != nil {
		return nil, err
	}
	// The inputs counts read (max_turns: inputs.turns) specialise the plan
	// as vars do.
	counted := map[string]any{}
	for _, name := range plan.CountInputs {
		if v, ok := inputs[name]; ok {
			counted[name] = v
		}
	}
	combo := fmt.Sprint(vars, g.Models, counted)
	p, ok := pr.plans[combo]
	if !ok {
		if p, err = specialize(plan, vars, g.Models, counted); err != nil {
			return nil, err
		}
		if pr.plans == nil {
			pr.plans = map[string]*spec.Plan{}
		}
		pr.plans[combo] = p
	}
	budget, err := args.Budget(p, g.Budget)
	if err != nil {
		return nil, err
	}
	return &Values{Plan: p, Inputs: inputs, Vars: vars, Models: g.Models, Seed: Seed(plan, g.Seed), Budget: budget}, nil
}

// Specialize is plan with the replicas and models vars and model
// overrides make; its errors name the flag that made them.
func Specialize(plan *spec.Plan, vars map[string]any, models map[string]string) (*spec.Plan, error) {
	return specialize(plan, vars, models, nil)
}

func specialize(plan *spec.Plan, vars map[string]any, models map[string]string, inputs map[string]any) (*spec.Plan, error) {
	p, err := plan.SpecializeFor(spec.Overrides{Vars: vars, Models: models, Inputs: inputs})
	if err != nil {
		flag := "--set"
		if len(models) > 0 {
			flag = "--model"
		} else if len(inputs) > 0 {
			flag = "--input"
		}
		return nil, &args.FlagError{Flag: flag, Err: err}
	}
	return p, nil
}

// Seed is the seed of a run: the given one, else the spec's default, else 1.
func Seed(plan *spec.Plan, given *int64) int64 {
	switch {
	case given != nil:
		return *given
	case plan.File != nil && plan.File.Defaults.Seed != nil:
		return *plan.File.Defaults.Seed
	}
	return 1
}

// DefaultTo takes a recorded run's inputs, vars, models and seed for those
// g does not give, so that a replay of the run reproduces it: inputs given
// as flags win, as do --set flags (applied over the recorded vars).
func (g *Given) DefaultTo(plan *spec.Plan, m result.Manifest) {
	given := map[string]bool{}
	for _, f := range g.Inputs {
		name, _, _ := strings.Cut(f, "=")
		given[name] = true
	}
	declared := map[string]bool{}
	for _, in := range plan.Inputs {
		declared[in.Name] = true
	}
	for k, v := range m.Inputs {
		if given[k] || !declared[k] {
			continue
		}
		if g.InputValues == nil {
			g.InputValues = map[string]any{}
		}
		g.InputValues[k] = v
	}
	if len(m.Vars) > 0 {
		g.VarValues = m.Vars
	}
	if len(g.Models) == 0 && len(m.ModelOverrides) > 0 {
		g.Models = m.ModelOverrides
	}
	if g.Seed == nil {
		seed := m.Seed
		g.Seed = &seed
	}
}
