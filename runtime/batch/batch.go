// Package batch sends the model calls that the runs of a sweep make at the
// same time as one provider batch (`runner run --batch`): OpenAI's Batch
// API, Anthropic's Message Batches, Gemini's batch mode, at half the list
// price, answered within
// a day.
//
// It sits under the endpoint client, as its HTTP transport: a run's call is
// encoded, keyed, journaled, cached and budgeted as any other, and its
// reply decoded as any other; only the exchange differs. The runs of a
// sweep go at once, and each blocks on its call; the Collector gathers the
// calls that arrive within a short quiet window (a wave), submits them as
// one batch, writes the batch's id to batches.json in the sweep directory
// before it waits, polls the provider, and hands each caller its reply
// marked with the batch's id (llm.BatchHeader), so that it is priced as
// batched. A request the batch failed, expired or cancelled is sent on its
// own. A sweep resumed after a kill finds its requests' batches in
// batches.json and polls them instead of submitting them again: no request
// is paid twice.
package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync"
	"time"
	"weak"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/rundir"
)

// FileName is the file in a sweep directory that records its batches.
const FileName = "batches.json"

// Defaults of a Collector.
const (
	// DefaultWindow is how long a wave stays open after its latest call:
	// the runs of a sweep reach their next call within it.
	DefaultWindow = 2 * time.Second
	// DefaultPoll is the wait between two polls of a batch.
	DefaultPoll = 30 * time.Second
	// MaxWait bounds how long a call waits for its batch: providers
	// answer within 24 hours, or expire the batch.
	MaxWait = 48 * time.Hour
	// submitTimeout bounds a submission (an upload and a create), tried
	// submitAttempts times when it fails for a while.
	submitTimeout  = 5 * time.Minute
	submitAttempts = 3
	// maxPollWait bounds the wait between polls of a provider that has
	// been failing.
	maxPollWait = 5 * time.Minute
	// maxRequests closes a wave early: both providers take tens of
	// thousands of requests per batch, and a file of this many stays well
	// under their size limits.
	maxRequests = 10000
)

// Collector gathers the calls of a sweep's runs into batches. It is safe
// for concurrent use; Close stops its polling.
type Collector struct {
	// Window is the quiet time after a wave's latest call before the wave
	// is submitted (0: DefaultWindow); Poll the wait between polls (0:
	// DefaultPoll).
	Window, Poll time.Duration
	// OnProgress, when set, is told how the batches are doing whenever
	// that changes (one call at a time).
	OnProgress func(Progress)

	path   string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	rec     record
	known   map[string]string // request id -> batch id, from rec
	queues  map[waveKey]*queue
	pending map[string]*entry // request id -> its wait for a reply
	answers map[string]llm.BatchResult
	// billedTo is the call each request was first asked by: the one its
	// price is charged to (a retry of the same call is that call again).
	// Weak, so that a sweep's finished calls are not kept for it.
	billedTo map[string]weak.Pointer[calls.Call]
	polling  map[string]bool
	progress Progress
	closed   bool

	saveMu   sync.Mutex
	tellMu   sync.Mutex
	savedErr error
}

// Progress is how a sweep's batches are doing.
type Progress struct {
	// Batches were submitted (by this sweep, this attempt or an earlier
	// one), Ended of them have ended.
	Batches, Ended int
	// Requests were submitted in them; Done were answered and Failed were
	// not (those are sent on their own: Fallback counts them).
	Requests, Done, Failed int
	// Queued wait for their wave to be submitted.
	Queued   int
	Fallback int
	// ExpectedCost is what the requests submitted in this attempt may cost
	// at batch prices, at most (their replies at their token limit).
	ExpectedCost float64
}

// String is the progress as one line.
func (p Progress) String() string {
	s := fmt.Sprintf("batches: %d submitted, %d ended; requests: %d, %d done, %d failed", p.Batches, p.Ended, p.Requests, p.Done, p.Failed)
	if p.Queued > 0 {
		s += fmt.Sprintf(", %d queued", p.Queued)
	}
	if p.Fallback > 0 {
		s += fmt.Sprintf(", %d sent on their own", p.Fallback)
	}
	if p.ExpectedCost > 0 {
		s += fmt.Sprintf("; expected cost at most $%.4f", p.ExpectedCost)
	}
	return s
}

// record is batches.json.
type record struct {
	Batches []Entry `json:"batches"`
}

// Entry is one batch as batches.json keeps it.
type Entry struct {
	ID string `json:"id"`
	// Endpoint is where the requests were addressed (no key).
	Endpoint  string    `json:"endpoint"`
	Submitted time.Time `json:"submitted"`
	// Requests are the ids of its requests.
	Requests []string `json:"requests"`
	Status   string   `json:"status,omitempty"`
	Done     int      `json:"done,omitempty"`
	Failed   int      `json:"failed,omitempty"`
	Ended    bool     `json:"ended,omitempty"`
}

// entry is the wait of one request (of every caller of the same request)
// for its reply.
type entry struct {
	done  chan struct{}
	res   llm.BatchResult
	batch string
}

// waveKey names a wave: an endpoint's client and the URL its requests
// go to (one per model for Gemini, whose batches are a model's).
type waveKey struct {
	t   *transport
	url string
}

// queue is the wave being gathered for one endpoint.
type queue struct {
	api   llm.BatchAPI
	url   string
	reqs  []llm.BatchRequest
	cost  float64
	timer *time.Timer
}

// Open returns a collector that records its batches in dir/batches.json
// ("" keeps no record), reading the batches an earlier attempt recorded
// there.
func Open(dir string) (*Collector, error) {
	c := &Collector{
		known: map[string]string{}, queues: map[waveKey]*queue{}, pending: map[string]*entry{},
		answers: map[string]llm.BatchResult{}, polling: map[string]bool{}, billedTo: map[string]weak.Pointer[calls.Call]{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if dir == "" {
		return c, nil
	}
	c.path = dir + string(os.PathSeparator) + FileName
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("batch: %w", err)
	default:
		if err := json.Unmarshal(data, &c.rec); err != nil {
			return nil, fmt.Errorf("batch: %s: %w", c.path, err)
		}
	}
	for _, b := range c.rec.Batches {
		for _, id := range b.Requests {
			c.known[id] = b.ID
		}
		c.progress.Batches++
		c.progress.Requests += len(b.Requests)
		if b.Ended {
			c.progress.Ended++
			c.progress.Done += b.Done
			c.progress.Failed += b.Failed
		}
	}
	return c, nil
}

// Close stops the collector's polling and waits for its goroutines. Calls
// still waiting fail with their own contexts.
func (c *Collector) Close() error {
	c.mu.Lock()
	c.closed = true
	for t, q := range c.queues {
		if q.timer != nil {
			q.timer.Stop()
		}
		delete(c.queues, t)
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	return c.savedErr
}

// Batches are the batches recorded so far.
func (c *Collector) Batches() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Entry(nil), c.rec.Batches...)
}

// Progress is how the batches are doing now.
func (c *Collector) Progress() Progress {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.progress
}

// Wrap is llm.Endpoint.Batch for an endpoint of kind b: its requests go
// through the collector, and a request a batch does not answer is sent on
// its own through next with the endpoint's timeout (0: llm.DefaultTimeout).
func (c *Collector) Wrap(b llm.Batcher, timeout time.Duration) func(next http.RoundTripper, direct *http.Client) http.RoundTripper {
	if timeout <= 0 {
		timeout = llm.DefaultTimeout
	}
	return func(next http.RoundTripper, direct *http.Client) http.RoundTripper {
		return &transport{c: c, kind: b, next: next, direct: direct, timeout: timeout}
	}
}

// transport is one endpoint client's way through the collector.
type transport struct {
	c       *Collector
	kind    llm.Batcher
	next    http.RoundTripper
	direct  *http.Client
	timeout time.Duration
}

// RequestID is a request's id in a batch: the call's key, sample and scope,
// where the request goes and what it says, as 32 hex digits (both providers
// take ids of up to 64 letters, digits, _ and -). The same call of the same
// run asks the same after a resume, and so finds its batch again.
func RequestID(c *calls.Call, url string, body []byte) string {
	h := sha256.New()
	if c != nil {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00", c.Key, c.Sample, c.Resample, c.Scope)
	}
	fmt.Fprintf(h, "%s\x00", url)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(hr *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(hr.Body)
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	ctx := hr.Context()
	call := calls.CallFrom(ctx)
	u := *hr.URL
	u.RawQuery, u.User = "", nil
	id := RequestID(call, u.String(), body)
	api, err := t.kind.BatchAPI(hr, t.direct)
	if err != nil {
		return nil, err
	}
	cost := 0.0
	if call != nil {
		cost = calls.Estimate(call).Cost * kit.BatchPrice
	}
	res, batchID, shared, err := t.c.await(ctx, t, api, call, u.String(), id, body, cost)
	if err != nil {
		return nil, err
	}
	if res.Err == "" {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set(llm.BatchHeader, batchID)
		if shared {
			h.Set(llm.BatchSharedHeader, "1")
		}
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(bytes.NewReader(res.Body)), ContentLength: int64(len(res.Body)), Request: hr,
		}, nil
	}
	return t.alone(hr, body)
}

// alone sends a request on its own, with the endpoint's own timeout.
func (t *transport) alone(hr *http.Request, body []byte) (*http.Response, error) {
	t.c.mu.Lock()
	t.c.progress.Fallback++
	p := t.c.progress
	t.c.mu.Unlock()
	t.c.tell(p)
	ctx, cancel := context.WithTimeout(hr.Context(), t.timeout)
	req := hr.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody ends a request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// await waits for request id's reply: one an earlier batch gave, that of a
// batch recorded before (polled again), or that of the wave it joins. A
// result with Err set was not answered by its batch. shared says another
// call (of another run) asked the same first: the batch holds the request
// once, billed to that call; a call asking again (a retry) is not
// another.
func (c *Collector) await(ctx context.Context, t *transport, api llm.BatchAPI, call *calls.Call, url, id string, body []byte, cost float64) (res llm.BatchResult, batch string, shared bool, err error) {
	c.mu.Lock()
	caller := weak.Make(call)
	first, asked := c.billedTo[id]
	if !asked {
		c.billedTo[id] = caller
	}
	shared = asked && first != caller
	if res, ok := c.answers[id]; ok {
		batchID := c.known[id]
		c.mu.Unlock()
		return res, batchID, shared, nil
	}
	if c.closed {
		c.mu.Unlock()
		return llm.BatchResult{}, "", false, errors.New("batch: the sweep's batches are closed")
	}
	e, waiting := c.pending[id]
	if !waiting {
		e = &entry{done: make(chan struct{})}
		c.pending[id] = e
		if b, ok := c.known[id]; ok {
			// Submitted before (an earlier attempt of the sweep): poll it.
			e.batch = b
			if !c.polling[b] {
				c.polling[b] = true
				c.wg.Add(1)
				go c.poll(api, b)
			}
		} else {
			k := waveKey{t, url}
			q := c.queues[k]
			if q == nil {
				q = &queue{api: api, url: url}
				c.queues[k] = q
			}
			q.reqs = append(q.reqs, llm.BatchRequest{ID: id, Body: body})
			q.cost += cost
			c.progress.Queued++
			c.schedule(k, q)
		}
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.res, e.batch, shared, nil
	case <-ctx.Done():
		return llm.BatchResult{}, "", false, ctx.Err()
	}
}

// schedule (re)starts the wave's quiet window, or submits it at once when
// it is full. c.mu is held.
func (c *Collector) schedule(t waveKey, q *queue) {
	if len(q.reqs) >= maxRequests {
		if q.timer != nil {
			q.timer.Stop()
		}
		delete(c.queues, t)
		c.wg.Add(1)
		go c.submit(q)
		return
	}
	window := c.Window
	if window <= 0 {
		window = DefaultWindow
	}
	if q.timer != nil {
		q.timer.Reset(window)
		return
	}
	q.timer = time.AfterFunc(window, func() {
		c.mu.Lock()
		if c.closed || c.queues[t] != q {
			c.mu.Unlock()
			return
		}
		delete(c.queues, t)
		c.wg.Add(1)
		c.mu.Unlock()
		go c.submit(q)
	})
}

// submit sends a wave as one batch and records its id before polling it.
// A wave the provider does not take is sent request by request.
func (c *Collector) submit(q *queue) {
	defer c.wg.Done()
	// A submission goes to its end even when the sweep is stopped (^C)
	// meanwhile, so that a batch the provider took is recorded: Close
	// waits for it.
	var (
		id  string
		err error
	)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), submitTimeout)
		id, err = q.api.Submit(ctx, q.reqs)
		cancel()
		if err == nil || attempt == submitAttempts || !transient(err) || c.ctx.Err() != nil {
			break
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(c.every() * time.Duration(attempt)):
		}
	}
	c.mu.Lock()
	c.progress.Queued -= len(q.reqs)
	if err != nil {
		for _, r := range q.reqs {
			c.resolve(r.ID, llm.BatchResult{Err: "the batch was not accepted: " + err.Error()}, "")
		}
		p := c.progress
		c.mu.Unlock()
		c.tell(p)
		return
	}
	ids := make([]string, len(q.reqs))
	for i, r := range q.reqs {
		ids[i] = r.ID
		c.known[r.ID] = id
		if e := c.pending[r.ID]; e != nil {
			e.batch = id
		}
	}
	c.rec.Batches = append(c.rec.Batches, Entry{ID: id, Endpoint: q.url, Submitted: time.Now().UTC(), Requests: ids})
	c.progress.Batches++
	c.progress.Requests += len(ids)
	c.progress.ExpectedCost += q.cost
	c.polling[id] = true
	c.mu.Unlock()
	// The id is on disk before the first poll: a runner killed from now on
	// finds the batch again.
	c.save()
	c.tell(c.Progress())
	c.wg.Add(1)
	c.poll(q.api, id)
}

// poll follows a batch until it ends, then hands its requests their
// results.
func (c *Collector) poll(api llm.BatchAPI, id string) {
	defer c.wg.Done()
	every := c.every()
	failures := 0
	for {
		st, err := api.Poll(c.ctx, id)
		if err == nil {
			c.update(id, st)
			if st.Ended {
				res, rerr := api.Results(c.ctx, id)
				if rerr == nil {
					c.finish(id, st, res)
					return
				}
				err = rerr
			}
		}
		if c.ctx.Err() != nil {
			return
		}
		wait := every
		switch {
		case err == nil:
			failures = 0
		case transient(err):
			// The provider or the network is down for a while: the batch
			// goes on (and is paid) all the same, so it is polled again,
			// less often, never given up.
			failures++
			wait = min(every*time.Duration(1+failures), maxPollWait)
		default:
			// The provider refuses to tell (the batch is unknown to it,
			// the key was revoked): its requests are sent on their own
			// rather than left waiting for a day.
			failures++
			if failures >= 5 {
				c.finish(id, llm.BatchState{Status: "unreachable: " + err.Error(), Ended: true}, nil)
				return
			}
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// every is the wait between polls.
func (c *Collector) every() time.Duration {
	if c.Poll <= 0 {
		return DefaultPoll
	}
	return c.Poll
}

// transient reports whether a batch API's failure may pass: no answer, a
// rate limit, a timeout or a server error.
func transient(err error) bool {
	s := llm.StatusOf(err)
	return s == 0 || s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s >= 500
}

// update notes a poll's news of batch id.
func (c *Collector) update(id string, st llm.BatchState) {
	c.mu.Lock()
	changed := false
	for i := range c.rec.Batches {
		b := &c.rec.Batches[i]
		if b.ID == id && !b.Ended && (b.Status != st.Status || b.Done != st.Done || b.Failed != st.Failed) {
			b.Status, b.Done, b.Failed = st.Status, st.Done, st.Failed
			changed = true
		}
	}
	p := c.progress
	c.mu.Unlock()
	if changed {
		c.tell(p)
	}
}

// finish hands an ended batch's results to the requests waiting for them
// (and keeps them for those that come later); a request without a result
// is sent on its own.
func (c *Collector) finish(id string, st llm.BatchState, res map[string]llm.BatchResult) {
	c.mu.Lock()
	var reqs []string
	for i := range c.rec.Batches {
		b := &c.rec.Batches[i]
		if b.ID != id {
			continue
		}
		reqs = b.Requests
		if !b.Ended {
			done, failed := 0, 0
			for _, r := range reqs {
				if x, ok := res[r]; ok && x.Err == "" {
					done++
				} else {
					failed++
				}
			}
			b.Status, b.Done, b.Failed, b.Ended = st.Status, done, failed, true
			c.progress.Ended++
			c.progress.Done += done
			c.progress.Failed += failed
		}
	}
	for _, r := range reqs {
		x, ok := res[r]
		if !ok {
			x = llm.BatchResult{Err: fmt.Sprintf("batch %s ended (%s) without answering it", id, st.Status)}
		}
		c.resolve(r, x, id)
	}
	delete(c.polling, id)
	p := c.progress
	c.mu.Unlock()
	c.save()
	c.tell(p)
}

// resolve gives request id its result. c.mu is held.
func (c *Collector) resolve(id string, res llm.BatchResult, batchID string) {
	c.answers[id] = res
	if e := c.pending[id]; e != nil {
		e.res, e.batch = res, batchID
		delete(c.pending, id)
		close(e.done)
	}
}

// save writes batches.json whole; the first error is kept for Close.
func (c *Collector) save() {
	if c.path == "" {
		return
	}
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	data, err := json.MarshalIndent(c.rec, "", "  ")
	c.mu.Unlock()
	if err == nil {
		err = rundir.WriteFile(c.path, append(data, '\n'))
	}
	if err != nil && c.savedErr == nil {
		c.savedErr = fmt.Errorf("batch: %w", err)
	}
}

// tell passes progress on, one call at a time.
func (c *Collector) tell(p Progress) {
	if c.OnProgress == nil {
		return
	}
	c.tellMu.Lock()
	defer c.tellMu.Unlock()
	c.OnProgress(p)
}
