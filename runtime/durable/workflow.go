package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/debate-runner/runner/spec/value"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/spec"
)

// Names of what workers register and clients call.
const (
	RunWorkflowName   = "runner.Run"
	SweepWorkflowName = "runner.Sweep"
	GateWorkflowName  = "runner.Gate"
	CallActivityName  = "runner.Call"
	// CallLocalActivityName is the call as a local activity (see
	// runLocalCalls).
	CallLocalActivityName = "runner.CallLocal"
	// SignalAnswers carries answers to clarifying questions (by question
	// id); SignalRetry tells a run whose call failed to try it again.
	SignalAnswers = "runner.answers"
	SignalRetry   = "runner.retry"
	// QueryStatus answers what a run is doing (RunStatus).
	QueryStatus = "runner.status"
)

// Error types of failed calls: the endpoint failed after our retries, or
// the worker cannot make the call at all (a key it lacks). Neither is
// retried by Temporal; the run waits for `runner resume`.
const (
	ErrTypeEndpoint = "runner.EndpointFailure"
	ErrTypeWorker   = "runner.WorkerSetup"
)

// RunInput is what a run workflow is started with.
type RunInput struct {
	// RunID is the run's id in the run directory the client writes.
	RunID string `json:"run_id"`
	// Version is the runner version that submitted the run, for the
	// record: the run is pinned to that build's workers (StartOptions).
	Version string `json:"version,omitempty"`
	// Bundle is the spec and its files; a sweep's runs leave it out and
	// get the sweep's.
	Bundle *Bundle `json:"bundle,omitempty"`
	// Values are the inputs, vars and expected value (see Values).
	Values  []byte            `json:"values"`
	Seed    int64             `json:"seed"`
	Sample  int               `json:"sample,omitempty"`
	Answers map[string]string `json:"answers,omitempty"`
	// NoCache keeps the workers' response caches out of the run.
	NoCache bool       `json:"no_cache,omitempty"`
	Calls   CallPolicy `json:"calls"`
	// CacheScope keeps the run's entries in the workers' caches to its
	// sweep (--own-samples; see result.Place.CacheScope).
	CacheScope string `json:"cache_scope,omitempty"`
	// Flags are the run's flags (runflags.Flags), each under its own key.
	runflags.Flags
}

// Options are the options the workflow runs the engine with: what the run
// was submitted with (its values decoded), with no environment here (the
// workers make the calls) and ask answering its questions.
func (in RunInput) Options(values Values, ask func(context.Context, value.Question) (string, error)) runtime.Options {
	seed := in.Seed
	opts := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{InputValues: values.Inputs, VarValues: values.Vars, Models: values.Models, Seed: &seed}, Flags: in.Flags},
		Settings: runtime.Settings{Ask: ask, Getenv: func(string) string { return "" }},
		Place:    result.Place{Expected: values.Expected, Sample: in.Sample, CacheScope: in.CacheScope},
	}
	if in.Bundle != nil && in.Bundle.Context != nil {
		opts.ContextSnapshot = in.Bundle.Context
		opts.ContextDir = "context" // the snapshot answers; a name says there is one
	}
	return opts
}

// CallPolicy is how the run's calls run as activities.
type CallPolicy struct {
	// Heartbeat is how long a call may go without news from its worker
	// before Temporal gives it to another (default 30s): the cost of a
	// lost worker.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// TaskQueue is where calls go; "" is the run's own task queue.
	TaskQueue string `json:"task_queue,omitempty"`
}

// DefaultHeartbeat is CallPolicy.Heartbeat's default.
const DefaultHeartbeat = 30 * time.Second

// runLocalCalls is the change from each call an activity the server
// dispatches to any worker (a round trip through the server for each call,
// 80 to 120 ms on a loaded dev server, and another for the workflow task
// that takes its reply) to calls made as local activities by the worker
// that runs the workflow: their replies go back to the workflow within the
// same workflow task, and are recorded in the history when the task
// completes or heartbeats (every 0.8 of TaskTimeout). A worker lost makes
// its workflow task time out (TaskTimeout): another worker replays the
// history and makes the calls not yet recorded again, as a normal
// activity's retry makes a call again. Calls sent to another task queue
// (CallPolicy.TaskQueue) stay activities. Runs are pinned to the build
// that started them; the version keeps recorded histories replaying.
const runLocalCalls = "local-calls"

// MaxTaskTimeout bounds a run's workflow task timeout (TaskTimeout).
const MaxTaskTimeout = 10 * time.Second

// TaskTimeout is the workflow task timeout of a run whose calls have the
// heartbeat given (0: DefaultHeartbeat): as long, at most MaxTaskTimeout
// and at least a second. A run's calls are local activities, so this is
// how long a lost worker's calls wait before another worker makes them,
// and how often (0.8 of it) the replies of calls in flight are recorded.
func TaskTimeout(heartbeat time.Duration) time.Duration {
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	return min(max(heartbeat, time.Second), MaxTaskTimeout)
}

// RunOutcome is what a run workflow returns: enough for its client to
// check that the run it recorded is the run the workers made.
type RunOutcome struct {
	Status         string          `json:"status"`
	Error          string          `json:"error,omitempty"`
	Outputs        json.RawMessage `json:"outputs,omitempty"`
	OutputsDigest  string          `json:"outputs_digest"`
	MessagesDigest string          `json:"messages_digest"`
	Calls          int             `json:"calls"`
}

// RunStatus is what QueryStatus answers.
type RunStatus struct {
	// Calls made so far, and those in flight.
	Done, InFlight int
	// Failed are calls that failed and wait for `runner resume`.
	Failed []string `json:",omitempty"`
	// Questions wait for answers.
	Questions []string `json:",omitempty"`
	// Retries counts the retry signals received.
	Retries int
}

// CallInput is one model call as an activity.
type CallInput struct {
	Key      string             `json:"key"`
	Endpoint *spec.EndpointPlan `json:"endpoint"`
	Request  llm.Request        `json:"request"`
	// Sample distinguishes repeated samples in the cache key.
	Sample  string `json:"sample,omitempty"`
	NoCache bool   `json:"no_cache,omitempty"`
	// Scope is the call's cache scope (calls.Call.Scope).
	Scope string `json:"scope,omitempty"`
}

// CallOutput is a call's reply and what happened on the way.
type CallOutput struct {
	// Key is the call's (local activities, whose ids the history does not
	// name by key).
	Key    string    `json:"key,omitempty"`
	Reply  kit.Reply `json:"reply"`
	Source string    `json:"source,omitempty"`
	// Retries are the attempts that failed and were retried.
	Retries []Retry `json:"retries,omitempty"`
	// Notes say what the client changed in the request because the
	// endpoint refused it.
	Notes []string `json:"notes,omitempty"`
	// Failed says why the call failed and will not be retried (a local
	// activity returns its failure as a result, keyed, for the client
	// that follows the history).
	Failed string `json:"failed,omitempty"`
}

// Retry is a failed attempt that was retried.
type Retry struct {
	N      int    `json:"n"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error"`
	WaitMS int64  `json:"wait_ms"`
}

// Workflows are the workflows a worker registers.
type Workflows struct {
	// Registry compiles specs (nodes.Registry()).
	Registry *spec.Registry
}

// Run is the run workflow: the engine's flow walk as workflow code, each
// model call an activity whose id is the call key, so that a worker lost
// at any moment costs no call that completed. A call that fails after its
// retries, and a question nobody has answered, make the run wait for a
// signal (runner resume) rather than end, so that the history it has
// stays the run's.
func (w *Workflows) Run(ctx workflow.Context, in RunInput) (RunOutcome, error) {
	if in.Bundle == nil {
		return RunOutcome{}, temporal.NewNonRetryableApplicationError("the run carries no spec", ErrTypeWorker, nil)
	}
	plan, err := in.Bundle.Plan(w.Registry)
	if err != nil {
		return RunOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWorker, nil)
	}
	values, err := DecodeValues(in.Values)
	if err != nil {
		return RunOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWorker, nil)
	}
	wr := &workflowRun{in: in, answers: map[string]string{}}
	wr.local = workflow.GetVersion(ctx, runLocalCalls, workflow.DefaultVersion, 1) == 1 && in.Calls.TaskQueue == ""
	for k, v := range in.Answers {
		wr.answers[k] = v
	}
	wr.listen(ctx)
	if err := workflow.SetQueryHandler(ctx, QueryStatus, wr.status); err != nil {
		return RunOutcome{}, err
	}
	r, err := runtime.NewEmbedded(plan, in.Options(values, wr.ask), runtime.Embedded{
		ID: in.RunID, Stage: calls.StageFunc(wr.call), Parallel: parallel, Await: await,
		Now: func() time.Time { return workflow.Now(ctx) },
	})
	if err != nil {
		return RunOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWorker, nil)
	}
	res, runErr := r.Execute(goContext(context.Background(), ctx))
	out := Outcome(res, runErr)
	out.Calls = wr.done
	return out, nil
}

// Outcome summarises a run's result as RunOutcome does, on the workers and
// on the client alike.
func Outcome(res *result.Result, err error) RunOutcome {
	var out RunOutcome
	if res != nil {
		out.Status = res.Status
		out.Outputs, _ = json.Marshal(res.Outputs)
		out.OutputsDigest = digest(out.Outputs)
		msgs, _ := json.Marshal(res.Messages)
		out.MessagesDigest = digest(msgs)
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// workflowRun is a run workflow's state beside the engine's.
type workflowRun struct {
	in      RunInput
	answers map[string]string
	// retries counts SignalRetry signals; a failed call waits for it to
	// grow.
	retries int
	// local says calls are local activities (runLocalCalls).
	local     bool
	done      int
	inFlight  int
	failed    map[string]bool
	questions map[string]bool
}

// listen takes the run's signals as they come.
func (wr *workflowRun) listen(ctx workflow.Context) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, SignalAnswers)
		for {
			var a map[string]string
			if !ch.Receive(ctx, &a) {
				return
			}
			for k, v := range a {
				wr.answers[k] = v
			}
		}
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, SignalRetry)
		for {
			if !ch.Receive(ctx, nil) {
				return
			}
			wr.retries++
		}
	})
}

func (wr *workflowRun) status() (RunStatus, error) {
	st := RunStatus{Done: wr.done, InFlight: wr.inFlight, Retries: wr.retries}
	for _, m := range []struct {
		set map[string]bool
		to  *[]string
	}{{wr.failed, &st.Failed}, {wr.questions, &st.Questions}} {
		for k := range m.set {
			*m.to = append(*m.to, k)
		}
		sort.Strings(*m.to)
	}
	return st, nil
}

// ask answers a clarifying question once a signal has brought its answer.
func (wr *workflowRun) ask(ctx context.Context, q value.Question) (string, error) {
	wctx := workflowOf(ctx)
	if _, ok := wr.answers[q.ID]; !ok {
		if wr.questions == nil {
			wr.questions = map[string]bool{}
		}
		wr.questions[q.ID] = true
		if err := workflow.Await(wctx, func() bool { _, ok := wr.answers[q.ID]; return ok }); err != nil {
			return "", context.Canceled
		}
		delete(wr.questions, q.ID)
	}
	return wr.answers[q.ID], nil
}

// call makes a model call as a local activity (runLocalCalls) or as an
// activity named by its key. A failure waits for SignalRetry and tries
// again (an activity under a new id).
func (wr *workflowRun) call(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
	wctx := workflowOf(ctx)
	in := CallInput{Key: c.Key, Endpoint: c.Model.Endpoint, Request: c.Request, Sample: c.Sample, NoCache: wr.in.NoCache, Scope: c.Scope}
	heartbeat := wr.in.Calls.Heartbeat
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	for attempt := 1; ; attempt++ {
		id := c.Key
		if attempt > 1 {
			id = fmt.Sprintf("%s (retry %d)", c.Key, attempt-1)
		}
		// The call's own limits bound it (timeouts, retries with backoff,
		// waits for the endpoint's shared limits); the timeout only
		// catches a call that hangs despite them. Our retry policy
		// (llm.Client: backoff with jitter, Retry-After, which errors to
		// retry) runs inside the activity; Temporal retries what a lost
		// worker left.
		retry := &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{ErrTypeEndpoint, ErrTypeWorker},
		}
		var f workflow.Future
		if wr.local {
			lctx := workflow.WithLocalActivityOptions(wctx, workflow.LocalActivityOptions{StartToCloseTimeout: 6 * time.Hour, RetryPolicy: retry})
			f = workflow.ExecuteLocalActivity(lctx, CallLocalActivityName, in)
		} else {
			actx := workflow.WithActivityOptions(wctx, workflow.ActivityOptions{
				ActivityID: id, TaskQueue: wr.in.Calls.TaskQueue,
				StartToCloseTimeout: 6 * time.Hour, HeartbeatTimeout: heartbeat, RetryPolicy: retry,
			})
			f = workflow.ExecuteActivity(actx, CallActivityName, in)
		}
		wr.inFlight++
		var out CallOutput
		err := f.Get(wctx, &out)
		if err == nil && out.Failed != "" {
			err = errors.New(out.Failed)
		}
		wr.inFlight--
		if err == nil {
			wr.done++
			for _, r := range out.Retries {
				if c.OnRetry != nil {
					c.OnRetry(llm.Attempt{N: r.N, Err: errors.New(r.Error), Status: r.Status, Retryable: true, Wait: time.Duration(r.WaitMS) * time.Millisecond})
				}
			}
			for _, n := range out.Notes {
				if c.OnNote != nil {
					c.OnNote(n)
				}
			}
			return out.Reply, calls.Source(out.Source), nil
		}
		if temporal.IsCanceledError(err) || wctx.Err() != nil {
			return kit.Reply{}, calls.Network, context.Canceled
		}
		// The client that follows the run turns the failure into the
		// run's; here the run waits until it is told to try again.
		if wr.failed == nil {
			wr.failed = map[string]bool{}
		}
		wr.failed[c.Key] = true
		seen := wr.retries
		if werr := workflow.Await(wctx, func() bool { return wr.retries > seen }); werr != nil {
			return kit.Reply{}, calls.Network, context.Canceled
		}
		delete(wr.failed, c.Key)
	}
}

// The engine takes a context.Context; workflow code runs on a
// workflow.Context. goContext carries the one in the other: the engine's
// values (a call's key) stay, Err reports the workflow context's
// cancellation, and Done is nil, so that nothing derived from it starts a
// goroutine to watch it.
type wfContext struct {
	context.Context
	w workflow.Context
}

type workflowKey struct{}

func goContext(parent context.Context, w workflow.Context) context.Context {
	return &wfContext{Context: parent, w: w}
}

func (c *wfContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *wfContext) Done() <-chan struct{}       { return nil }
func (c *wfContext) Err() error {
	if c.w.Err() != nil {
		return context.Canceled
	}
	return nil
}
func (c *wfContext) Value(key any) any {
	if key == (workflowKey{}) {
		return c.w
	}
	return c.Context.Value(key)
}

// workflowOf returns the workflow context a context carries.
func workflowOf(ctx context.Context) workflow.Context {
	w, _ := ctx.Value(workflowKey{}).(workflow.Context)
	if w == nil {
		panic("durable: an engine call outside workflow code")
	}
	return w
}

// parallel is kit.Host.Parallel in workflow code: a workflow coroutine per
// branch; the first failure cancels the others and is returned (not the
// cancellations it caused).
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	parent := workflowOf(ctx)
	wctx, cancel := workflow.WithCancel(parent)
	defer cancel()
	errs := make([]error, n)
	finished := 0
	for i := range n {
		workflow.Go(wctx, func(w workflow.Context) {
			defer func() { finished++ }()
			if errs[i] = f(goContext(ctx, w), i); errs[i] != nil {
				cancel()
			}
		})
	}
	// Branches end by themselves once cancelled; the wait must outlive a
	// cancellation of the parent.
	dctx, _ := workflow.NewDisconnectedContext(parent)
	_ = workflow.Await(dctx, func() bool { return finished == n })
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// await is Embedded.Await in workflow code.
func await(ctx context.Context, ready func() bool) error {
	if err := workflow.Await(workflowOf(ctx), ready); err != nil {
		return context.Canceled
	}
	return nil
}
