// Package runtime executes a compiled plan: it walks the flow, runs node
// executors, makes model calls through per-endpoint clients with limits and
// retries, journals every event before reporting it, and writes the result
// and report of the run. A killed or failed run resumes from its journal
// without repeating a model call whose response was recorded.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/debate-runner/runner/internal/dotenv"
	"github.com/debate-runner/runner/nodes/kit"
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
}

// Notice is something that happened in a run, for progress displays and
// --json output.
type Notice struct {
	Event    *journal.Event     // a journaled event, or nil
	Progress *kit.ProgressEvent // a progress update, or nil
	Scope    string
	Message  string // a warning or status line
}

// Run is one execution of a plan, with its directory and journal.
type Run struct {
	ID   string
	Dir  string
	Plan *spec.Plan

	opts     Options
	manifest Manifest
	journal  *journal.Writer
	inputs   map[string]any
	vars     map[string]any
	seed     int64
	getenv   func(string) string
	// dotEnvErr is why the .env next to the spec could not be read; a run
	// that connects to an endpoint reports it.
	dotEnvErr error
	clients   map[string]*llm.Client
	pool      *ClientPool
	bases     map[string]string // endpoint name -> base URL actually used
	secrets   []string
	recorded  map[string]kit.Reply
	// chain is the path model calls take (see buildChain).
	chain calls.Stage
	// dry is set for a dry run (see NewDry).
	dry *dryState
	// contentBytes is the size of every recorded message's content.
	contentBytes atomic.Int64

	// hist is the record of messages with each agent's view of it and
	// indexes over them; templates renders prompts with its helpers.
	hist      *history.Store
	templates *template.Template

	mu sync.Mutex
	// messages is hist's record so far (see messagesSoFar): it only grows,
	// and results is replaced (setResult) rather than changed, so prompts
	// and expressions share both without copying.
	messages []spec.Message
	results  map[string]spec.NodeResult
	// views are agent views by node (nil: every agent), made once.
	views       map[*spec.NodePlan][]spec.AgentView
	usage       *usageBook
	occurrences map[string]int
	warnings    []string
	warnedOnce  map[string]bool
	seenText    map[[sha256.Size]byte]bool // SHA-256 of texts already in the journal
	waiting     []spec.Question
	// answered are the questions answered in this attempt; questions.yaml
	// keeps them so that resuming with it answers every question again.
	answered []spec.Question

	// notifyMu orders observer notices by Seq: concurrent appends return in
	// any order, and --json output should read like the journal.
	notifyMu   sync.Mutex
	nextNotify int64
	// unjournaledSeq numbers the events of a run without a journal.
	unjournaledSeq int64
	early          map[int64]journal.Event

	// summaries caches summaries by agent and scope; pendingSummaries are
	// recorded as messages when the node that asked for them records.
	result *Result
	// already counts, by type and key, the events a resumed run's journal
	// holds from before; see repeated.
	already          map[string]int
	alreadyMu        sync.Mutex
	lock             *rundir.Lock
	toolCalls        []ToolCallInfo
	rejections       []Rejection
	summaries        map[string]*summaryEntry
	pendingSummaries []spec.Message
	callCounts       CallCounts
	// renderSizes holds the last output size per template name
	// (*atomic.Int64), to size the next rendering.
	renderSizes sync.Map
}

// Start prepares a new run of plan: resolves inputs and vars, checks that
// every endpoint the run needs has its key, creates the run directory and
// journals the start. Nothing is sent to a model yet.
func Start(plan *spec.Plan, opts Options) (*Run, error) {
	inputs, err := resolveInputs(plan, opts.Inputs, opts.InputValues)
	if err != nil {
		return nil, err
	}
	vars, err := resolveVars(plan, opts.Sets, opts.VarValues)
	if err != nil {
		return nil, err
	}
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
	r.chain = r.buildChain()
	if err := r.createDir(); err != nil {
		return nil, err
	}
	lock, err := rundir.TakeLock(r.Dir)
	if err != nil {
		return nil, err
	}
	r.lock = lock
	r.manifest = r.buildManifest()
	if err := rundir.WriteManifest(r.Dir, r.manifest); err != nil {
		return nil, err
	}
	if err := rundir.WriteFile(filepath.Join(r.Dir, "spec.yaml"), plan.Source); err != nil {
		return nil, err
	}
	j, err := journal.CreateWith(filepath.Join(r.Dir, "journal.jsonl"), journal.Options{Redact: journal.NewRedactor(r.secrets...)})
	if err != nil {
		return nil, err
	}
	r.journal = j
	if err := r.event("run_started", "", map[string]any{
		"run_id": r.ID, "spec": plan.Path, "spec_digest": plan.Digest, "inputs": inputs, "vars": vars,
		"seed": r.seed, "runner_version": r.manifest.RunnerVersion, "go_version": r.manifest.GoVersion,
		"template_sources": plan.TemplateSources,
	}); err != nil {
		return nil, err
	}
	return r, nil
}

func newRun(plan *spec.Plan, opts Options) *Run {
	if opts.RunsDir == "" {
		opts.RunsDir = "runs"
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	envPath := filepath.Join(filepath.Dir(plan.Path), ".env")
	dotEnv, dotEnvErr := dotenv.Read(envPath)
	pool := opts.Clients
	if pool == nil {
		pool = NewClientPool()
	}
	hist := history.New()
	return &Run{
		hist:      hist,
		templates: hist.Templates(plan.Templates),
		pool:      pool,
		bases:     map[string]string{},
		Plan:      plan,
		opts:      opts,
		getenv: func(k string) string {
			if v := getenv(k); v != "" {
				return v
			}
			return dotEnv[k]
		},
		dotEnvErr:   dotEnvErr,
		clients:     map[string]*llm.Client{},
		recorded:    map[string]kit.Reply{},
		results:     map[string]spec.NodeResult{},
		usage:       newUsageBook(),
		occurrences: map[string]int{},
		seenText:    map[[sha256.Size]byte]bool{},
	}
}

// usedModels are the models the run can call: those its nodes declared
// (the compiler records them), so an agent no node uses needs no key.
func usedModels(plan *spec.Plan) []*spec.ModelPlan { return plan.UsedModels }

// connect creates one client per endpoint the run uses, after checking that
// each has its API key and every environment variable its URL and headers
// name. A run served wholly from a recording (--replay without live calls)
// connects nowhere and needs no key.
func (r *Run) connect() error {
	if r.opts.Replay != nil && !r.opts.ReplayMissingLive {
		return nil
	}
	if r.dotEnvErr != nil {
		return &FlagError{Flag: ".env file", Err: r.dotEnvErr}
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
		r.clients[ep.Name] = r.pool.client(llm.Endpoint{
			Name: ep.Name, Kind: llm.Kind(ep.Kind), BaseURL: base, APIVersion: ep.APIVersion, APIKey: key, KeyHeader: ep.APIKeyHeader,
			MaxConcurrency: ep.MaxConcurrency, RequestsPerMinute: ep.RequestsPerMinute, TokensPerMinute: ep.TokensPerMinute,
			Timeout: ep.Timeout, MaxRetries: ep.MaxRetries, Headers: headers,
			HTTPClient: r.opts.HTTPClient, Sleep: r.opts.Sleep,
		})
	}
	return nil
}

func (r *Run) createDir() error {
	id, dir, err := rundir.Create(r.opts.RunsDir, "", r.Plan.Name, rundir.RunTime, time.Now())
	if err != nil {
		return err
	}
	r.ID, r.Dir = id, dir
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
			mi.Price = &PriceInfo{Prompt: mp.Price.Prompt, Completion: mp.Price.Completion}
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

// syncedEvents are fsynced before the run goes on: a response that was paid
// for, and the run's start, resumption and end. Every other event is derived
// again from these when a run resumes, so it is only written (it survives a
// killed process) and becomes durable with the next synced event; that keeps
// an fsync per event off the critical path between dependent calls.
var syncedEvents = map[string]bool{"run_started": true, "run_resumed": true, "model_response": true, "run_finished": true}

// neverRepeated are the event types a resumed run always writes: the run's
// own milestones, failures, and events of calls actually made.
var neverRepeated = map[string]bool{
	"run_started": true, "run_resumed": true, "run_finished": true, "error": true, "node_failed": true,
	"model_request": true, "model_response": true, "retry": true, "model_error": true,
}

// repeated reports whether an event is already in the journal from before a
// resume. A resumed run walks its flow again from the start; the events it
// re-derives (node_started, message, output, ...) are left out, so the
// journal holds each of them once.
func (r *Run) repeated(typ, key string) bool {
	if r.already == nil || neverRepeated[typ] {
		return false
	}
	r.alreadyMu.Lock()
	defer r.alreadyMu.Unlock()
	k := typ + "\x00" + key
	if r.already[k] > 0 {
		r.already[k]--
		return true
	}
	return false
}

// event journals an event and tells the observer, in that order.
func (r *Run) event(typ, key string, data any) error {
	if r.repeated(typ, key) {
		return nil
	}
	if r.journal == nil {
		return r.unjournaled(journal.Entry{Type: typ, Key: key, Data: data})
	}
	sync := syncedEvents[typ]
	if r.opts.Observer == nil {
		// Nobody looks at the event: spare the journal copying it back.
		if _, err := r.journal.AppendSeq(typ, key, data, sync); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		return nil
	}
	write := r.journal.AppendUnsynced
	if sync {
		write = r.journal.Append
	}
	ev, err := write(typ, key, data)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	r.notify(ev)
	return nil
}

// events journals several events in one write and tells the observer about
// each, in order. The batch is synced if any of its events must be.
func (r *Run) events(entries []journal.Entry) error {
	if r.already != nil {
		kept := entries[:0:0]
		for _, e := range entries {
			if !r.repeated(e.Type, e.Key) {
				kept = append(kept, e)
			}
		}
		if entries = kept; len(entries) == 0 {
			return nil
		}
	}
	if r.journal == nil {
		for _, e := range entries {
			if err := r.unjournaled(e); err != nil {
				return err
			}
		}
		return nil
	}
	sync := false
	for _, e := range entries {
		sync = sync || syncedEvents[e.Type]
	}
	evs, err := r.journal.AppendBatch(entries, sync)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if r.opts.Observer != nil {
		for _, ev := range evs {
			r.notify(ev)
		}
	}
	return nil
}

// unjournaled tells the observer about an event of a run that keeps no
// journal (a dry run), numbered as a journal would number it.
func (r *Run) unjournaled(e journal.Entry) error {
	if r.opts.Observer == nil {
		return nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("event %s: %w", e.Type, err)
	}
	r.notifyMu.Lock()
	r.unjournaledSeq++
	ev := journal.Event{Seq: r.unjournaledSeq, Time: time.Now().UTC(), Type: e.Type, Key: e.Key, Data: data}
	r.notifyMu.Unlock()
	r.notify(ev)
	return nil
}

// notify tells the observer about ev once every event before it was told.
// The first event of a run or resumption is appended alone, so its Seq
// starts the count.
func (r *Run) notify(ev journal.Event) {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	if r.nextNotify == 0 {
		r.nextNotify = ev.Seq
	}
	if ev.Seq != r.nextNotify {
		if r.early == nil {
			r.early = map[int64]journal.Event{}
		}
		r.early[ev.Seq] = ev
		return
	}
	for {
		told := ev // each notice gets its own copy: observers may keep it
		r.opts.Observer(Notice{Event: &told})
		r.nextNotify++
		next, ok := r.early[r.nextNotify]
		if !ok {
			return
		}
		delete(r.early, r.nextNotify)
		ev = next
	}
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
	started := time.Now()
	runErr := r.runSteps(ctx, r.Plan.Flow, &frame{scope: kit.Scope{Key: "-"}})
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
	case runErr != nil:
		status = StatusFailed
	default:
		outputs, outErr = r.evalOutputs()
		if outErr != nil {
			status, runErr = StatusFailed, outErr
		}
	}
	if runErr != nil && status == StatusFailed {
		_ = r.event("error", "", map[string]any{"error": runErr.Error()})
	}
	res := r.buildResult(status, outputs, runErr, time.Since(started))
	if status == StatusCompleted {
		r.score(res)
	}
	r.result = res
	if err := rundir.WriteJSON(filepath.Join(r.Dir, "result.json"), res); err != nil && runErr == nil {
		runErr = err
	}
	if err := r.writeReports(res); err != nil && runErr == nil {
		runErr = err
	}
	if status == StatusWaiting {
		if err := r.writeQuestions(); err != nil && runErr == nil {
			runErr = err
		}
	}
	_ = r.event("run_finished", "", map[string]any{"status": status, "outputs": outputs, "duration_ms": time.Since(started).Milliseconds()})
	if cerr := r.journal.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if r.lock != nil {
		_ = r.lock.Unlock()
	}
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
