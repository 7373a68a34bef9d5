package llmtest

import "sync"

// PromptCache stands in for a provider's prompt cache: a request's cached
// tokens are the leading bytes of its messages (as JSON) that start some
// earlier request's, a token per 4 bytes, and its prompt tokens all its
// bytes, a token per 4. Providers cache by leading bytes too, so a test can
// see what a run's requests would save.
type PromptCache struct {
	mu           sync.Mutex
	seen         [][]byte
	cached, sent int
}

// Usage counts a request and returns its prompt and cached tokens; set
// them on the Reply (PromptTokens, CachedTokens).
func (p *PromptCache) Usage(r Request) (prompt, cached int) {
	msgs := r.Fields["messages"]
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	for _, s := range p.seen {
		n := 0
		for n < len(s) && n < len(msgs) && s[n] == msgs[n] {
			n++
		}
		best = max(best, n)
	}
	p.seen = append(p.seen, msgs)
	prompt, cached = len(msgs)/4, best/4
	p.cached += cached
	p.sent += prompt
	return prompt, cached
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
		rep := h(r)
		rep.PromptTokens, rep.CachedTokens = p.Usage(r)
		return rep
	}
}
