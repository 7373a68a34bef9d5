package spec

import "testing"

// TestBuiltinPrice: known models (also behind a gateway's vendor prefix)
// have a dated list price with a cached price; others have none.
func TestBuiltinPrice(t *testing.T) {
	p := BuiltinPrice("gpt-4o-mini")
	if p == nil || p.Prompt != 0.15 || p.Completion != 0.60 || p.CachedPrompt == nil || *p.CachedPrompt != 0.075 || p.Builtin != BuiltinPricesDate {
		t.Fatalf("gpt-4o-mini: %+v", p)
	}
	if q := BuiltinPrice("openai/GPT-4o-mini"); q == nil || q.Prompt != 0.15 {
		t.Errorf("a gateway's name: %+v", q)
	}
	if q := BuiltinPrice("anthropic/claude-sonnet-4"); q == nil || q.Prompt != 3 || *q.CachedPrompt != 0.30 || q.CacheWrite == nil || *q.CacheWrite != 3.75 {
		t.Errorf("claude-sonnet-4: %+v", q)
	}
	// Anthropic's models price a cache write (1.25x the prompt); OpenAI's
	// bill none, so theirs is the prompt price.
	if q := BuiltinPrice("claude-3-5-haiku-20241022"); q.CacheWrite == nil || *q.CacheWrite != 1 {
		t.Errorf("claude-3-5-haiku: %+v", q)
	}
	if p.CacheWrite != nil || p.CostWritten(1000, 0, 1000, 0) != p.Cost(1000, 0, 0) {
		t.Errorf("gpt-4o-mini has a cache-write price: %+v", p)
	}
	if q := BuiltinPrice("claude-sonnet-4"); q.CostWritten(1000, 500, 400, 0) != (100*3+500*0.30+400*3.75)/1e6 {
		t.Errorf("claude-sonnet-4: 1000 prompt tokens, 500 read, 400 written cost %v", q.CostWritten(1000, 500, 400, 0))
	}
	// Claude 4.5's prices (Anthropic's page, 2025-11-24), cache writes at 1.25x.
	if q := BuiltinPrice("claude-opus-4-5"); q == nil || q.Prompt != 5 || q.Completion != 25 || *q.CachedPrompt != 0.50 || *q.CacheWrite != 6.25 {
		t.Errorf("claude-opus-4-5: %+v", q)
	}
	if q := BuiltinPrice("claude-haiku-4-5-20251001"); q == nil || q.Prompt != 1 || q.Completion != 5 || *q.CachedPrompt != 0.10 {
		t.Errorf("claude-haiku-4-5: %+v", q)
	}
	// A later model of a family is not priced as an earlier one.
	for _, name := range []string{"qwen2.5:7b", "gpt-4o-2024-05-13", "claude-opus-4-6", "claude-sonnet-4-6", ""} {
		if q := BuiltinPrice(name); q != nil {
			t.Errorf("%q has a built-in price: %+v", name, q)
		}
	}
	// Changing the returned price leaves the table alone.
	*p.CachedPrompt = 9
	if BuiltinPrice("gpt-4o-mini").CachedPrompt == p.CachedPrompt {
		t.Error("BuiltinPrice shares its cached price")
	}
}
