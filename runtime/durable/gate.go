package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/runtime/llm"
)

// An endpoint's limits (max_concurrency, requests_per_minute,
// tokens_per_minute) must hold for every worker together: ten workers on
// one key may not provoke a 429 that one worker would not. Temporal has
// rate limits per task queue but nothing that bounds concurrency across
// workers, and workers do not know the endpoints of the runs they will
// get. So each endpoint (name, URL and a digest of its key) has a gate: a
// small long-running workflow that admits each attempt of a call, in the
// order asked, as a lease, and takes it back when the attempt is over. A
// lease of a worker that died expires after the attempt's timeout.

// Gate messages.
const (
	updateAcquire = "acquire"
	// updateAcquireMany asks for several leases at once (gateRequest
	// list, answered by an Admission list in the same order).
	updateAcquireMany = "acquire-many"
	signalRelease     = "release"
)

// GateLimits are the limits a gate holds for an endpoint; zero is no limit.
type GateLimits struct {
	MaxConcurrency    int `json:"max_concurrency,omitempty"`
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int `json:"tokens_per_minute,omitempty"`
}

// Set reports whether there is any limit to hold.
func (l GateLimits) Set() bool {
	return l.MaxConcurrency > 0 || l.RequestsPerMinute > 0 || l.TokensPerMinute > 0
}

// gateRequest asks a gate for a lease.
type gateRequest struct {
	Holder string        `json:"holder"`
	Tokens int           `json:"tokens,omitempty"`
	Limits GateLimits    `json:"limits"`
	TTL    time.Duration `json:"ttl"`
	// Ahead says the caller waits by itself for the time the rates give
	// it (Admission.Wait), so the gate may admit it before then (see
	// gateAdmitAhead). Callers of builds before it leave it out and are
	// admitted when they may send.
	Ahead bool `json:"ahead,omitempty"`
}

// Admission is a gate's answer to a request: the caller sends after Wait,
// counted from when it receives the answer. Gates before gateAdmitAhead
// answer nothing, which decodes as no wait.
type Admission struct {
	Wait time.Duration `json:"wait,omitempty"`
	// NoLease says the gate keeps no lease for the request, which the
	// caller need not release: there is no max_concurrency to hold.
	NoLease bool `json:"no_lease,omitempty"`
	// Refused says why the request was not admitted (updateAcquireMany).
	Refused string `json:"refused,omitempty"`
}

// GateState is what a gate carries over when it continues as new: the
// leases out and its rate schedule.
type GateState struct {
	Leases []Lease `json:"leases,omitempty"`
	// Rates is when the next request may go and the tokens admitted within
	// the last llm.RateSpan, so that no window of a minute holds more than
	// the limits, as with a local client (integer time, so that a replay on
	// any machine decides alike).
	Rates llm.Schedule `json:"rates"`
	// RequestsAt and TokensAt are the buckets of the gates that started
	// before the strict window (see gateStrictWindow): the theoretical
	// arrival times of the generic cell rate algorithm. Kept so that such
	// a gate, still running when its workers are upgraded, goes on as it
	// began.
	RequestsAt time.Time `json:"requests_at,omitzero"`
	TokensAt   time.Time `json:"tokens_at,omitzero"`
}

// gateStrictWindow is the change from token buckets (which began full, so
// a burst could pass a provider's sliding window) to llm.Schedule. Gates
// auto-upgrade to the newest workers (see deploy.go), so one that began on
// the buckets keeps them (workflow.GetVersion): its history replays on
// this code.
const gateStrictWindow = "strict-rate-window"

// gateAdmitAhead is the change from admitting a request when it may be
// sent, which took a timer and a workflow task per request (at 3,000
// requests a minute one every 20 ms, more than a gate's turn takes, so a
// worker reached a quarter of the declared rate), to admitting it at once
// with the time it may be sent (at most gateHorizon ahead): the caller
// waits that long itself. The rate schedule is the same; the gate's turns
// no longer pace it. And a request without max_concurrency takes no lease,
// so its caller sends no release: one turn of the gate per call instead
// of two. Such a gate also keeps its idle timer running between requests
// instead of starting it again after each (two events fewer per turn). A
// gate that began before keeps admitting as it began.
const gateAdmitAhead = "admit-ahead"

// gateHorizon is how far ahead a gate schedules a request it admits.
const gateHorizon = time.Minute

// answer is a request's outcome: err nil is granted, else refused.
type answer struct {
	err     error
	wait    time.Duration
	noLease bool
}

// Lease is an attempt admitted and not yet over.
type Lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// gateRollover is how many leases a gate grants before it continues as
// new, keeping its history short.
const gateRollover = 1000

// gateIdle is how long a gate with nothing to do stays; the next call
// starts it again.
const gateIdle = 30 * time.Minute

// errTypeGateRollover rejects requests while a gate rolls over; callers ask
// again.
const errTypeGateRollover = "runner.GateRollover"

type gate struct {
	GateState
	// strict is false for a gate that began on token buckets.
	strict bool
	// ahead is false for a gate that began before gateAdmitAhead.
	ahead    bool
	queue    []gateRequest
	answered map[string]answer // by holder
	// cancelled are holders who gave up before being admitted.
	cancelled map[string]bool
	// version changes with every request, release and cancellation.
	version  int
	granted  int
	draining bool
}

// Gate is the gate workflow of one endpoint.
func (w *Workflows) Gate(ctx workflow.Context, st GateState) error {
	g := &gate{GateState: st, answered: map[string]answer{}, cancelled: map[string]bool{}}
	g.strict = workflow.GetVersion(ctx, gateStrictWindow, workflow.DefaultVersion, 1) == 1
	g.ahead = g.strict && workflow.GetVersion(ctx, gateAdmitAhead, workflow.DefaultVersion, 1) == 1
	err := workflow.SetUpdateHandlerWithOptions(ctx, updateAcquire,
		func(ctx workflow.Context, req gateRequest) (Admission, error) {
			g.queue = append(g.queue, req)
			g.version++
			if err := workflow.Await(ctx, func() bool { _, ok := g.answered[req.Holder]; return ok }); err != nil {
				return Admission{}, err
			}
			a := g.answered[req.Holder]
			delete(g.answered, req.Holder)
			return Admission{Wait: a.wait, NoLease: a.noLease}, a.err
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req gateRequest) error {
			if g.draining {
				return temporal.NewApplicationError("the gate is rolling over; ask again", errTypeGateRollover)
			}
			if req.Holder == "" || req.TTL <= 0 {
				return errors.New("a lease needs a holder and a time to live")
			}
			return nil
		}})
	if err != nil {
		return err
	}
	// Registering a handler makes no command: gates of every version
	// take batches.
	err = workflow.SetUpdateHandlerWithOptions(ctx, updateAcquireMany,
		func(ctx workflow.Context, reqs []gateRequest) ([]Admission, error) {
			g.queue = append(g.queue, reqs...)
			g.version++
			if err := workflow.Await(ctx, func() bool {
				for _, r := range reqs {
					if _, ok := g.answered[r.Holder]; !ok {
						return false
					}
				}
				return true
			}); err != nil {
				return nil, err
			}
			out := make([]Admission, len(reqs))
			for i, r := range reqs {
				a := g.answered[r.Holder]
				delete(g.answered, r.Holder)
				out[i] = Admission{Wait: a.wait, NoLease: a.noLease}
				if a.err != nil {
					out[i].Refused = a.err.Error()
				}
			}
			return out, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, reqs []gateRequest) error {
			if g.draining {
				return temporal.NewApplicationError("the gate is rolling over; ask again", errTypeGateRollover)
			}
			for _, req := range reqs {
				if req.Holder == "" || req.TTL <= 0 {
					return errors.New("a lease needs a holder and a time to live")
				}
			}
			return nil
		}})
	if err != nil {
		return err
	}
	releases := workflow.GetSignalChannel(ctx, signalRelease)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var holder string
			if !releases.Receive(ctx, &holder) {
				return
			}
			g.release(holder)
		}
	})

	var timer workflow.Future
	var deadline time.Time
	var cancelTimer workflow.CancelFunc
	// idleTimer says the timer is the idle one, started at version
	// idleSince; an admit-ahead gate keeps it while it goes on being idle
	// between requests instead of starting it again after each.
	var idleTimer bool
	var idleSince int
	for {
		now := workflow.Now(ctx)
		g.expire(now)
		wake := g.serve(now)
		if g.draining && len(g.queue) == 0 && workflow.AllHandlersFinished(ctx) {
			for {
				var holder string
				if !releases.ReceiveAsync(&holder) {
					break
				}
				g.release(holder)
			}
			return workflow.NewContinueAsNewError(ctx, GateWorkflowName, g.GateState)
		}
		if !g.draining && (g.granted >= gateRollover || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			g.draining = true
			continue
		}
		idle := len(g.queue) == 0 && len(g.Leases) == 0 && !g.draining
		if idle {
			if g.ahead && idleTimer && timer != nil {
				wake = deadline // the idle timer runs on
			} else {
				wake = now.Add(gateIdle)
			}
		}
		if !wake.Equal(deadline) {
			if cancelTimer != nil {
				cancelTimer()
			}
			timer, deadline = nil, wake
			if !wake.IsZero() {
				var tctx workflow.Context
				tctx, cancelTimer = workflow.WithCancel(ctx)
				timer = workflow.NewTimer(tctx, max(wake.Sub(now), time.Millisecond))
			}
			idleTimer, idleSince = idle, g.version
		}
		v := g.version
		if err := workflow.Await(ctx, func() bool {
			return g.version != v || timer != nil && timer.IsReady() || g.draining && len(g.queue) == 0 && workflow.AllHandlersFinished(ctx)
		}); err != nil {
			return err
		}
		if timer != nil && timer.IsReady() {
			timer, deadline = nil, time.Time{}
			if idle && g.version == v || g.ahead && idleTimer && g.version == idleSince {
				return nil // nothing to do for a while: the next call starts the gate again
			}
		}
	}
}

// serve admits queued requests in order while the limits allow, and
// returns when the head of the queue may be admitted next (zero: when
// something changes).
func (g *gate) serve(now time.Time) (wake time.Time) {
	for len(g.queue) > 0 {
		req := g.queue[0]
		if g.cancelled[req.Holder] {
			delete(g.cancelled, req.Holder)
			g.answered[req.Holder] = answer{err: errors.New("the caller gave up")}
			g.queue = g.queue[1:]
			continue
		}
		at, ok := g.admissible(now, req)
		if !ok {
			if len(g.Leases) > 0 && req.Limits.MaxConcurrency > 0 && len(g.Leases) >= req.Limits.MaxConcurrency {
				// Waiting for a lease: one may expire.
				first := g.Leases[0].Until
				for _, l := range g.Leases {
					if l.Until.Before(first) {
						first = l.Until
					}
				}
				if at.IsZero() || first.Before(at) {
					at = first
				}
			}
			return at
		}
		g.grant(now, at, req)
		g.queue = g.queue[1:]
	}
	return time.Time{}
}

// admissible reports whether req may be admitted now, and when it may be
// sent (now, or up to gateHorizon later for a caller that waits itself);
// if not, when it may be admitted as far as the rates go (zero when only
// a free slot will do).
func (g *gate) admissible(now time.Time, req gateRequest) (time.Time, bool) {
	l := req.Limits
	send := now
	if !g.strict {
		if at := g.bucketWait(now, req); !at.IsZero() {
			return at, false
		}
	} else if at, _ := g.Rates.Earliest(now, l.RequestsPerMinute, l.TokensPerMinute, req.Tokens); at.After(now) {
		if !g.ahead || !req.Ahead || at.Sub(now) > gateHorizon {
			return at.Add(-g.horizon(req)), false
		}
		send = at
	}
	if n := l.MaxConcurrency; n > 0 && len(g.Leases) >= n {
		return time.Time{}, false
	}
	return send, true
}

// horizon is how long before its sending time req may be admitted.
func (g *gate) horizon(req gateRequest) time.Duration {
	if g.ahead && req.Ahead {
		return gateHorizon
	}
	return 0
}

// grant admits req, to be sent at send (now or later).
func (g *gate) grant(now, send time.Time, req gateRequest) {
	if g.strict {
		g.Rates.Take(send, req.Limits.RequestsPerMinute, req.Limits.TokensPerMinute, req.Tokens)
	} else {
		g.bucketTake(now, req)
	}
	a := answer{wait: send.Sub(now)}
	if g.ahead && req.Ahead && req.Limits.MaxConcurrency <= 0 {
		a.noLease = true
	} else {
		g.Leases = append(g.Leases, Lease{Holder: req.Holder, Until: send.Add(req.TTL)})
	}
	g.answered[req.Holder] = a
	g.granted++
}

// release ends a lease, or cancels a request not yet admitted.
func (g *gate) release(holder string) {
	g.version++
	for i, l := range g.Leases {
		if l.Holder == holder {
			g.Leases = append(g.Leases[:i], g.Leases[i+1:]...)
			return
		}
	}
	for _, r := range g.queue {
		if r.Holder == holder {
			g.cancelled[holder] = true
			return
		}
	}
}

// expire drops the leases of attempts that should long be over: their
// worker died.
func (g *gate) expire(now time.Time) {
	kept := g.Leases[:0]
	for _, l := range g.Leases {
		if l.Until.After(now) {
			kept = append(kept, l)
		}
	}
	g.Leases = kept
}

// Gates admits a worker's calls through the gates of their endpoints.
type Gates struct {
	Client    client.Client
	TaskQueue string
}

// For returns the gate of an endpoint (id names it and its key), whose
// attempts last at most timeout.
func (g *Gates) For(id string, limits GateLimits, timeout time.Duration) llm.Gate {
	return &gateClient{gates: g, id: "runner-gate-" + id, limits: limits, ttl: timeout + 5*time.Second}
}

type gateClient struct {
	gates  *Gates
	id     string
	limits GateLimits
	ttl    time.Duration

	mu sync.Mutex
	// asked are the requests waiting to go to the gate; sending says
	// a batch is on its way, after which they go together.
	asked   []*asking
	sending bool
}

// asking is a request of Admit waiting for its answer.
type asking struct {
	req  gateRequest
	done chan asked
	// gone says the caller gave up: an answer that comes is released.
	gone bool
}

type asked struct {
	adm Admission
	err error
}

// Admit implements llm.Gate. Without max_concurrency, the requests of
// this worker's calls asked while one update is on its way to the gate go
// together in the next (updateAcquireMany): one update and one turn of the
// gate for a round of calls rather than one each. With it, each goes
// alone: a batch is answered once all its requests are admitted, and
// those admitted first would hold the slots the others wait for.
func (gc *gateClient) Admit(ctx context.Context, tokens int) (func(), error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	a := &asking{req: gateRequest{Holder: hex.EncodeToString(b[:]), Tokens: tokens, Limits: gc.limits, TTL: gc.ttl, Ahead: true}, done: make(chan asked, 1)}
	var r asked
	if gc.limits.MaxConcurrency > 0 {
		adms, err := gc.acquire(ctx, []gateRequest{a.req})
		if err != nil {
			return nil, err
		}
		r.adm = adms[0]
	} else {
		gc.mu.Lock()
		gc.asked = append(gc.asked, a)
		if !gc.sending {
			gc.sending = true
			go gc.send()
		}
		gc.mu.Unlock()
		select {
		case r = <-a.done:
		case <-ctx.Done():
			gc.mu.Lock()
			a.gone = true
			gc.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	leave := func() { gc.signal(a.req.Holder) }
	if r.adm.NoLease {
		leave = func() {}
	}
	return gc.wait(ctx, r.adm, leave)
}

// wait waits for an admitted request's turn (Admission.Wait).
func (gc *gateClient) wait(ctx context.Context, adm Admission, leave func()) (func(), error) {
	if adm.Wait > 0 {
		t := time.NewTimer(adm.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			leave()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return leave, nil
}

// send takes the requests asked to the gate, together, until none is
// left.
func (gc *gateClient) send() {
	for {
		gc.mu.Lock()
		var batch []*asking
		for _, a := range gc.asked {
			if !a.gone {
				batch = append(batch, a)
			}
		}
		gc.asked = nil
		if len(batch) == 0 {
			gc.sending = false
			gc.mu.Unlock()
			return
		}
		gc.mu.Unlock()
		reqs := make([]gateRequest, len(batch))
		for i, a := range batch {
			reqs[i] = a.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), gc.ttl+time.Minute)
		adms, err := gc.acquire(ctx, reqs)
		cancel()
		for i, a := range batch {
			r := asked{err: err}
			if err == nil {
				r.adm = adms[i]
				if r.adm.Refused != "" {
					r.err = errors.New(r.adm.Refused)
				}
			}
			gc.mu.Lock()
			gone := a.gone
			gc.mu.Unlock()
			if gone && r.err == nil && !r.adm.NoLease {
				gc.signal(a.req.Holder)
			}
			a.done <- r
		}
	}
}

// acquire asks the gate to admit reqs, starting it if it is not running.
// Given up (ctx), a request still queued at the gate is dropped there.
func (gc *gateClient) acquire(ctx context.Context, reqs []gateRequest) ([]Admission, error) {
	c := gc.gates.Client
	many := len(reqs) > 1
	var last error
	for attempt := 0; attempt < 30; attempt++ {
		opts := client.UpdateWorkflowOptions{WorkflowID: gc.id, UpdateName: updateAcquire, Args: []any{reqs[0]}, WaitForStage: client.WorkflowUpdateStageCompleted}
		if many {
			opts.UpdateName, opts.Args = updateAcquireMany, []any{reqs}
		}
		h, err := c.UpdateWorkflow(ctx, opts)
		adms := make([]Admission, len(reqs))
		if err == nil && many {
			err = h.Get(ctx, &adms)
		} else if err == nil {
			err = h.Get(ctx, &adms[0])
		}
		if err == nil && len(adms) == len(reqs) {
			return adms, nil
		}
		if err == nil {
			err = fmt.Errorf("the gate answered %d requests of %d", len(adms), len(reqs))
		}
		if ctx.Err() != nil {
			for _, r := range reqs {
				gc.signal(r.Holder)
			}
			return nil, ctx.Err()
		}
		last = err
		var nf *serviceerror.NotFound
		var app *temporal.ApplicationError
		switch {
		case errors.As(err, &nf) || isClosed(err):
			if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: gc.id, TaskQueue: gc.gates.TaskQueue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			}, GateWorkflowName, GateState{}); err != nil {
				last = err
			}
			continue
		case many && !(errors.As(err, &app) && app.Type() == errTypeGateRollover):
			// A gate run by a build before updateAcquireMany: one by one.
			out := make([]Admission, len(reqs))
			for i, r := range reqs {
				one, err := gc.acquire(ctx, []gateRequest{r})
				if err != nil {
					return nil, err
				}
				out[i] = one[0]
			}
			return out, nil
		}
		// Rolling over, or a passing failure: ask again shortly.
		t := time.NewTimer(time.Duration(50*(attempt+1)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			for _, r := range reqs {
				gc.signal(r.Holder)
			}
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return nil, fmt.Errorf("gate %s: %w", gc.id, last)
}

// signal releases a lease; a gate that is gone has nothing to release.
func (gc *gateClient) signal(holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = gc.gates.Client.SignalWorkflow(ctx, gc.id, "", signalRelease, holder)
}

// isClosed reports whether err says the gate's run has ended.
func isClosed(err error) bool {
	var done *serviceerror.WorkflowNotReady
	if errors.As(err, &done) {
		return true
	}
	var fp *serviceerror.FailedPrecondition
	return errors.As(err, &fp)
}

// bucketWait is when req may go by the token buckets of a gate that began
// before the strict window (zero: now).
func (g *gate) bucketWait(now time.Time, req gateRequest) time.Time {
	var at time.Time
	if rpm := req.Limits.RequestsPerMinute; rpm > 0 {
		period := time.Minute / time.Duration(rpm)
		tolerance := period * time.Duration(max(1, rpm/60)-1)
		tat := later(g.RequestsAt, now)
		if wait := tat.Add(-tolerance); wait.After(now) {
			at = wait
		}
	}
	if tpm := req.Limits.TokensPerMinute; tpm > 0 {
		incr := tokenTime(min(max(req.Tokens, 1), tpm), tpm)
		tat := later(g.TokensAt, now).Add(incr)
		if wait := tat.Add(-time.Minute); wait.After(now) && wait.After(at) {
			at = wait
		}
	}
	return at
}

// bucketTake fills the token buckets with an admitted request.
func (g *gate) bucketTake(now time.Time, req gateRequest) {
	if rpm := req.Limits.RequestsPerMinute; rpm > 0 {
		g.RequestsAt = later(g.RequestsAt, now).Add(time.Minute / time.Duration(rpm))
	}
	if tpm := req.Limits.TokensPerMinute; tpm > 0 {
		g.TokensAt = later(g.TokensAt, now).Add(tokenTime(min(max(req.Tokens, 1), tpm), tpm))
	}
}

// tokenTime is how long n tokens take to come back at tpm per minute.
func tokenTime(n, tpm int) time.Duration {
	return time.Duration(int64(time.Minute) / int64(tpm) * int64(n))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
