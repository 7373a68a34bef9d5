package runtime

import (
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
	c := redactingCache{Cache: slow, writes: &w}
	c.Put("k1", kit.Reply{Content: "one"})
	if rep, ok := c.Get("k1"); !ok || rep.Content != "one" {
		t.Fatalf("a reply being written: got %q, %v", rep.Content, ok)
	}
	if _, ok := slow.Get("k1"); ok {
		t.Fatal("the slow cache holds the entry before its write was released")
	}
	done := make(chan struct{})
	go func() {
		w.wait()
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
	if _, ok := w.get("k1"); ok {
		t.Error("the written reply is still held in memory")
	}
}
