// Package runtime executes a compiled plan: it walks the flow, runs node
// executors, makes model calls through per-endpoint clients with limits and
// retries, journals every event before reporting it, and writes the result
// and report of the run. A killed or failed run resumes from its journal
// without repeating a model call whose response was recorded.
package runtime

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/debate-runner/runner/runtime/args"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/history"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// Options configure a run.
type Options struct {
	// RunsDir is where run directories are created (default "runs").
	RunsDir string
	// Inputs are --input NAME=VALUE / NAME=@PATH flags.
	Inputs []string
	// Sets are --set NAME=VALUE flags.
	Sets []string
	// Seed fixes random choices; nil picks the spec's default or 1.
	Seed *int64
	// Getenv reads environment variables (default os.Getenv, plus a .env
	// file next to the spec).
	Getenv func(string) string
	// Observer receives every journal event and progress notice as it
	// happens. It must not block for long.
	Observer func(Notice)
	// HTTPClient is used for all endpoints (tests); nil means the default.
	HTTPClient *http.Client
	// Answers are answers to clarifying questions by question id.
	Answers map[string]string
	// Ask, when set, is asked for answers that Answers lacks (a terminal).
	Ask func(ctx context.Context, q spec.Question) (string, error)
	// LogPrompts writes full prompt texts into the journal's model_request
	// events; otherwise only their digests and sizes are written, which keeps
	// the journal linear in the size of the debate.
	LogPrompts bool
	// Version is the runner version recorded in the run.
	Version string
	// Replay serves model calls from a recorded run by call key, with no
	// network; a call it lacks fails with MissingReplayError unless
	// ReplayMissingLive is set.
	Replay            map[string]kit.Reply
	ReplayMissingLive bool
	// ReplayFrom is the recording Replay was loaded from, for run.json.
	ReplayFrom string
	// ReplayThreads are the prompts of thread turns of the recording
	// (LoadReplayThreads), which the run's threads are rebuilt from.
	ReplayThreads map[string][]string
	// Cache, when set, serves and stores responses by request content.
	Cache Cache
	// Clients, when set, is the pool of endpoint clients to use; runs that
	// share one share endpoint limits and identical in-flight calls (a
	// sweep). nil gives the run a pool of its own.
	Clients *ClientPool
	// Sample is the sample index of a repeated run (--repeat): it enters the
	// cache key of calls at temperature > 0 so each repeat gets its own
	// samples. 0 is the plain run.
	Sample int
	// InputValues are inputs given as values rather than flags (a dataset
	// line, a replayed run's inputs); they are not parsed, so a value that
	// starts with "@" is not a file.
	InputValues map[string]any
	// VarValues are vars given as values (a replayed run's); --set flags in
	// Sets override them.
	VarValues map[string]any
	// Expected is what the spec's score expression compares the outputs
	// with (a dataset line's expected field); nil means no score.
	Expected any
	// Sweep is the id of the sweep the run belongs to, for run.json.
	Sweep string
	// ContextDir is the folder read_file and list_files may read.
	ContextDir string
	// Sleep replaces time.Sleep in retries (tests).
	Sleep func(ctx context.Context, d time.Duration) error
	// Remote, when set, answers the calls a run would send to its cache and
	// the network: they are made elsewhere (runner run --temporal, whose
	// workers hold the keys and the cache), so the run connects to no
	// endpoint and needs no API key. Its journal, replies and resume are
	// those of any run.
	Remote calls.Stage
	// ContextSnapshot, when set, answers read_file and list_files instead
	// of ContextDir: a snapshot of it that a run made elsewhere shares.
	ContextSnapshot *tools.Snapshot
	// Models puts models in place of the spec's, by the spec's model name
	// (see spec.Overrides.Models): --matrix model=... sweeps over them.
	Models map[string]string
	// Budget are --budget flags (see ApplyBudgetFlags): they override the
	// spec's budget, and on resume the run's.
	Budget []string
	// DatasetLine and SweepIndex place a run of a sweep, for run.json.
	DatasetLine, SweepIndex int
	// Spec, for Resume, is a spec file to continue the run with in place of
	// the one it started with (a fixed one): calls whose requests are
	// unchanged are served from the journal, the others made again.
	Spec string
}

// Notice is something that happened in a run, for progress displays and
// --json output.
type Notice struct {
	Event    *journal.Event     // a journaled event, or nil
	Progress *kit.ProgressEvent // a progress update, or nil
	Scope    string
	Message  string // a warning or status line
}

// Run is one execution of a plan, with its directory and journal. It ties
// together parts with one job each: the connections to the endpoints the
// plan uses, the log of the run's events (the journal, and what observers
// are told), and the state the run has recorded so far.
type Run struct {
	ID   string
	Dir  string
	Plan *spec.Plan

	opts     Options
	manifest Manifest
	inputs   map[string]any
	vars     map[string]any
	seed     int64
	// recorded are the replies an earlier attempt journaled (resume).
	recorded map[string]kit.Reply
	// chain is the path model calls take (see buildChain).
	chain calls.Stage
	// templates renders prompts with the history's helpers.
	templates *template.Template
	// renderSizes holds the last output size per template name
	// (*atomic.Int64), to size the next rendering.
	renderSizes sync.Map
	lock        *rundir.Lock
	result      *Result
	// dry is set for a dry run (see NewDry), emb for an embedded one (see
	// NewEmbedded).
	dry *dryState
	emb *Embedded
	// threads are the agents' chat threads (see kit.Thread).
	threads threads
	// red keeps the endpoints' secrets out of what the run writes.
	red *journal.Redactor
	// budget is what the run may still spend (nil: no limits).
	budget *calls.Budget
	// requests are the request digests an earlier attempt journaled, by
	// call key: a recorded reply serves a call only when its request is
	// the same.
	requests map[string]requestRecord
	// tools serve the tool results an earlier attempt journaled; with
	// replayTools, those of the recording being replayed.
	tools, replayTools *toolBook

	*endpoints
	*eventLog
	*runState
}

// Start prepares a new run of plan: resolves inputs and vars, checks that
// every endpoint the run needs has its key, creates the run directory and
// journals the start. Nothing is sent to a model yet.
func Start(plan *spec.Plan, opts Options) (*Run, error) {
	inputs, err := args.Inputs(plan, opts.Inputs, opts.InputValues)
	if err != nil {
		return nil, err
	}
	vars, err := args.Vars(plan, opts.Sets, opts.VarValues)
	if err != nil {
		return nil, err
	}
	if plan, err = specialize(plan, vars, opts.Models); err != nil {
		return nil, err
	}
	budget, err := ApplyBudgetFlags(plan, budgetFromPlan(plan.Budget), opts.Budget)
	if err != nil {
		return nil, err
	}
	opts.ContextDir = absPath(opts.ContextDir)
	r := newRun(plan, opts)
	r.inputs, r.vars = inputs, vars
	r.seed = 1
	if plan.File.Defaults.Seed != nil {
		r.seed = *plan.File.Defaults.Seed
	}
	if opts.Seed != nil {
		r.seed = *opts.Seed
	}
	if err := r.connect(); err != nil {
		return nil, err
	}
	r.budget = newBudget(budget)
	r.chain = r.buildChain()
	if err := r.loadReplayTools(); err != nil {
		return nil, err
	}
	// The directory is set up under a hidden name and appears whole, with
	// everything a resume needs, once the journal holds the start: a run
	// killed at any instant leaves either that or nothing.
	id, final, staging, err := rundir.CreateStaged(r.opts.RunsDir, "", r.Plan.Name, rundir.RunTime, time.Now())
	if err != nil {
		return nil, err
	}
	r.ID, r.Dir = id, staging
	if err := r.setUp(budget); err != nil {
		if r.journal != nil {
			_ = r.journal.Close()
		}
		_ = r.lock.Unlock()
		_ = os.RemoveAll(staging)
		return nil, err
	}
	if err := rundir.Publish(staging, final); err != nil {
		_ = r.journal.Close()
		_ = r.lock.Unlock()
		_ = os.RemoveAll(staging)
		return nil, err
	}
	r.Dir = final
	r.warnUnpricedBudget(budget)
	return r, nil
}

// setUp fills a new run's directory: lock, manifest, the spec and its
// libraries, and the journal with the run's start.
func (r *Run) setUp(budget *Budget) error {
	plan := r.Plan
	lock, err := rundir.TakeLock(r.Dir)
	if err != nil {
		return err
	}
	r.lock = lock
	libs, err := saveLibraries(r.Dir, plan)
	if err != nil {
		return err
	}
	r.manifest = r.buildManifest()
	r.manifest.Libraries, r.manifest.Budget = libs, budget
	if err := r.writeJSON(filepath.Join(r.Dir, "run.json"), r.manifest); err != nil {
		return err
	}
	if err := r.writeText(filepath.Join(r.Dir, "spec.yaml"), plan.Source); err != nil {
		return err
	}
	j, err := journal.CreateWith(filepath.Join(r.Dir, "journal.jsonl"), journal.Options{Redact: r.red})
	if err != nil {
		return err
	}
	r.journal = j
	return r.event("run_started", "", map[string]any{
		"run_id": r.ID, "spec": plan.Path, "spec_digest": plan.Digest, "inputs": r.inputs, "vars": r.vars,
		"seed": r.seed, "runner_version": r.manifest.RunnerVersion, "go_version": r.manifest.GoVersion,
		"template_sources": plan.TemplateSources,
	})
}

// warnUnpricedBudget warns when a cost limit cannot see some calls' cost.
func (r *Run) warnUnpricedBudget(b *Budget) {
	if b == nil {
		return
	}
	limited := b.MaxCost != nil
	for _, l := range b.Nodes {
		limited = limited || l.MaxCost != nil
	}
	if !limited {
		return
	}
	for _, m := range usedModels(r.Plan) {
		if m.Price == nil {
			r.warn("budget: model %q has no price, so max_cost does not count its calls (give it price: in the spec)", m.Name)
		}
	}
}

// specialize is the plan a run with these vars and models executes (see
// spec.Plan.Specialize); a failure names the flags that caused it.
func specialize(plan *spec.Plan, vars map[string]any, models map[string]string) (*spec.Plan, error) {
	p, err := plan.Specialize(vars, models)
	if err != nil {
		flag := "--set"
		if len(models) > 0 {
			flag = "--model"
		}
		return nil, &FlagError{Flag: flag, Err: err}
	}
	return p, nil
}

func newRun(plan *spec.Plan, opts Options) *Run {
	if opts.RunsDir == "" {
		opts.RunsDir = "runs"
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	pool := opts.Clients
	if pool == nil {
		pool = NewClientPool()
	}
	hist := history.New()
	r := &Run{
		threads:   threads{sent: opts.ReplayThreads},
		Plan:      plan,
		opts:      opts,
		templates: hist.Templates(plan.Templates),
		recorded:  map[string]kit.Reply{},
		endpoints: &endpoints{
			pool:    pool,
			bases:   map[string]string{},
			getenv:  getenv,
			envPath: filepath.Join(filepath.Dir(plan.Path), ".env"),
			clients: map[string]*llm.Client{},
		},
		eventLog: &eventLog{},
		runState: &runState{
			hist:        hist,
			seenText:    map[[sha256.Size]byte]bool{},
			results:     map[string]spec.NodeResult{},
			usage:       newUsageBook(),
			occurrences: map[string]int{},
		},
	}
	if obs := opts.Observer; obs != nil {
		// Everything the observer is told (stderr, --json) is redacted.
		tell := func(n Notice) { obs(r.redactNotice(n)) }
		r.opts.Observer, r.eventLog.observer = tell, tell
	}
	return r
}

// usedModels are the models the run can call: those its nodes declared
// (the compiler records them), so an agent no node uses needs no key.
func usedModels(plan *spec.Plan) []*spec.ModelPlan { return plan.UsedModels }

// connect creates one client per endpoint the run uses, after checking that
// each has its API key and every environment variable its URL and headers
// name. A run served wholly from a recording (--replay without live calls)
// connects nowhere and needs no key.
func (r *Run) connect() error {
	if r.opts.Replay != nil && !r.opts.ReplayMissingLive || r.opts.Remote != nil {
		return nil
	}
	if err := r.readDotEnv(); err != nil {
		return &FlagError{Flag: ".env file", Err: err}
	}
	for _, m := range usedModels(r.Plan) {
		ep := m.Endpoint
		if ep == nil || r.clients[ep.Name] != nil {
			continue
		}
		base := ep.BaseURL
		if ep.FromEnv {
			if v := r.getenv("OPENAI_BASE_URL"); v != "" {
				base = strings.TrimRight(v, "/")
			}
		}
		base, err := spec.ExpandEnv(base, r.getenv)
		if err != nil {
			return &FlagError{Flag: "environment", Err: fmt.Errorf("endpoint %q base_url %s: %w", ep.Name, ep.BaseURL, err)}
		}
		key := ""
		if ep.APIKeyEnv != "" {
			key = r.getenv(ep.APIKeyEnv)
		}
		if key == "" && !llm.IsLocal(base) {
			return &FlagError{
				Flag: "environment variable " + ep.APIKeyEnv,
				Err:  fmt.Errorf("endpoint %q (%s) needs an API key: set %s (or put it in a .env file next to the spec)", ep.Name, base, ep.APIKeyEnv),
			}
		}
		if key != "" {
			r.secrets = append(r.secrets, key)
		}
		var headers map[string]string
		if len(ep.Headers) > 0 {
			headers = make(map[string]string, len(ep.Headers))
			for name, raw := range ep.Headers {
				v, err := spec.ExpandEnv(raw, r.getenv)
				if err != nil {
					return &FlagError{Flag: "environment", Err: fmt.Errorf("endpoint %q header %s: %w", ep.Name, name, err)}
				}
				if v != raw {
					// What came from the environment is a secret (a gateway
					// key, Azure's api-key): the journal never holds it.
					r.secrets = append(r.secrets, v)
				}
				headers[name] = v
			}
		}
		r.bases[ep.Name] = base
		r.red = journal.NewRedactor(r.secrets...)
		r.clients[ep.Name] = r.pool.client(llm.Endpoint{
			Name: ep.Name, Kind: llm.Kind(ep.Kind), BaseURL: base, APIVersion: ep.APIVersion, APIKey: key, KeyHeader: ep.APIKeyHeader,
			MaxConcurrency: ep.MaxConcurrency, RequestsPerMinute: ep.RequestsPerMinute, TokensPerMinute: ep.TokensPerMinute,
			Timeout: ep.Timeout, MaxRetries: ep.MaxRetries, MaxRetryWait: ep.MaxRetryWait, Headers: headers,
			HTTPClient: r.opts.HTTPClient, Sleep: r.opts.Sleep,
		})
	}
	return nil
}

func (r *Run) buildManifest() Manifest {
	// Resume compiles the spec under this path to find template folders and
	// the .env next to it, from whatever directory it is run in.
	specPath := r.Plan.Path
	if abs, err := filepath.Abs(specPath); err == nil {
		specPath = abs
	}
	m := Manifest{
		RunID: r.ID, SpecPath: specPath, SpecName: r.Plan.Name, SpecDigest: r.Plan.Digest,
		TemplateSources: r.Plan.TemplateSources, Inputs: r.inputs, Vars: r.vars, Seed: r.seed,
		RunnerVersion: r.opts.Version, Models: map[string]ModelInfo{}, Created: time.Now().UTC(),
		Platform: goruntime.GOOS + "/" + goruntime.GOARCH, Sample: r.opts.Sample, Expected: r.opts.Expected,
		Sweep: r.opts.Sweep, ReplayedFrom: r.opts.ReplayFrom, Cache: r.opts.Cache != nil,
		ModelOverrides: r.opts.Models,
		Answers:        r.opts.Answers, ContextDir: r.opts.ContextDir, DatasetLine: r.opts.DatasetLine, SweepIndex: r.opts.SweepIndex,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		m.GoVersion = info.GoVersion
	}
	for _, mp := range usedModels(r.Plan) {
		mi := ModelInfo{
			Model: mp.Model, Deployment: mp.Deployment, Temperature: mp.Temperature, TopP: mp.TopP, MaxTokens: mp.MaxTokens, Seed: mp.Seed, Stream: mp.Stream,
			ReasoningEffort: mp.ReasoningEffort, MaxTokensField: mp.TokenField(), Omit: mp.Omit,
		}
		if mode := mp.JSONModeFor(); mode != "auto" {
			mi.JSONMode = mode
		}
		if extra := mp.RequestExtra(); len(extra) > 0 {
			fields := make([]llm.Field, len(extra))
			for i, f := range extra {
				fields[i] = llm.Field{Name: f.Name, Value: f.Value}
			}
			mi.Extra = calls.ExtraObject(fields)
		}
		if mp.Price != nil {
			mi.Price = &PriceInfo{Prompt: mp.Price.Prompt, Completion: mp.Price.Completion, CachedPrompt: mp.Price.CachedPrompt, Builtin: mp.Price.Builtin}
		}
		if mp.Endpoint != nil {
			mi.Endpoint, mi.BaseURL = mp.Endpoint.Name, mp.Endpoint.BaseURL
			if mp.Endpoint.Kind == spec.EndpointAzure {
				mi.Kind, mi.APIVersion = mp.Endpoint.Kind, mp.Endpoint.APIVersion
			}
			// A URL written with ${NAME} is recorded as written: what the
			// environment gave it may be a secret.
			if b := r.bases[mp.Endpoint.Name]; b != "" && !strings.Contains(mp.Endpoint.BaseURL, "${") {
				mi.BaseURL = b
			}
		}
		m.Models[mp.Name] = mi
	}
	return m
}

// warnOnce warns the first time a run meets a condition named by key.
func (r *Run) warnOnce(key, format string, args ...any) {
	r.mu.Lock()
	seen := r.warnedOnce[key]
	if r.warnedOnce == nil {
		r.warnedOnce = map[string]bool{}
	}
	r.warnedOnce[key] = true
	r.mu.Unlock()
	if !seen {
		r.warn(format, args...)
	}
}

func (r *Run) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.warnings = append(r.warnings, msg)
	r.mu.Unlock()
	_ = r.event("warning", "", map[string]any{"message": msg})
	if r.opts.Observer != nil {
		r.opts.Observer(Notice{Message: "warning: " + msg})
	}
}

// Execute runs the flow to the end (or to the first failure), evaluates the
// outputs and writes result.json and report.md. The result is returned even
// when err is not nil.
func (r *Run) Execute(ctx context.Context) (*Result, error) {
	started := r.now()
	ctx, span := r.traceRun(ctx)
	runErr := r.runSteps(calls.WithRoot(ctx), r.Plan.Flow, &frame{scope: kit.Scope{Key: "-"}})
	if runErr != nil && ctx.Err() != nil && errors.Is(runErr, context.Canceled) {
		runErr = ErrInterrupted
	}
	if r.dry != nil {
		return r.finishDry(runErr, started)
	}
	status := StatusCompleted
	var outputs map[string]any
	var outErr error
	switch {
	case errors.Is(runErr, ErrWaiting):
		status = StatusWaiting
	case budgetStop(runErr):
		status = StatusBudget
	case runErr != nil:
		status = StatusFailed
	default:
		outputs, outErr = r.evalOutputs()
		if outErr != nil {
			status, runErr = StatusFailed, outErr
		}
	}
	if runErr != nil && (status == StatusFailed || status == StatusBudget) {
		typ := "error"
		if status == StatusBudget {
			typ = "budget_exceeded"
		}
		_ = r.event(typ, "", map[string]any{"error": runErr.Error()})
	}
	res := r.buildResult(status, outputs, runErr, r.now().Sub(started))
	if status == StatusCompleted {
		r.score(res)
	}
	if err := redactValue(r.red, res); err != nil && runErr == nil {
		runErr = err
	}
	r.result = res
	if r.emb != nil {
		return res, runErr // whoever embeds the run keeps its records
	}
	// A run is finished only once its records are on disk: when one cannot
	// be written (a full disk), the journal says the run failed, and a
	// resume writes them from the journal.
	werr := r.writeJSON(filepath.Join(r.Dir, "result.json"), res)
	if werr == nil {
		werr = r.writeReports(res)
	}
	if werr == nil && status == StatusWaiting {
		werr = r.writeQuestions()
	}
	finished := map[string]any{"status": status, "outputs": outputs, "duration_ms": time.Since(started).Milliseconds()}
	if werr != nil {
		werr = fmt.Errorf("writing the run's records in %s: %w", r.Dir, werr)
		finished["status"], finished["error"] = StatusFailed, werr.Error()
		if runErr == nil {
			runErr = werr
		}
	}
	_ = r.event("run_finished", "", finished)
	if cerr := r.journal.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if r.lock != nil {
		_ = r.lock.Unlock()
	}
	r.endRunSpan(span, res, runErr)
	return res, runErr
}

// ErrInterrupted is a run stopped by a signal (Ctrl-C); it can be resumed.
var ErrInterrupted = errors.New("interrupted")

func (r *Run) evalOutputs() (map[string]any, error) {
	env := r.env(kit.Scope{})
	out := map[string]any{}
	for _, o := range r.Plan.Outputs {
		v, err := evalProgram(o.Program, env)
		if err != nil {
			return nil, fmt.Errorf("output %q (%s): %w", o.Name, o.Program.Source, err)
		}
		out[o.Name] = jsonable(v)
	}
	return out, nil
}

// Result is the result of Execute, or nil before it finished.
func (r *Run) Result() *Result { return r.result }

// Outputs returns the output names in declaration order.
func (r *Run) Outputs() []string {
	var out []string
	for _, o := range r.Plan.Outputs {
		out = append(out, o.Name)
	}
	return out
}
