package spec

import (
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
)

// BuiltinPricesDate is when the built-in prices were the providers'
// published list prices (US dollars per million tokens, standard tier,
// no batch discount). Prices change: a model's `price:` in the spec
// overrides its built-in price.
const BuiltinPricesDate = "2025-08-15"

// builtinPrices are list prices of common models by the name their
// provider knows them by, with the price of prompt tokens served from the
// provider's prompt cache where the provider publishes one, and for
// Anthropic's models the price of a cache write (five-minute cache: 1.25x
// the prompt price), counted where the provider reports the tokens written.
// Gemini's are for prompts up to 200,000 tokens. Only prices we are sure
// of are here; a model not listed has no built-in price.
var builtinPrices = map[string]syntax.Price{}

func init() {
	add := func(prompt, cached, completion float64, names ...string) {
		p := syntax.Price{Prompt: prompt, Completion: completion}
		if cached >= 0 {
			p.CachedPrompt = &cached
		}
		if strings.HasPrefix(names[0], "claude-") {
			write := prompt * 1.25 // Anthropic's five-minute cache write
			p.CacheWrite = &write
		}
		for _, n := range names {
			builtinPrices[n] = p
		}
	}
	const none = -1 // no published cached-input price
	// OpenAI.
	add(2.50, 1.25, 10, "gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20")
	add(0.15, 0.075, 0.60, "gpt-4o-mini", "gpt-4o-mini-2024-07-18")
	add(2.00, 0.50, 8, "gpt-4.1", "gpt-4.1-2025-04-14")
	add(0.40, 0.10, 1.60, "gpt-4.1-mini", "gpt-4.1-mini-2025-04-14")
	add(0.10, 0.025, 0.40, "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14")
	add(1.25, 0.125, 10, "gpt-5", "gpt-5-2025-08-07")
	add(0.25, 0.025, 2, "gpt-5-mini", "gpt-5-mini-2025-08-07")
	add(0.05, 0.005, 0.40, "gpt-5-nano", "gpt-5-nano-2025-08-07")
	add(15, 7.50, 60, "o1", "o1-2024-12-17")
	add(2.00, 0.50, 8, "o3", "o3-2025-04-16")
	add(1.10, 0.55, 4.40, "o3-mini", "o3-mini-2025-01-31")
	add(1.10, 0.275, 4.40, "o4-mini", "o4-mini-2025-04-16")
	// Anthropic (OpenRouter's names too).
	add(3, 0.30, 15, "claude-sonnet-4-20250514", "claude-sonnet-4-0", "claude-sonnet-4",
		"claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest", "claude-3.7-sonnet",
		"claude-3-5-sonnet-20241022", "claude-3-5-sonnet-latest", "claude-3.5-sonnet")
	add(15, 1.50, 75, "claude-opus-4-20250514", "claude-opus-4-0", "claude-opus-4",
		"claude-opus-4-1-20250805", "claude-opus-4-1", "claude-opus-4.1")
	add(0.80, 0.08, 4, "claude-3-5-haiku-20241022", "claude-3-5-haiku-latest", "claude-3.5-haiku")
	add(0.25, 0.03, 1.25, "claude-3-haiku-20240307", "claude-3-haiku")
	// Claude 4.5, from Anthropic's pricing page as of 2025-11-24 (later than
	// BuiltinPricesDate; cache reads 0.1x the prompt price). Later Claude
	// models have no built-in price: declare one.
	add(5, 0.50, 25, "claude-opus-4-5-20251101", "claude-opus-4-5", "claude-opus-4.5")
	add(3, 0.30, 15, "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "claude-sonnet-4.5")
	add(1, 0.10, 5, "claude-haiku-4-5-20251001", "claude-haiku-4-5", "claude-haiku-4.5")
	// Google.
	add(1.25, none, 10, "gemini-2.5-pro")
	add(0.30, none, 2.50, "gemini-2.5-flash")
	add(0.10, none, 0.40, "gemini-2.5-flash-lite")
	add(0.10, 0.025, 0.40, "gemini-2.0-flash", "gemini-2.0-flash-001")
}

// BuiltinPrice returns the built-in list price of a model, by the name the
// endpoint knows it by ("gpt-4o-mini"; a gateway's "openai/gpt-4o-mini"
// too), marked with BuiltinPricesDate; nil when there is none.
func BuiltinPrice(model string) *syntax.Price {
	name := strings.ToLower(strings.TrimSpace(model))
	for _, vendor := range []string{"openai/", "anthropic/", "google/", "models/"} {
		name = strings.TrimPrefix(name, vendor)
	}
	p, ok := builtinPrices[name]
	if !ok {
		return nil
	}
	if p.CachedPrompt != nil {
		cached := *p.CachedPrompt
		p.CachedPrompt = &cached // the table stays as it is
	}
	if p.CacheWrite != nil {
		write := *p.CacheWrite
		p.CacheWrite = &write
	}
	p.Builtin = BuiltinPricesDate
	return &p
}
