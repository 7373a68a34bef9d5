package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
)

// The rounds spec, its scripted answers and an in-memory cache are shared
// with the sweep tests (internal/runtest).
var (
	roundsPlan  = runtest.RoundsPlan
	answerSeven = runtest.AnswerSeven
	newMemCache = runtest.NewMemCache
)

func roundsOpts(url string, c calls.Cache) Options {
	return Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}, Cache: c},
		Settings: Settings{Getenv: envFor(url)},
		Seams:    Seams{Sleep: noSleep},
	}
}

// stableParts are the parts of a result that a replay must reproduce byte
// for byte.
func stableParts(t *testing.T, res *result.Result) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"outputs": res.Outputs, "messages": res.Messages, "order": res.OutputOrder})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestReplay(t *testing.T) {
	plan := roundsPlan(t, "0.7")
	srv := llmtest.New(t, answerSeven)
	rec, recRes, err := execute(t, plan, roundsOpts(srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := LoadReplay(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 6 {
		t.Fatalf("%d recorded calls, want 6", len(recorded))
	}
	before := srv.Count()

	t.Run("byte-identical without network or key", func(t *testing.T) {
		r, res, err := execute(t, plan, Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}, Recording: launch.Recording{Replay: recorded}},
			Settings: Settings{Getenv: func(string) string { return "" }},
		})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Count() != before {
			t.Errorf("the replay sent %d requests", srv.Count()-before)
		}
		if !bytes.Equal(stableParts(t, res), stableParts(t, recRes)) {
			t.Errorf("replayed result differs:\n%s\n%s", stableParts(t, res), stableParts(t, recRes))
		}
		if cc := r.CallCounts(); cc.Replay != 6 || cc.Network != 0 {
			t.Errorf("call counts = %+v", cc)
		}
	})
	t.Run("a missing call is an error naming it", func(t *testing.T) {
		_, _, err := execute(t, plan, Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}, Sets: []string{"max_rounds=3"}}, Recording: launch.Recording{Replay: recorded}},
			Settings: Settings{Getenv: func(string) string { return "" }},
		})
		var me *calls.MissingError
		if !errors.As(err, &me) || !strings.HasPrefix(me.Key, "answer/round=3/") || !strings.Contains(err.Error(), me.Key) {
			t.Fatalf("err = %v, want a calls.MissingError for a round-3 call", err)
		}
		if srv.Count() != before {
			t.Errorf("sent %d requests", srv.Count()-before)
		}
	})
	t.Run("missing calls live", func(t *testing.T) {
		o := roundsOpts(srv.URL, nil)
		o.Sets, o.Replay, o.ReplayMissingLive = []string{"max_rounds=3"}, recorded, true
		r, res, err := execute(t, plan, o)
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.Count() - before; n != 3 {
			t.Errorf("%d live requests, want 3 (round 3 only)", n)
		}
		if cc := r.CallCounts(); cc.Replay != 6 || cc.Network != 3 || len(res.Messages) != 9 {
			t.Errorf("call counts = %+v, %d messages", cc, len(res.Messages))
		}
	})
}

func TestCacheAcrossRuns(t *testing.T) {
	plan := roundsPlan(t, "0.7")
	var fail atomic.Bool
	fail.Store(true)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if fail.Load() {
			return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return answerSeven(r)
	})
	c := newMemCache()
	if _, _, err := execute(t, plan, roundsOpts(srv.URL, c)); err == nil {
		t.Fatal("a run whose calls fail succeeded")
	}
	if c.Len() != 0 {
		t.Fatalf("%d failed replies were cached", c.Len())
	}
	fail.Store(false)
	n0 := srv.Count()
	_, first, err := execute(t, plan, roundsOpts(srv.URL, c))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Count()-n0 != 6 || c.Len() != 6 {
		t.Fatalf("first run: %d requests, %d cached; want 6 and 6", srv.Count()-n0, c.Len())
	}
	n1 := srv.Count()
	r, second, err := execute(t, plan, roundsOpts(srv.URL, c))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Count() != n1 {
		t.Errorf("the identical second run sent %d requests", srv.Count()-n1)
	}
	if cc := r.CallCounts(); cc.Cache != 6 {
		t.Errorf("call counts = %+v", cc)
	}
	if !bytes.Equal(stableParts(t, first), stableParts(t, second)) {
		t.Error("the cached run's result differs")
	}
	// Identical prompts of different agents at temperature > 0 are distinct
	// samples: the three round-1 requests differ only in the agent's key.
	if n := c.Len(); n != 6 {
		t.Errorf("%d distinct cache keys for 6 calls", n)
	}
}

func TestConcurrentIdenticalCallsSentOnce(t *testing.T) {
	plan := roundsPlan(t, "0.7")
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		rep := answerSeven(r)
		rep.Delay = 150 * time.Millisecond
		return rep
	})
	c, pool := newMemCache(), NewClientPool()
	var wg sync.WaitGroup
	runs := make([]*Run, 3)
	for i := range runs {
		o := roundsOpts(srv.URL, c)
		o.Sets, o.Clients, o.RunsDir = []string{"max_rounds=1"}, pool, t.TempDir()
		r, err := Start(plan, o)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	for _, r := range runs {
		wg.Add(1)
		go func(r *Run) {
			defer wg.Done()
			if _, err := r.Execute(context.Background()); err != nil {
				t.Error(err)
			}
		}(r)
	}
	wg.Wait()
	if srv.Count() != 3 || pool.Sent() != 3 {
		t.Errorf("%d requests (pool sent %d) for 3 identical concurrent runs of 3 calls, want 3", srv.Count(), pool.Sent())
	}
	var total CallCounts
	for _, r := range runs {
		cc := r.CallCounts()
		total.Network += cc.Network
		total.Shared += cc.Shared
		total.Cache += cc.Cache
	}
	if total.Network != 3 || total.Shared+total.Cache != 6 {
		t.Errorf("call counts over the runs = %+v", total)
	}
}
