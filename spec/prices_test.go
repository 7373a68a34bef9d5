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
	if q := BuiltinPrice("anthropic/claude-sonnet-4"); q == nil || q.Prompt != 3 || *q.CachedPrompt != 0.30 {
		t.Errorf("claude-sonnet-4: %+v", q)
	}
	// A later model of a family is not priced as an earlier one.
	for _, name := range []string{"qwen2.5:7b", "gpt-4o-2024-05-13", "claude-opus-4-5", ""} {
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
