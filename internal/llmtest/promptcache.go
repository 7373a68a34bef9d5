package llmtest

import (
	"sync"
	"time"
)

// PromptCache stands in for a provider's prompt cache: a request's cached
// tokens are the leading bytes of its messages (as JSON) that start some
// earlier request's, a token per 4 bytes, and its prompt tokens all its
// bytes, a token per 4. Providers cache by leading bytes too, so a test can
// see what a run's requests would save.
//
// The zero PromptCache serves any shared start, of a request that arrived
// before. Its fields make it follow a provider's rules: OpenAI's, for
// instance, are MinTokens 1024, Step 128 and Settled.
type PromptCache struct {
	// MinTokens is the shortest shared start served from the cache; a
	// shorter one is not cached at all (0: any).
	MinTokens int
	// Step rounds the cached tokens down to a multiple of it (0: none).
	Step int
	// Settled serves a request only from requests answered before it
	// arrived: a provider caches a prompt once it has processed it, so
	// requests sent at the same time do not serve each other. A reply's
	// Delay is then waited out before the prompt counts as cached.
	Settled bool
	// Breakpoints follows Anthropic's rules instead of matching any shared
	// start: only a request's start up to a cache_control breakpoint is
	// cached, and the tokens written to the cache are reported too
	// (Reply.CacheWriteTokens; see measureBreakpoints). Step is not used.
	Breakpoints bool

	mu                    sync.Mutex
	seen                  [][]byte
	entries               []string
	cached, sent, written int
}

// Usage counts a request and returns its prompt and cached tokens; set
// them on the Reply (PromptTokens, CachedTokens). The request is
// remembered at once (see Settled).
func (p *PromptCache) Usage(r Request) (prompt, cached int) {
	prompt, cached, _ = p.measure(r)
	p.remember(r)
	return prompt, cached
}

// measure counts a request against the requests remembered so far.
func (p *PromptCache) measure(r Request) (prompt, cached, written int) {
	msgs := r.Fields["messages"]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Breakpoints {
		prompt, cached, written = p.measureBreakpoints(r)
		p.cached += cached
		p.sent += prompt
		p.written += written
		return prompt, cached, written
	}
	best := 0
	for _, s := range p.seen {
		n := 0
		for n < len(s) && n < len(msgs) && s[n] == msgs[n] {
			n++
		}
		best = max(best, n)
	}
	prompt, cached = len(msgs)/4, best/4
	if cached < p.MinTokens {
		cached = 0
	}
	if p.Step > 0 {
		cached -= cached % p.Step
	}
	p.cached += cached
	p.sent += prompt
	return prompt, cached, 0
}

func (p *PromptCache) remember(r Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Breakpoints {
		p.rememberBreakpoints(r)
		return
	}
	p.seen = append(p.seen, r.Fields["messages"])
}

// Written is the prompt tokens of every request counted that were written
// to the cache (Breakpoints only).
func (p *PromptCache) Written() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written
}

// Totals are the prompt and cached tokens of every request counted.
func (p *PromptCache) Totals() (prompt, cached int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.cached
}

// Wrap answers with h and reports the cache's token counts on each reply.
func (p *PromptCache) Wrap(h Handler) Handler {
	return func(r Request) Reply {
		if !p.Settled {
			rep := h(r)
			rep.PromptTokens, rep.CachedTokens, rep.CacheWriteTokens = p.measure(r)
			p.remember(r)
			return rep
		}
		prompt, cached, written := p.measure(r)
		rep := h(r)
		rep.PromptTokens, rep.CachedTokens, rep.CacheWriteTokens = prompt, cached, written
		// The reply's delay is the provider's processing: the prompt is
		// cached when it is answered.
		time.Sleep(rep.Delay)
		rep.Delay = 0
		if rep.Status == 0 || rep.Status == 200 {
			p.remember(r)
		}
		return rep
	}
}
