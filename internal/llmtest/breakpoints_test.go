package llmtest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPromptCacheBreakpoints: with Anthropic's rules only a start up to a
// cache_control breakpoint is cached, a later request reads it only where
// one of its own blocks ends, and the tokens up to a request's last
// breakpoint that it did not read are written.
func TestPromptCacheBreakpoints(t *testing.T) {
	type part struct {
		Type         string         `json:"type"`
		Text         string         `json:"text"`
		CacheControl map[string]any `json:"cache_control,omitempty"`
	}
	mark := map[string]any{"type": "ephemeral"}
	req := func(user any) Request {
		msgs, err := json.Marshal([]map[string]any{
			{"role": "system", "content": []part{{Type: "text", Text: "rules", CacheControl: mark}}},
			{"role": "user", "content": user},
		})
		if err != nil {
			t.Fatal(err)
		}
		return Request{Fields: map[string]json.RawMessage{"messages": msgs}}
	}
	stable := strings.Repeat("abcd", 1100) // 1,100 tokens
	c := &PromptCache{MinTokens: 1024, Breakpoints: true}
	use := func(r Request) (int, int, int) {
		p, cached, written := c.measure(r)
		c.remember(r)
		return p, cached, written
	}
	prompt, cached, written := use(req([]part{{Type: "text", Text: stable, CacheControl: mark}, {Type: "text", Text: "task one", CacheControl: mark}}))
	if cached != 0 || written != prompt {
		t.Errorf("first request: %d of %d cached, %d written; want none cached, all written", cached, prompt, written)
	}
	prompt, cached, written = use(req([]part{{Type: "text", Text: stable, CacheControl: mark}, {Type: "text", Text: "task two, longer", CacheControl: mark}}))
	head := (len("\x00system\x00\x01rules\x00user\x00\x01") + len(stable)) / 4
	if cached != head || written != prompt-head {
		t.Errorf("second request: %d cached, %d written of %d; want %d cached (through the stable part), the rest written", cached, written, prompt, head)
	}
	if _, cached, written = use(req(stable + "task three")); cached != 0 || written != 0 {
		t.Errorf("the same start in one block without breakpoints: %d cached, %d written; want none", cached, written)
	}
	if _, cached, _ = use(req([]part{{Type: "text", Text: stable + "x", CacheControl: mark}})); cached != 0 {
		t.Errorf("a block that goes on past a cached start: %d cached, want 0 (the entry ends inside it)", cached)
	}
}
