package llm

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestWithWaits: a call that waits for the concurrency slot tells the
// context's listener which limit it waited for and about how long; a call
// that did not wait tells nothing, and neither does one with a free
// requests-per-minute budget.
func TestWithWaits(t *testing.T) {
	body := completionJSON(reply{content: "ok"})
	entered := make(chan struct{}, 1)
	s := newServer(t)
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(30 * time.Millisecond)
		fmt.Fprint(w, body)
	})
	ep := endpoint(s, &sleeps{})
	ep.MaxConcurrency = 1
	ep.RequestsPerMinute = 6000
	c := New(ep)
	type wait struct {
		limit string
		d     time.Duration
	}
	var mu sync.Mutex
	waits := map[string][]wait{}
	listen := func(name string) context.Context {
		return WithWaits(context.Background(), func(limit string, d time.Duration) {
			mu.Lock()
			waits[name] = append(waits[name], wait{limit, d})
			mu.Unlock()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := c.Complete(listen("first"), simple("m"), nil); err != nil {
			t.Error(err)
		}
	})
	<-entered // the first call holds the only slot
	if _, err := c.Complete(listen("second"), simple("m"), nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(waits["first"]) != 0 {
		t.Errorf("the first call waited: %v", waits["first"])
	}
	if w := waits["second"]; len(w) != 1 || w[0].limit != "max_concurrency" || w[0].d < 10*time.Millisecond {
		t.Errorf("the second call's waits: %v, want one for max_concurrency of about 30ms", w)
	}
}
