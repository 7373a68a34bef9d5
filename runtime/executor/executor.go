// Package executor is every way a run is made behind one interface: a run
// here (local), a dry run (dry), a run on Temporal (temporal). Each takes
// one prepared launch value (Launch: the plan, what the run is given and
// the settings it is made with, the sweep its flags ask for) and returns
// the same handle (Handle: the run's directory, its page in the view, and
// the way to its end, which tells its outcome). Sweeps run over the
// executor that makes their runs. The commands choose an executor by name
// from the registry (Registry), and resume asks the registry which
// executor owns a directory (ForDir): no command branches on how a run is
// made.
package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

// Launch is one prepared launch: everything an executor needs to make a
// run (or a sweep of runs) and to tell its user how it went.
type Launch struct {
	// Plan is the spec's plan.
	Plan *spec.Plan
	// Registry is the node kinds a spec is compiled with (a resume
	// compiles the run's saved spec).
	Registry *spec.Registry
	// Run is what the run is given (inputs, vars, answers, context, the
	// run's flags, cache, recording) and the settings it is made with;
	// a resume's Resuming says how it goes on.
	Run runtime.Options
	// Sweep are the flags that make a sweep (none: one run), and Gate
	// its --fail-under.
	Sweep sweep.Flags
	Gate  *sweep.Gate
	// AllPrompts keeps every call's prompt in a dry run's report.
	AllPrompts bool
	// Study is the study the study executor makes.
	Study Study
	// Temporal is where runs go on Temporal (the temporal executor).
	Temporal Temporal
	// Out is where the run's user is told what happens.
	Out Out
}

// Temporal says where the temporal executor submits runs.
type Temporal struct {
	durable.Connect
	TaskQueue string
	// Heartbeat is how long a lost worker's calls wait.
	Heartbeat time.Duration
	// Version is the runner version the workers must run.
	Version string
}

// Out is where a run's user is told what happens. With no Stdout, a run
// tells nothing, and its handle's Wait returns the run's own error (a
// caller that reads the result itself: runner test's cases).
type Out struct {
	Tell   progress.Teller
	Stdout io.Writer
	// Quiet leaves out progress; JSON prints a dry run's report as JSON.
	Quiet, JSON bool
	// CSV is a file a run appends its outputs to (a sweep, its rows).
	CSV string
	// Show, when set, shows a page of the view (--view) as the run starts.
	Show func(page string)
}

func (o Out) show(page string) {
	if o.Show != nil {
		o.Show(page)
	}
}

// Capabilities are what an executor can do, as data: commands ask them,
// never the executor's type.
type Capabilities struct {
	// Records: the run leaves a run directory (with its journal, result
	// and reports); a command then opens the response cache, loads a
	// recording, traces and serves the view for it.
	Records bool
	// Sweeps: --matrix, --repeat and --dataset run over the executor.
	Sweeps bool
	// Replays: a recorded run's replies can serve the run (--replay).
	Replays bool
	// Resumes: the executor continues runs it made (see Executor.Owns).
	Resumes bool
	// Batches: a sweep's calls can go as provider batches (--batch).
	Batches bool
}

// Handle is a started run, sweep or dry run.
type Handle interface {
	// Dir is the run's (or sweep's) directory; "" when it leaves none.
	Dir() string
	// Result is the run's result once Wait returned; nil before, and for
	// a sweep or a dry run.
	Result() *result.Result
	// Wait makes the run to its end and tells its outcome (the first
	// output on stdout, where its directory is, what to do next); the
	// error carries the exit code.
	Wait(ctx context.Context) error
}

// Executor is one way of making runs.
type Executor interface {
	Capabilities() Capabilities
	// Validate refuses, before anything starts, a launch the executor
	// cannot make (a usage error naming the flag).
	Validate(l *Launch) error
	// Start starts the run (or the sweep Launch.Sweep asks for).
	Start(ctx context.Context, l *Launch) (Handle, error)
	// Owns reports whether dir is a run (or sweep) this executor
	// continues; Resume continues it, going on as l.Run.Resuming says.
	Owns(dir string) (bool, error)
	Resume(ctx context.Context, dir string, l *Launch) (Handle, error)
}

// Def is an executor in the registry: its name and its factory.
type Def struct {
	Name string
	New  func() Executor
}

// Registry is every executor, one line each. A resume asks them in this
// order which one owns a directory.
func Registry() []Def {
	return []Def{
		{Name: "study", New: func() Executor { return studies{} }},
		{Name: "temporal", New: func() Executor { return temporal{} }},
		{Name: "dry", New: func() Executor { return dry{} }},
		{Name: "local", New: func() Executor { return local{} }},
	}
}

// Names are the registered executors' names.
func Names() []string {
	var out []string
	for _, d := range Registry() {
		out = append(out, d.Name)
	}
	return out
}

// Lookup is the executor registered under name.
func Lookup(name string) (Executor, error) {
	i := slices.IndexFunc(Registry(), func(d Def) bool { return d.Name == name })
	if i < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "no executor %q (there are %s)", name, strings.Join(Names(), ", "))
	}
	return Registry()[i].New(), nil
}

// ForDir is the name and executor of the first registered executor that
// resumes and owns dir.
func ForDir(dir string) (string, Executor, error) {
	for _, d := range Registry() {
		x := d.New()
		if !x.Capabilities().Resumes {
			continue
		}
		ok, err := x.Owns(dir)
		if err != nil {
			return "", nil, err
		}
		if ok {
			return d.Name, x, nil
		}
	}
	return "", nil, fmt.Errorf("%s: no executor continues it", dir)
}

// Validate checks a launch as x checks it, then against what x can do.
func Validate(name string, x Executor, l *Launch) error {
	if err := x.Validate(l); err != nil {
		return err
	}
	caps := x.Capabilities()
	if l.Sweep.Sweeping() && !caps.Sweeps {
		return exitcode.Errorf(exitcode.Usage, "--matrix, --repeat and --dataset sweep runs, which the %s executor does not make", name)
	}
	if l.Sweep.Batch {
		if err := checkBatch(name, caps, l); err != nil {
			return err
		}
	}
	if l.Run.ReplayFrom != "" && !caps.Replays {
		return exitcode.Errorf(exitcode.Usage, "--replay serves a recorded run, which the %s executor does not make", name)
	}
	return nil
}

// checkBatch refuses --batch where no batch can be made: a single run (it
// would wait hours for a batch of one), an executor that does not gather a
// sweep's calls, a replay (see batchEndpoints for the endpoints).
func checkBatch(name string, caps Capabilities, l *Launch) error {
	if !l.Sweep.Sweeping() {
		return exitcode.Errorf(exitcode.Usage, "--batch sends the calls of a sweep's runs as provider batches; it needs --dataset, --matrix or --repeat (a single run would wait up to 24 hours for a batch of one call)")
	}
	if !caps.Batches {
		return exitcode.Errorf(exitcode.Usage, "--batch: the %s executor does not gather a sweep's calls into batches; run the sweep with the local executor", name)
	}
	if l.Run.ReplayFrom != "" {
		return exitcode.Errorf(exitcode.Usage, "--batch sends calls to a provider's batch API; it cannot be combined with --replay")
	}
	return nil
}

// batchEndpoints refuses --batch for a sweep whose models (with the
// launch's model overrides, --offline's among them, and every model a
// --matrix model axis puts in their place) call an endpoint whose kind
// has no batch API, or one on this machine (the implicit endpoint's
// OPENAI_BASE_URL included).
func batchEndpoints(l *Launch) error {
	swept, err := sweep.ModelAxes(l.Plan, l.Sweep.Matrix)
	if err != nil {
		return err
	}
	getenv := l.Run.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	seen := map[string]bool{}
	for _, used := range l.Plan.UsedModels {
		models := []*spec.ModelPlan{used}
		if o, ok := l.Run.Models[used.Name]; ok && l.Plan.Models[o] != nil {
			models[0] = l.Plan.Models[o] // --model NAME=OTHER, --offline
		}
		for _, v := range swept[used.Name] {
			if m := l.Plan.Models[v]; m != nil { // a model id keeps the endpoint
				models = append(models, m)
			}
		}
		for _, m := range models {
			ep := m.Endpoint
			if ep == nil || seen[ep.Name] {
				continue
			}
			seen[ep.Name] = true
			if err := batchable(ep, getenv); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchable says why endpoint ep cannot take batches, or nil.
func batchable(ep *spec.EndpointPlan, getenv func(string) string) error {
	proto, err := llm.ProtocolOf(ep)
	if err != nil {
		return err
	}
	if _, ok := proto.(llm.Batcher); !ok || proto == nil {
		return exitcode.Errorf(exitcode.Usage, "--batch: endpoint %q is of kind %s, which has no batch API (kinds with one: openai, anthropic, gemini)", ep.Name, ep.Kind)
	}
	base, where := ep.BaseURL, ep.BaseURL
	if v := getenv("OPENAI_BASE_URL"); ep.FromEnv && v != "" {
		base, where = strings.TrimRight(v, "/"), "OPENAI_BASE_URL="+v
	}
	if expanded, err := spec.ExpandEnv(base, getenv); err == nil {
		base = expanded
	}
	if proto.Local(base) && getenv("RUNNER_BATCH_LOCAL") == "" {
		return exitcode.Errorf(exitcode.Usage, "--batch: endpoint %q (%s) runs on this machine, where no batch API answers (a local gateway that serves one: set RUNNER_BATCH_LOCAL=1)", ep.Name, where)
	}
	return nil
}
