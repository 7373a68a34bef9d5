package calls

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

var model = &spec.ModelPlan{Name: "default", Model: "m", Endpoint: &spec.EndpointPlan{Name: "default", BaseURL: "http://127.0.0.1:1/v1"}}

func call(key string) *Call {
	return &Call{Key: key, Model: model, Request: llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "hi " + key}}}}
}

// answer is a stage that answers every call with its key, counting calls.
type answer struct{ n atomic.Int32 }

func (a *answer) Complete(_ context.Context, c *Call) (kit.Reply, Source, error) {
	a.n.Add(1)
	return kit.Reply{Content: "reply to " + c.Key}, Network, nil
}

func TestRecorded(t *testing.T) {
	next := &answer{}
	rec := map[string]kit.Reply{"a/1": {Content: "recorded"}}
	s := Recorded(rec, FromJournal, next)
	rep, src, err := s.Complete(context.Background(), call("a/1"))
	if err != nil || rep.Content != "recorded" || src != FromJournal || !rep.Replayed {
		t.Errorf("recorded call: %+v %q %v", rep, src, err)
	}
	rep, src, err = s.Complete(context.Background(), call("a/2"))
	if err != nil || rep.Content != "reply to a/2" || src != Network || next.n.Load() != 1 {
		t.Errorf("unrecorded call: %+v %q %v (next called %d times)", rep, src, err, next.n.Load())
	}
	// Without a next stage a missing reply is an error naming the call.
	_, _, err = Recorded(rec, FromReplay, nil).Complete(context.Background(), call("a/3"))
	var me *MissingError
	if !errors.As(err, &me) || me.Key != "a/3" {
		t.Errorf("missing reply: %v", err)
	}
}

func TestBefore(t *testing.T) {
	next := &answer{}
	var seen []string
	s := Before(func(c *Call) error {
		seen = append(seen, c.Key)
		if c.Key == "stop" {
			return errors.New("no room in the journal")
		}
		return nil
	}, next)
	if _, _, err := s.Complete(context.Background(), call("go")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Complete(context.Background(), call("stop")); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("err = %v", err)
	}
	if strings.Join(seen, ",") != "go,stop" || next.n.Load() != 1 {
		t.Errorf("seen %v, next called %d times", seen, next.n.Load())
	}
}

type memCache struct {
	mu sync.Mutex
	m  map[string]kit.Reply
}

func (c *memCache) Get(k string) (kit.Reply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r, ok
}

func (c *memCache) Put(k string, r kit.Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = r
}

func TestCached(t *testing.T) {
	next := &answer{}
	cache := &memCache{m: map[string]kit.Reply{}}
	s := Cached(cache, &Flights{}, next)
	rep, src, err := s.Complete(context.Background(), call("a"))
	if err != nil || src != Network || rep.Content != "reply to a" {
		t.Fatalf("first call: %+v %q %v", rep, src, err)
	}
	rep, src, err = s.Complete(context.Background(), call("a"))
	if err != nil || src != FromCache || rep.Content != "reply to a" || next.n.Load() != 1 {
		t.Errorf("second call: %+v %q %v, next called %d times", rep, src, err, next.n.Load())
	}
	// Failures are not stored: the next identical call is sent again.
	fail := StageFunc(func(context.Context, *Call) (kit.Reply, Source, error) {
		return kit.Reply{}, Network, errors.New("503")
	})
	if _, _, err := Cached(cache, &Flights{}, fail).Complete(context.Background(), call("b")); err == nil {
		t.Fatal("a failure was not returned")
	}
	if _, ok := cache.Get(CacheKey(call("b"))); ok {
		t.Error("a failure was stored")
	}
}

func TestCacheKey(t *testing.T) {
	temp := func(v float64) *float64 { return &v }
	a, b := call("x"), call("x")
	a.Sample, b.Sample = "agent-a", "agent-b"
	if CacheKey(a) == CacheKey(b) {
		t.Error("samples of the same request at the server's default temperature share a key")
	}
	a.Request.Temperature, b.Request.Temperature = temp(0), temp(0)
	if CacheKey(a) != CacheKey(b) {
		t.Error("at temperature 0 the sample should not matter")
	}
	c := call("x")
	c.Request.Messages[0].Content = "something else"
	if CacheKey(c) == CacheKey(call("x")) {
		t.Error("different messages share a key")
	}
	d := call("x")
	d.BaseURL = "http://other:1/v1"
	if CacheKey(d) == CacheKey(call("x")) {
		t.Error("different endpoints share a key")
	}
}

// TestCachedResample: a call asked afresh with resume --resample is not
// served the reply its request got before, even at temperature 0 where the
// sample discriminator is left out, nor an earlier resample's reply.
func TestCachedResample(t *testing.T) {
	temp := 0.0
	mk := func(resample int) *Call {
		c := call("x")
		c.Request.Temperature, c.Resample = &temp, resample
		return c
	}
	cache := &memCache{m: map[string]kit.Reply{CacheKey(mk(0)): {Content: "the bad reply"}}}
	next := &answer{}
	s := Cached(cache, &Flights{}, next)
	for n := 1; n <= 2; n++ {
		rep, src, err := s.Complete(context.Background(), mk(n))
		if err != nil || src != Network || rep.Content != "reply to x" || next.n.Load() != int32(n) {
			t.Errorf("resample %d: %+v from %q (%v); next called %d times", n, rep, src, err, next.n.Load())
		}
	}
	if CacheKey(mk(1)) == CacheKey(mk(2)) || CacheKey(mk(1)) == CacheKey(mk(0)) {
		t.Error("resamples share a cache key")
	}
	// The first sample's entry is left as it was.
	if rep, _ := cache.Get(CacheKey(mk(0))); rep.Content != "the bad reply" {
		t.Errorf("the first sample's entry became %q", rep.Content)
	}
}

func TestFlights(t *testing.T) {
	var g Flights
	release := make(chan struct{})
	var runs atomic.Int32
	fn := func() (kit.Reply, Source, error) {
		runs.Add(1)
		<-release
		return kit.Reply{Content: "x"}, Network, nil
	}
	var wg sync.WaitGroup
	sources := make([]Source, 5)
	for i := range sources {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rep, src, err := g.Do(context.Background(), "k", fn)
			if err != nil || rep.Content != "x" {
				t.Errorf("Do = %v, %v", rep, err)
			}
			sources[i] = src
		}(i)
	}
	for !g.inFlight("k") {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others join the flight
	close(release)
	wg.Wait()
	shared := 0
	for _, s := range sources {
		if s == Shared {
			shared++
		}
	}
	if runs.Load() < 1 || int(runs.Load())+shared != 5 {
		t.Errorf("fn ran %d times, %d callers shared; want every caller served once", runs.Load(), shared)
	}

	// A leader's failure is shared, but its cancellation is not: a waiter
	// with a live context runs the call itself.
	boom := errors.New("boom")
	for _, tc := range []struct{ leaderErr, want error }{{boom, boom}, {context.Canceled, nil}} {
		started, stop := make(chan struct{}), make(chan struct{})
		go func() {
			_, _, _ = g.Do(context.Background(), "e", func() (kit.Reply, Source, error) {
				close(started)
				<-stop
				return kit.Reply{}, Network, tc.leaderErr
			})
		}()
		<-started
		done := make(chan error)
		go func() {
			_, _, err := g.Do(context.Background(), "e", func() (kit.Reply, Source, error) { return kit.Reply{Content: "own"}, Network, nil })
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		close(stop)
		if err := <-done; !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("leader failing with %v: waiter got %v, want %v", tc.leaderErr, err, tc.want)
		}
	}
}

func (g *Flights) inFlight(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.m[key]
	return ok
}

func TestSend(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.LastUser(), "fail") {
			return llmtest.Reply{Status: http.StatusBadRequest, ErrorMessage: "bad request"}
		}
		return llmtest.Reply{Content: "ok: " + r.LastUser(), PromptTokens: 7, CompletionTokens: 3}
	})
	client := llm.New(llm.Endpoint{Name: "default", BaseURL: srv.URL})
	var sent atomic.Int64
	s := Send(func(name string) Client {
		if name != "default" {
			return nil
		}
		return client
	}, &sent)
	rep, src, err := s.Complete(context.Background(), call("a"))
	if err != nil || src != Network || rep.Content != "ok: hi a" || rep.PromptTokens != 7 || rep.CompletionTokens != 3 || rep.Attempts != 1 {
		t.Fatalf("reply %+v %q %v", rep, src, err)
	}
	_, _, err = s.Complete(context.Background(), call("fail"))
	var ee *EndpointError
	if !errors.As(err, &ee) || ee.Key != "fail" {
		t.Errorf("a refused call: %v, want an *EndpointError naming the call", err)
	}
	other := call("b")
	other.Model = &spec.ModelPlan{Name: "x", Model: "m", Endpoint: &spec.EndpointPlan{Name: "elsewhere"}}
	if _, _, err := s.Complete(context.Background(), other); err == nil || !strings.Contains(err.Error(), `endpoint "elsewhere" is not connected`) {
		t.Errorf("unconnected endpoint: %v", err)
	}
	if sent.Load() != 2 {
		t.Errorf("sent = %d, want 2", sent.Load())
	}
}

// TestRequestKeyIgnoresCacheSplit: where a message's cache split falls
// changes the wire form with breakpoints, not the reply, so a request's
// key (response cache, resume) is that of the same text without it, as
// before splits existed.
func TestRequestKeyIgnoresCacheSplit(t *testing.T) {
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "stable part, then the task"}}}
	plain := RequestKey(nil, "http://x", req, "")
	req.Messages[0].CacheSplit = len("stable part")
	if got := RequestKey(nil, "http://x", req, ""); got != plain {
		t.Errorf("a cache split changes the request key: %s, %s", got, plain)
	}
}
