package llmtest

import (
	"encoding/json"
	"strings"
)

// blocks is a request's messages as Anthropic caches them: a run of text
// blocks (a string content is one block), with the offsets in text where
// each block ends and where the blocks marked cache_control end. Each
// message starts with its role, so that the same text under another role
// does not match.
type blocks struct {
	text        string
	ends, marks []int
}

// readBlocks reads the messages member of a request body.
func readBlocks(raw json.RawMessage) blocks {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	var b blocks
	if json.Unmarshal(raw, &msgs) != nil {
		return b
	}
	var sb strings.Builder
	for _, m := range msgs {
		sb.WriteString("\x00" + m.Role + "\x00")
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			sb.WriteString("\x01" + s)
			b.ends = append(b.ends, sb.Len())
			continue
		}
		var parts []struct {
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			sb.WriteString("\x01" + p.Text)
			b.ends = append(b.ends, sb.Len())
			if len(p.CacheControl) > 0 && string(p.CacheControl) != "null" {
				b.marks = append(b.marks, sb.Len())
			}
		}
	}
	b.text = sb.String()
	return b
}

// measureBreakpoints counts a request against the cache entries so far, as
// Anthropic's cache does: an entry is a request's start up to one of its
// breakpoints (cache_control) of at least MinTokens; a request reads the
// longest entry it starts with that ends at one of its own block ends, and
// writes its start up to its last breakpoint of at least MinTokens beyond
// what it read. Tokens are a quarter of the text's bytes. (Anthropic looks
// back at most 20 blocks from a breakpoint for a hit; the requests here
// have far fewer.) Call with p.mu held.
func (p *PromptCache) measureBreakpoints(r Request) (prompt, cached, written int) {
	b := readBlocks(r.Fields["messages"])
	best := 0
	for _, e := range p.entries {
		if len(e) > best && strings.HasPrefix(b.text, e) && blockEnd(b, len(e)) {
			best = len(e)
		}
	}
	last := 0
	for _, m := range b.marks {
		if m/4 >= p.MinTokens {
			last = max(last, m)
		}
	}
	prompt, cached = len(b.text)/4, best/4
	if last > best {
		written = last/4 - cached
	}
	return prompt, cached, written
}

func blockEnd(b blocks, at int) bool {
	for _, e := range b.ends {
		if e == at {
			return true
		}
	}
	return false
}

// rememberBreakpoints keeps a request's breakpoint prefixes of at least
// MinTokens as cache entries. Call with p.mu held.
func (p *PromptCache) rememberBreakpoints(r Request) {
	b := readBlocks(r.Fields["messages"])
	for _, m := range b.marks {
		if m/4 >= p.MinTokens {
			p.entries = append(p.entries, b.text[:m])
		}
	}
}
