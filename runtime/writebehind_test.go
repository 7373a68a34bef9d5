package runtime

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
)

// slowCache is a response cache whose writes wait for release.
type slowCache struct {
	mu      sync.Mutex
	entries map[string]kit.Reply
	release chan struct{}
}

func (c *slowCache) Get(key string) (kit.Reply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep, ok := c.entries[key]
	return rep, ok
}

func (c *slowCache) Put(key string, rep kit.Reply) {
	<-c.release
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = rep
}

// TestWriteBehind checks that a reply put into the cache is served at once,
// while its entry is still being written, and that wait returns only once
// the entry is written.
func TestWriteBehind(t *testing.T) {
	slow := &slowCache{entries: map[string]kit.Reply{}, release: make(chan struct{})}
	var w writeBehind
	var run sync.WaitGroup
	c := redactingCache{Cache: slow, writes: &w, run: &run}
	c.Put("k1", kit.Reply{Content: "one"})
	if rep, ok := c.Get("k1"); !ok || rep.Content != "one" {
		t.Fatalf("a reply being written: got %q, %v", rep.Content, ok)
	}
	if _, ok := slow.Get("k1"); ok {
		t.Fatal("the slow cache holds the entry before its write was released")
	}
	done := make(chan struct{})
	go func() {
		run.Wait()
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("wait returned before the write ended")
	case <-time.After(20 * time.Millisecond):
	}
	close(slow.release)
	<-done
	if rep, ok := slow.Get("k1"); !ok || rep.Content != "one" {
		t.Fatalf("after wait the cache holds %q, %v", rep.Content, ok)
	}
	if _, ok := w.Get("k1"); ok {
		t.Error("the written reply is still held in memory")
	}
}

// TestWriteBehindSharedByRuns: the runs of a sweep share the pool's
// writes; each waits for its own only, while the others go on putting
// (one wait group for the pool panicked: "WaitGroup is reused before
// previous Wait has returned").
func TestWriteBehindSharedByRuns(t *testing.T) {
	var w writeBehind
	cache := &slowCache{entries: map[string]kit.Reply{}, release: make(chan struct{})}
	close(cache.release)
	var runs sync.WaitGroup
	for r := range 4 {
		runs.Add(1)
		go func() {
			defer runs.Done()
			for i := range 200 {
				var run sync.WaitGroup
				c := redactingCache{Cache: cache, writes: &w, run: &run}
				key := fmt.Sprintf("r%d/%d", r, i)
				c.Put(key, kit.Reply{Content: key})
				run.Wait()
				if rep, ok := cache.Get(key); !ok || rep.Content != key {
					t.Errorf("after its run's wait, %s holds %q, %v", key, rep.Content, ok)
					return
				}
			}
		}()
	}
	runs.Wait()
}

// TestWriteBehindSameKeyTwice: while a second write of a key is on its
// way, the first one's end does not take the reply out of memory.
func TestWriteBehindSameKeyTwice(t *testing.T) {
	var w writeBehind
	first := &slowCache{entries: map[string]kit.Reply{}, release: make(chan struct{})}
	second := &slowCache{entries: map[string]kit.Reply{}, release: make(chan struct{})}
	var run sync.WaitGroup
	redactingCache{Cache: first, writes: &w, run: &run}.Put("k", kit.Reply{Content: "one"})
	redactingCache{Cache: second, writes: &w, run: &run}.Put("k", kit.Reply{Content: "two"})
	close(first.release)
	for {
		if _, ok := first.Get("k"); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // the first write's goroutine takes its lock after Put
	if rep, ok := w.Get("k"); !ok || rep.Content != "two" {
		t.Errorf("with the second write on its way, memory holds %q, %v; want two", rep.Content, ok)
	}
	close(second.release)
	run.Wait()
	if _, ok := w.Get("k"); ok {
		t.Error("both written, the reply is still held in memory")
	}
}
