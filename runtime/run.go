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
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/connect"
	"github.com/debate-runner/runner/runtime/images"
	"github.com/debate-runner/runner/runtime/outcome"

	"github.com/debate-runner/runner/runtime/mcpclient"
	"github.com/debate-runner/runner/runtime/tmplguard"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/buildinfo"
	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/batch"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/history"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/spec"
)

// Options configure a run: what it is given (launch.Launch, the same for
// every way a run is made), the settings of the command that makes it,
// its place in a sweep, the parts the executor that makes it wires in (a
// sweep, Temporal), the seams tests replace, and how a resume goes on.
type Options struct {
	launch.Launch
	Settings
	// Place is where the run stands in a sweep (run.json keeps it).
	result.Place
	Wiring
	Seams
	Resuming
}

// Settings are the command's settings for a run.
type Settings struct {
	// RunsDir is where run directories are created (default "runs").
	RunsDir string
	// Getenv reads environment variables (default os.Getenv, plus a .env
	// file next to the spec).
	Getenv func(string) string
	// Observer receives every journal event and progress notice as it
	// happens. It must not block for long.
	Observer func(Notice)
	// Ask, when set, is asked for answers that Answers lacks (a terminal).
	Ask func(ctx context.Context, q value.Question) (string, error)
	// Version is the runner version recorded in the run.
	Version string
	// EarlyCalls lets a new run's first calls go out while its folder is
	// made durable, which Start otherwise waits for: the folder may appear
	// under Run.Dir a few milliseconds after Start returns (its calls'
	// replies wait for it). For a caller that writes nothing into the
	// folder itself before Execute. If the folder cannot be put in place,
	// Execute fails saying why, removes it and empties Run.Dir.
	EarlyCalls bool
	// ContextFrom, when set, is a folder of files (the view's uploads)
	// that Start moves into the new run's directory as context/ and gives
	// the run as its context folder, as --context DIR would. It must be
	// on the runs folder's file system; a run that fails to start leaves
	// neither.
	ContextFrom string
}

// Seams are what tests put in place of the network and the clock.
type Seams = connect.Seams

// Wiring are the parts of a run the executor that makes it supplies: a
// sweep whose runs share endpoint clients, Temporal, whose workers make
// the calls and hold the context folder's snapshot.
type Wiring struct {
	// Clients, when set, is the pool of endpoint clients to use; runs that
	// share one share endpoint limits and identical in-flight calls (a
	// sweep). nil gives the run a pool of its own.
	Clients *ClientPool
	// Batch, when set, sends the calls to endpoints whose kind has a
	// batch API through the sweep's provider batches (runner run --batch).
	Batch *batch.Collector
	// Remote, when set, answers the calls a run would send to its cache and
	// the network: they are made elsewhere (runner run --temporal, whose
	// workers hold the keys and the cache), so the run connects to no
	// endpoint and needs no API key. Its journal, replies and resume are
	// those of any run.
	Remote calls.Stage
	// ContextSnapshot, when set, answers read_file and list_files instead
	// of ContextDir: a snapshot of it that a run made elsewhere shares.
	ContextSnapshot *tools.Snapshot
}

// Resuming says how Resume goes on.
type Resuming struct {
	// Spec is a spec file to continue the run with in place of the one it
	// started with (a fixed one): calls whose requests are unchanged are
	// served from the journal, the others made again.
	Spec string
	// Resample asks the journaled calls of the node that failed the run
	// afresh, as a new sample (see StuckError).
	Resample bool
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
	manifest result.Manifest
	inputs   map[string]any
	vars     map[string]any
	seed     int64
	// recorded are the replies an earlier attempt journaled (resume).
	recorded map[string]kit.Reply
	// fresh are the resample numbers of calls asked afresh with
	// resume --resample, by call key (see calls.Call.Resample).
	fresh map[string]int
	// chain is the path model calls take (see buildChain).
	chain calls.Stage
	// templates renders prompts with the history's helpers.
	templates *template.Template
	// renderSizes holds the last output size per template name
	// (*atomic.Int64), to size the next rendering.
	renderSizes sync.Map
	// cacheWrites are the run's replies on their way into the response
	// cache (see connect.WriteBehind).
	cacheWrites sync.WaitGroup
	lock        *rundir.Lock
	result      *result.Result
	// dry is set for a dry run (see NewDry), emb for an embedded one (see
	// NewEmbedded).
	dry *dryState
	// walk observes the flow walker (see walkObserver); nil: the run's own.
	walk walkObserver
	emb  *Embedded
	// threads are the agents' chat threads (see kit.Thread).
	threads threads
	// redaction keeps the endpoints' secrets out of what the run writes.
	redaction
	// budget is what the run may still spend (nil: no limits).
	budget *calls.Budget
	// requests are the request digests an earlier attempt journaled, by
	// call key: a recorded reply serves a call only when its request is
	// the same.
	requests map[string]requestRecord
	// tools serve the tool results an earlier attempt journaled; with
	// replayTools, those of the recording being replayed.
	tools, replayTools *toolBook
	// absent are the failed calls that an earlier attempt (or the run
	// being replayed) left out of nodes that completed without them, by
	// call key: they are left out again (see leftOut).
	absent map[string]absentRecord
	// mcp serves the tools of the spec's MCP servers (see mcpTools);
	// mcpKnown and mcpReplay are the tool lists journaled by an earlier
	// attempt and by the recording being replayed.
	mcp                 *mcpclient.Client
	mcpOnce             sync.Once
	mcpKnown, mcpReplay map[string]mcpclient.Listing
	// toolCount counts the tool calls of this attempt, "" for the run's
	// (see toolBudget).
	toolMu    sync.Mutex
	toolCount map[string]int

	conn *connect.Endpoints
	*eventLog
	*runState
}

// Start prepares a new run of plan: resolves inputs and vars, checks that
// every endpoint the run needs has its key, creates the run directory and
// journals the start. Nothing is sent to a model yet.
func Start(plan *spec.Plan, opts Options) (*Run, error) {
	if opts.ReplayFrom != "" {
		// The recording's image inputs, which its inputs name by digest.
		if err := images.LoadDir(opts.ReplayFrom); err != nil {
			return nil, err
		}
	}
	v, err := launch.Prepare(plan, opts.Given)
	if err != nil {
		return nil, err
	}
	opts.ContextDir = absPath(opts.ContextDir)
	r := newPrepared(v, opts)
	budget := v.Budget
	if err := r.setUpCalls(budget, nil); err != nil {
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
	if opts.ContextFrom != "" {
		if err := os.Rename(opts.ContextFrom, filepath.Join(staging, "context")); err != nil {
			_ = os.RemoveAll(staging)
			return nil, fmt.Errorf("context folder: %w", err)
		}
		r.opts.ContextDir = filepath.Join(final, "context")
	}
	files, err := r.setUp(budget)
	if err != nil {
		if r.journal != nil {
			_ = r.journal.Close()
		}
		if r.lock != nil {
			_ = r.lock.Unlock()
		}
		_ = os.RemoveAll(staging)
		return nil, err
	}
	if !opts.EarlyCalls {
		err := files.Sync()
		if err == nil {
			err = rundir.Publish(staging, final)
		}
		if err != nil {
			_ = r.journal.Close()
			_ = r.lock.Unlock()
			_ = os.RemoveAll(staging)
			return nil, err
		}
		r.Dir = final
		r.warnUnpricedBudget(budget)
		return r, nil
	}
	// Writing the folder's files (some 40 with the libraries' copies),
	// syncing them and renaming the folder into place take tens of
	// milliseconds on a busy disk, which the run's first calls need not
	// wait for: the calls go out meanwhile, and their replies, like every
	// synced event, wait for the folder to be durable under its name
	// (waitPublished). A process killed or a machine stopped before that
	// leaves the hidden folder, as a run killed while setting up always
	// did, and loses the calls in flight, as a kill loses them at any
	// time. When the folder cannot be set up, the run fails with why and
	// removes it (see Execute).
	r.published, r.staging = make(chan struct{}), staging
	go func() {
		defer close(r.published)
		if err := files.Sync(); err != nil {
			r.publishErr = err
			return
		}
		r.publishErr = publish(staging, final)
	}()
	r.Dir = final
	r.warnUnpricedBudget(budget)
	return r, nil
}

// setUpCalls is the one set-up of the path a run's calls take, for a new
// run and a resumed one alike: the endpoints' clients (each key checked),
// the budget with what earlier attempts spent (by node; nil for a new
// run), the chain of call stages, and the tool results of the recording a
// replay is served from.
func (r *Run) setUpCalls(budget *spec.BudgetPlan, spent map[string]calls.Spend) error {
	if err := r.connect(); err != nil {
		return err
	}
	r.budget = newBudget(budget)
	if r.budget != nil {
		for node, s := range spent {
			r.budget.Add(node, s)
		}
	}
	r.chain = r.buildChain()
	return r.loadReplayTools()
}

// publish renames a new run's folder into place; tests make it fail.
var publish = rundir.Publish

// setUp fills a new run's directory: lock, manifest, the spec and its
// libraries, and the journal with the run's start. It returns the batch
// that writes the files and makes them durable with the journal's start.
func (r *Run) setUp(budget *spec.BudgetPlan) (*rundir.Batch, error) {
	plan := r.Plan
	lock, err := rundir.TakeLock(r.Dir)
	if err != nil {
		return nil, err
	}
	r.lock = lock
	// The folder is not published yet: its files are written in place and
	// synced together with the journal's first event (see below).
	var files rundir.Batch
	libs, err := saveLibraries(r.Dir, plan, &files, files.Stage)
	if err != nil {
		return nil, err
	}
	r.manifest = r.buildManifest()
	r.manifest.Libraries, r.manifest.Budget = libs, budget
	manifest, err := r.jsonFile(r.manifest)
	if err != nil {
		return nil, err
	}
	files.Stage(filepath.Join(r.Dir, "run.json"), manifest)
	files.Stage(filepath.Join(r.Dir, "spec.yaml"), r.textFile(plan.Source))
	// The images its image inputs name go into the run's directory, for a
	// resume or a replay to send the same bytes.
	var ims []images.Input
	for _, in := range r.Plan.Inputs {
		if s, _ := r.inputs[in.Name].(string); in.Image && s != "" {
			ims = append(ims, images.Input{Name: in.Name, Text: s})
		}
	}
	if err := images.Stage(r.Dir, ims, &files); err != nil {
		return nil, err
	}
	j, err := journal.CreateWith(filepath.Join(r.Dir, "journal.jsonl"), journal.Options{Redact: r.red, FolderSynced: true})
	if err != nil {
		return nil, err
	}
	r.journal = j
	// The run's start is durable with the folder's files and entries, in
	// one round of syncs, before the folder is published.
	err = r.eventSynced(event.RunStarted, "", map[string]any{
		"run_id": r.ID, "spec": plan.Path, "spec_digest": plan.Digest, "inputs": r.inputs, "vars": r.vars,
		"seed": r.seed, "runner_version": r.manifest.RunnerVersion, "go_version": r.manifest.GoVersion,
		"template_sources": plan.TemplateSources,
	}, false)
	if err != nil {
		return nil, err
	}
	files.Folder(r.Dir)
	files.Also(func() error { return j.SyncTo(j.Seq()) })
	return &files, nil
}

// warnUnpricedBudget warns when a cost limit cannot see some calls' cost.
func (r *Run) warnUnpricedBudget(b *spec.BudgetPlan) {
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

// newPrepared is a run of prepared values: the plan, inputs, vars and
// seed every way of making a run shares (launch.Prepare).
func newPrepared(v *launch.Values, opts Options) *Run {
	r := newRun(v.Plan, opts)
	r.inputs, r.vars, r.seed = v.Inputs, v.Vars, v.Seed
	return r
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
		templates: hist.Templates(tmplguard.Guard(plan.Templates)),
		recorded:  map[string]kit.Reply{},
		conn:      connect.New(pool, getenv, filepath.Join(filepath.Dir(plan.Path), ".env")),
		eventLog:  &eventLog{},
		runState: &runState{
			hist:        hist,
			seenText:    map[[sha256.Size]byte]bool{},
			results:     map[string]value.NodeResult{},
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

// loadReplayTools reads the tool results of the recording being replayed,
// so that a replay never runs a tool (reads a file) again.
func (r *Run) loadReplayTools() error {
	if r.opts.Replay == nil || r.opts.ReplayFrom == "" {
		return nil
	}
	path := r.opts.ReplayFrom
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, "journal.jsonl")
	}
	events, err := journal.Read(path)
	if err != nil {
		return &args.FlagError{Flag: "--replay", Err: err}
	}
	r.replayTools = &toolBook{source: string(calls.FromReplay)}
	if r.absent == nil {
		r.absent = map[string]absentRecord{}
	}
	if err := readAbsent(events, r.absent); err != nil {
		return &args.FlagError{Flag: "--replay", Err: err}
	}
	if r.mcpReplay, err = mcpclient.ReadJournal(events); err != nil {
		return err
	}
	return readToolCalls(events, r.replayTools)
}

// closeMCP stops the MCP servers the run started.
func (r *Run) closeMCP() {
	if r.mcp != nil {
		r.mcp.Close()
	}
}

// connect creates one client per endpoint the run uses, after checking that
// each has its API key and every environment variable its URL and headers
// name. A run served wholly from a recording (--replay without live calls)
// connects nowhere and needs no key.
func (r *Run) connect() error {
	if r.opts.Replay != nil && !r.opts.ReplayMissingLive || r.opts.Remote != nil {
		return nil
	}
	return r.conn.Connect(usedModels(r.Plan), r.opts.Seams, r.opts.Batch, func(secrets []string) {
		r.secrets = secrets
		r.red = journal.NewRedactor(secrets...)
	})
}

// warnSimulated says, once, that the run's replies are made by a simulated
// model (the offline provider kind) rather than asked of a model: progress,
// result.json, the reports and the view all show the warning.
func (r *Run) warnSimulated() {
	if r.dry != nil {
		return
	}
	var names []string
	for _, m := range usedModels(r.Plan) {
		if llm.Simulated(m.Endpoint) {
			names = append(names, m.Name)
		}
	}
	if len(names) > 0 {
		r.warnOnce("simulated", "simulated run: the replies of model %s are made by runner's offline model (kind offline), not by a language model; its calls are not priced", strings.Join(names, ", "))
	}
}

func (r *Run) buildManifest() result.Manifest {
	// Resume compiles the spec under this path to find template folders and
	// the .env next to it, from whatever directory it is run in.
	specPath := r.Plan.Path
	if abs, err := filepath.Abs(specPath); err == nil {
		specPath = abs
	}
	m := result.Manifest{
		RunID: r.ID, SpecPath: specPath, SpecName: r.Plan.Name, SpecDigest: r.Plan.Digest,
		TemplateSources: r.Plan.TemplateSources, Inputs: r.inputs, Vars: r.vars, Seed: r.seed,
		RunnerVersion: r.opts.Version, Models: map[string]result.ModelInfo{}, Created: time.Now().UTC(),
		Platform: goruntime.GOOS + "/" + goruntime.GOARCH, ReplayedFrom: r.opts.ReplayFrom, Cache: r.opts.Cache != nil,
		ModelOverrides: r.opts.Models, Answers: r.opts.Answers, ContextDir: r.opts.ContextDir,
		// What the launch says of the run's place and flags, whole.
		Place: r.opts.Place, Flags: r.opts.Flags,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		m.GoVersion = info.GoVersion
	}
	m.RunnerCommit, m.BuiltIns = buildinfo.Read().CommitLabel(), r.Plan.BuiltIns
	for _, mp := range usedModels(r.Plan) {
		mi := result.ModelInfo{
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
			mi.Price = &result.PriceInfo{Prompt: mp.Price.Prompt, Completion: mp.Price.Completion, CachedPrompt: mp.Price.CachedPrompt, CacheWrite: mp.Price.CacheWrite, Builtin: mp.Price.Builtin}
		}
		if mp.Endpoint != nil {
			mi.Endpoint, mi.BaseURL = mp.Endpoint.Name, mp.Endpoint.BaseURL
			if mp.Endpoint.Kind != r.Plan.Registry.DefaultProvider() {
				mi.Kind, mi.APIVersion = mp.Endpoint.Kind, mp.Endpoint.Settings["api_version"]
			}
			mi.Simulated = llm.Simulated(mp.Endpoint)
			// A URL written with ${NAME} is recorded as written: what the
			// environment gave it may be a secret.
			if b := r.conn.Bases[mp.Endpoint.Name]; b != "" && !strings.Contains(mp.Endpoint.BaseURL, "${") {
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
	_ = r.event(event.Warning, "", map[string]any{"message": msg})
	if r.opts.Observer != nil {
		r.opts.Observer(Notice{Message: "warning: " + msg})
	}
}

// Execute runs the flow to the end (or to the first failure), evaluates the
// outputs and writes result.json and report.md. The result is returned even
// when err is not nil.
func (r *Run) Execute(ctx context.Context) (*result.Result, error) {
	started := r.now()
	r.warnSimulated()
	defer r.closeMCP()
	defer r.cacheWrites.Wait() // the run's replies are in the cache when it returns
	ctx, span := r.traceRun(ctx)
	runErr := r.runSteps(calls.WithRoot(ctx), r.Plan.Flow, &frame{scope: kit.Scope{Key: "-"}})
	if runErr != nil && ctx.Err() != nil && errors.Is(runErr, context.Canceled) {
		runErr = ErrInterrupted
	}
	// A run that made no call may end before its folder is in place.
	if err := r.waitPublished(); err != nil && runErr == nil {
		runErr = err
	}
	if r.dry != nil {
		return r.finishDry(ctx, runErr, started)
	}
	status := result.StatusCompleted
	var outputs map[string]any
	var outErr error
	switch {
	case errors.Is(runErr, kit.ErrWaiting):
		status = result.StatusWaiting
	case budgetStop(runErr):
		status = result.StatusBudget
	case runErr != nil:
		status = result.StatusFailed
	default:
		outputs, outErr = r.evalOutputs()
		if outErr != nil {
			status, runErr = result.StatusFailed, outErr
		}
	}
	var conclusion *result.Conclusion
	if status == result.StatusCompleted {
		// The outputs are written either way; whether they answer the
		// spec's purpose is the status.
		if conclusion = outcome.Conclude(r.Plan, r.env(kit.Scope{}), r.hist.GoalVerdicts, outputs, r.warn); !conclusion.Concluded {
			status = result.StatusInconclusive
		}
	}
	if runErr != nil && (status == result.StatusFailed || status == result.StatusBudget) {
		typ := event.Error
		if status == result.StatusBudget {
			typ = event.BudgetExceeded
		}
		ev := map[string]any{"error": runErr.Error()}
		if status == result.StatusFailed {
			ev["kind"] = failureKind(runErr)
		}
		_ = r.event(typ, "", ev)
	}
	// The judges grade a completed run before its result is built, so
	// that their calls are in its usage.
	var judgements []result.Judgement
	if status == result.StatusCompleted && r.Plan.Judge != nil {
		judgements = r.judge(ctx, outputs)
	}
	// What is built and written from here on is garbage once on disk.
	defer tightGC()()
	res := r.buildResult(status, outputs, runErr, r.now().Sub(started))
	res.Conclusion = conclusion
	sc := outcome.Scoring{Plan: r.Plan, Expected: r.opts.Expected, Env: func() *spec.Env { return r.env(kit.Scope{}) }, Warn: r.warn}
	switch {
	case judgements != nil:
		sc.Judged(res, judgements)
	case status == result.StatusCompleted:
		sc.Score(res)
	case status == result.StatusInconclusive:
		sc.Inconclusive(res)
	}
	if err := redactResult(r.red, res); err != nil && runErr == nil {
		runErr = err
	}
	r.result = res
	if r.emb != nil {
		return res, runErr // whoever embeds the run keeps its records
	}
	// A run is finished only once its records are on disk: when one cannot
	// be written (a full disk), the journal says the run failed, and a
	// resume writes them from the journal.
	// run.json says how the run ended too, for tools that read only the
	// manifest.
	werr := r.writeRecords(res, status)
	if werr == nil && status == result.StatusWaiting {
		werr = r.writeQuestions()
	}
	if werr == nil {
		werr = r.writeTurns(status == result.StatusWaiting)
	}
	finished := map[string]any{"status": status, "outputs": outputs, "duration_ms": time.Since(started).Milliseconds()}
	if conclusion != nil {
		finished["conclusion"] = conclusion
	}
	if werr != nil {
		werr = fmt.Errorf("writing the run's records in %s: %w", r.Dir, werr)
		finished["status"], finished["error"] = result.StatusFailed, werr.Error()
		if runErr == nil {
			runErr = werr
		}
	}
	_ = r.event(event.RunFinished, "", finished)
	if cerr := r.journal.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if r.lock != nil {
		_ = r.lock.Unlock()
	}
	if r.publishErr != nil {
		// Never set up whole: nothing to show or resume.
		_ = os.RemoveAll(r.staging)
		r.Dir = ""
	}
	r.endRunSpan(span, res, runErr)
	return res, runErr
}

func (r *Run) evalOutputs() (map[string]any, error) {
	env := r.env(kit.Scope{})
	out := map[string]any{}
	for _, o := range r.Plan.Outputs {
		v, err := evalProgram(o.Program, env)
		if err != nil {
			return nil, fmt.Errorf("output %q (%s): %w", o.Name, o.Program.Source, err)
		}
		if err := spec.CheckFinite(o.Program, fmt.Sprintf("output %q", o.Name), v); err != nil {
			err.(*spec.NonFiniteError).File = r.Plan.Path
			return nil, err
		}
		out[o.Name] = jsonable(v)
	}
	return out, nil
}

// Result is the result of Execute, or nil before it finished.
func (r *Run) Result() *result.Result { return r.result }

// Flags are the run's flags (runflags.Flags): those it was given, or on
// resume those its run.json kept.
func (r *Run) Flags() runflags.Flags { return r.opts.Flags }

// Values are the inputs and vars the run was prepared with.
func (r *Run) Values() (inputs, vars map[string]any) { return r.inputs, r.vars }

// Outputs returns the output names in declaration order.
func (r *Run) Outputs() []string {
	var out []string
	for _, o := range r.Plan.Outputs {
		out = append(out, o.Name)
	}
	return out
}
