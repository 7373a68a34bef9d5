package llmtest

import (
	"encoding/json"
	"strings"
	"testing"
)

func cacheRequest(t *testing.T, text string) Request {
	t.Helper()
	msgs, err := json.Marshal([]map[string]string{{"role": "user", "content": text}})
	if err != nil {
		t.Fatal(err)
	}
	return Request{Fields: map[string]json.RawMessage{"messages": msgs}}
}

// TestPromptCacheProviderRules: with OpenAI's rules a shared start under
// 1,024 tokens is not cached and a longer one is rounded down to 128
// tokens; a request sent before the other was answered is not served.
func TestPromptCacheProviderRules(t *testing.T) {
	long := strings.Repeat("abcd", 3000) // 3,000 tokens
	c := &PromptCache{MinTokens: 1024, Step: 128, Settled: true}
	if _, cached := c.Usage(cacheRequest(t, long+"one")); cached != 0 {
		t.Errorf("first request: %d cached, want 0", cached)
	}
	_, cached := c.Usage(cacheRequest(t, long+"two"))
	if cached != 2944 { // 3,002 shared tokens rounded down to 23 x 128
		t.Errorf("second request: %d cached, want 2944", cached)
	}
	if _, cached := c.Usage(cacheRequest(t, strings.Repeat("abcd", 500)+"x")); cached != 0 {
		t.Errorf("a 500-token shared start: %d cached, want 0", cached)
	}

	// Settled: a request that arrives while the other is being answered
	// is not served from it.
	s := &PromptCache{Settled: true}
	release := make(chan struct{})
	arrived := make(chan struct{}, 3)
	got := make(chan int, 2)
	h := s.Wrap(func(r Request) Reply {
		arrived <- struct{}{}
		<-release
		return Reply{Content: "ok"}
	})
	go func() { got <- h(cacheRequest(t, long+"a")).CachedTokens }()
	<-arrived
	go func() { got <- h(cacheRequest(t, long+"b")).CachedTokens }()
	<-arrived
	close(release)
	if a, b := <-got, <-got; a != 0 || b != 0 {
		t.Errorf("requests in flight together: %d and %d cached, want 0 and 0", a, b)
	}
	if rep := h(cacheRequest(t, long+"c")); rep.CachedTokens < 3000 {
		t.Errorf("a later request: %d cached, want the 3,000-token start", rep.CachedTokens)
	}
}
