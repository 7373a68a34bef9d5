// Package connect holds a run's connections to its endpoints: the clients
// (one per endpoint, each key and environment variable checked when the run
// connects), the base URLs used, the secrets the run must never write, and
// the pool of clients the runs of a sweep share (limits, calls in flight and
// replies on their way into the response cache).
package connect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
)

// Pool holds the endpoint clients of one or more runs. Runs that share
// a pool (the runs of a sweep) share each endpoint's concurrency and rate
// limits, so the limits hold for the sweep as a whole, and identical cached
// requests in flight at the same time are sent once.
type Pool struct {
	mu      sync.Mutex
	clients map[string]*llm.Client
	flights calls.Flights
	sent    atomic.Int64
	// cacheWrites are the replies on their way into the response cache.
	cacheWrites WriteBehind
}

// WriteBehind stores replies in the response cache off the calls' way: a
// reply goes on to the run at once while a goroutine writes its entry (a
// folder, a file and a rename, milliseconds on a busy disk, on the path
// from one wave of a debate to the next). Until the entry is on disk the
// pool serves it from memory, so an identical call of any run of the pool
// that comes after the reply finds it, as it found the entry written before
// its flight ended. A run waits for its writes before Execute returns.
type WriteBehind struct {
	mu      sync.Mutex
	pending map[string]pendingWrite
	seq     uint64
}

// pendingWrite is a reply on its way into the cache; seq tells a later
// write of the same key from it.
type pendingWrite struct {
	rep kit.Reply
	seq uint64
}

// Put stores rep under key in cache, in the background; run counts the
// write among the run's own, which the run waits for (the pool is shared
// by the runs of a sweep, each waiting for its own writes only).
func (w *WriteBehind) Put(cache calls.Cache, key string, rep kit.Reply, run *sync.WaitGroup) {
	w.mu.Lock()
	if w.pending == nil {
		w.pending = map[string]pendingWrite{}
	}
	w.seq++
	seq := w.seq
	w.pending[key] = pendingWrite{rep, seq}
	w.mu.Unlock()
	run.Add(1)
	go func() {
		defer run.Done()
		cache.Put(key, rep)
		w.mu.Lock()
		if w.pending[key].seq == seq {
			// Not put again meanwhile: that write still has it to serve.
			delete(w.pending, key)
		}
		w.mu.Unlock()
	}()
}

// Get returns a reply not yet written.
func (w *WriteBehind) Get(key string) (kit.Reply, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	return p.rep, ok
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{clients: map[string]*llm.Client{}}
}

// Sent is the number of model calls that went to an endpoint through the
// pool (not served by a cache, a replay or another run's identical call).
func (p *Pool) Sent() int64 { return p.sent.Load() }

// Client returns the pool's client for ep, creating it on first use. Two
// runs get the same client when they name the same endpoint at the same URL
// with the same kind, key and headers; secrets enter the identity only as a
// digest.
// Clients of another variant are others: the clients of a sweep's batches
// (their variant names the sweep's collector) are the sweep's own, not
// those of another sweep sharing the pool.
func (p *Pool) Client(ep llm.Endpoint, variant string) *llm.Client {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", variant)
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", ep, ep.KeyHeader, ep.APIKey)
	for _, k := range slices.Sorted(maps.Keys(ep.Settings)) {
		fmt.Fprintf(h, "%s=%s\x00", k, ep.Settings[k])
	}
	names := make([]string, 0, len(ep.Headers))
	for k := range ep.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", k, ep.Headers[k])
	}
	id := fmt.Sprintf("%s\x00%s\x00%s", ep.Name, ep.BaseURL, hex.EncodeToString(h.Sum(nil)[:8]))
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[id]; ok {
		return c
	}
	c := llm.New(ep)
	p.clients[id] = c
	return c
}

// Flights are the pool's calls in flight, which identical calls of its
// runs wait for instead of sending again.
func (p *Pool) Flights() *calls.Flights { return &p.flights }

// Writes are the pool's replies on their way into the response cache.
func (p *Pool) Writes() *WriteBehind { return &p.cacheWrites }

// Counter counts the calls sent through the pool (see Sent).
func (p *Pool) Counter() *atomic.Int64 { return &p.sent }
