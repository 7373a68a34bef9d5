package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	callctx "github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
)

// fakeAPI is a batch API in memory whose requests end as outcome says:
// "ok" (answered), "fail" (not answered) or "lost" (missing from the
// results); submissions are refused (400) while refuse is set, polls fail
// for a while (503, or no answer) while down is above 0, and always (404)
// when gone.
type fakeAPI struct {
	mu        sync.Mutex
	outcome   func(id string) string
	refuse    bool
	down      int
	gone      bool
	batches   map[string][]llm.BatchRequest
	submitted map[string]int
}

func (f *fakeAPI) Submit(_ context.Context, reqs []llm.BatchRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse {
		return "", &llm.HTTPError{Status: "400 Bad Request", StatusCode: 400, Body: "invalid file"}
	}
	id := fmt.Sprintf("b%d", len(f.batches)+1)
	f.batches[id] = append([]llm.BatchRequest(nil), reqs...)
	for _, r := range reqs {
		f.submitted[r.ID]++
	}
	return id, nil
}

func (f *fakeAPI) Poll(_ context.Context, id string) (llm.BatchState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return llm.BatchState{}, &llm.HTTPError{Status: "404 Not Found", StatusCode: 404}
	}
	if f.down > 0 {
		f.down--
		if f.down%2 == 0 {
			return llm.BatchState{}, errors.New("connection reset")
		}
		return llm.BatchState{}, &llm.HTTPError{Status: "503 Service Unavailable", StatusCode: 503}
	}
	return llm.BatchState{Status: "completed", Ended: true, Total: len(f.batches[id])}, nil
}

func (f *fakeAPI) Results(_ context.Context, id string) (map[string]llm.BatchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]llm.BatchResult{}
	for _, r := range f.batches[id] {
		switch f.outcome(r.ID) {
		case "ok":
			out[r.ID] = llm.BatchResult{Body: append([]byte("reply to "), r.Body...)}
		case "fail":
			out[r.ID] = llm.BatchResult{Err: "errored"}
		}
	}
	return out, nil
}

type fakeKind struct{ api *fakeAPI }

func (k fakeKind) BatchAPI(*http.Request, *http.Client) (llm.BatchAPI, error) { return k.api, nil }

// aloneServer answers the requests sent on their own, counting them.
type aloneServer struct {
	mu    sync.Mutex
	count map[string]int
}

func (a *aloneServer) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, "alone ")
	buf := make([]byte, 512)
	n, _ := r.Body.Read(buf)
	b.Write(buf[:n])
	a.mu.Lock()
	a.count[string(buf[:n])]++
	a.mu.Unlock()
	w.WriteString(b.String())
	return w.Result(), nil
}

// FuzzCollector sends calls through a collector from many goroutines at
// once, some asking the same request, with random outcomes in the batch
// (answered, failed, missing), submissions refused and polls failing: every
// call gets exactly one reply, from its batch or sent on its own, never
// both; no request is submitted twice; and a request a batch answered is
// never sent on its own; and of the calls a batch answered with the same
// request, exactly one is billed for it: the others are marked shared,
// and a call that asks again (a retry) is not another caller.
func FuzzCollector(f *testing.F) {
	f.Add(uint64(1), uint8(20), uint8(0))
	f.Add(uint64(7), uint8(60), uint8(1))
	f.Add(uint64(42), uint8(5), uint8(2))
	f.Add(uint64(9), uint8(30), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, mode uint8) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		outcomes := map[string]string{}
		kinds := []string{"ok", "ok", "ok", "fail", "lost"}
		api := &fakeAPI{batches: map[string][]llm.BatchRequest{}, submitted: map[string]int{}}
		api.refuse = mode%4 == 1
		if mode%4 == 2 {
			api.down = 1 + rng.IntN(6)
		}
		api.gone = mode%4 == 3
		var mu sync.Mutex
		api.outcome = func(id string) string {
			mu.Lock()
			defer mu.Unlock()
			if o, ok := outcomes[id]; ok {
				return o
			}
			outcomes[id] = kinds[rng.IntN(len(kinds))]
			return outcomes[id]
		}
		c, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c.Window, c.Poll = 5e6, 1e5 // 5 ms, 0.1 ms
		alone := &aloneServer{count: map[string]int{}}
		rt := c.Wrap(fakeKind{api}, 0)(alone, http.DefaultClient)
		calls := int(n%64) + 1
		bodies := make([]string, calls)
		for i := range bodies {
			bodies[i] = fmt.Sprintf("request %d", rng.IntN(calls)) // some the same
		}
		got := make([]string, calls)
		retries := make([]bool, calls)
		for i := range retries {
			retries[i] = rng.IntN(4) == 0
		}
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each goroutine is a call of its own; some ask twice.
				ctx := callctx.WithCall(context.Background(), &callctx.Call{Key: "k"})
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://example.invalid/v1/chat/completions", strings.NewReader(bodies[i]))
				if retries[i] {
					if resp, err := rt.RoundTrip(req.Clone(ctx)); err == nil {
						resp.Body.Close()
					}
					req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://example.invalid/v1/chat/completions", strings.NewReader(bodies[i]))
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					got[i] = "error: " + err.Error()
					return
				}
				var b strings.Builder
				buf := make([]byte, 512)
				k, _ := resp.Body.Read(buf)
				b.Write(buf[:k])
				resp.Body.Close()
				if resp.Header.Get(llm.BatchHeader) != "" {
					b.WriteString(" [batch]")
				}
				if resp.Header.Get(llm.BatchSharedHeader) != "" {
					b.WriteString(" [shared]")
				}
				got[i] = b.String()
			}()
		}
		wg.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		billed := map[string]int{}   // batched calls billed, by request
		batchedN := map[string]int{} // batched calls, by request
		for i, g := range got {
			id := RequestID(&callctx.Call{Key: "k"}, "http://example.invalid/v1/chat/completions", []byte(bodies[i]))
			batched := "reply to " + bodies[i] + " [batch]"
			single := "alone " + bodies[i]
			if g == batched {
				billed[bodies[i]]++
			}
			if g == batched || g == batched+" [shared]" {
				batchedN[bodies[i]]++
				g = batched
			}
			switch {
			case g == batched:
				if api.refuse || api.gone || outcomes[id] != "ok" {
					t.Errorf("call %d answered from a batch, but its outcome was %q (refused %v, gone %v)", i, outcomes[id], api.refuse, api.gone)
				}
			case g == single:
				if !api.refuse && !api.gone && outcomes[id] == "ok" {
					t.Errorf("call %d was sent on its own though its batch answered it", i)
				}
			default:
				t.Errorf("call %d: %q", i, g)
			}
		}
		for body, n := range batchedN {
			if billed[body] != 1 {
				t.Errorf("%q answered %d calls from a batch, %d of them billed, want 1", body, n, billed[body])
			}
		}
		for id, k := range api.submitted {
			if k != 1 {
				t.Errorf("request %s submitted %d times", id, k)
			}
		}
		for body, k := range alone.count {
			want := 0 // one per attempt: a call asking again sends again
			for i, b := range bodies {
				if b == body {
					want++
					if retries[i] {
						want++
					}
				}
			}
			if k > want {
				t.Errorf("%q sent on its own %d times for %d attempts", body, k, want)
			}
		}
	})
}
