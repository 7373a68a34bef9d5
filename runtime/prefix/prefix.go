// Package prefix keeps a run's recent model requests, signed to be compared
// cheaply, and says how much of a new request's start repeats one of them:
// what a provider's prompt cache could serve (the prefix and cacheable
// tokens of a run's usage, and each provider's rule of them).
package prefix

import (
	"hash/maphash"
	"math"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/result"
)

// agentWindow is how many of an agent's latest requests a new request is
// compared with. Calls of one agent may run at once (samples, each:), so
// "the previous request" is the closest of the last few, not only the
// very last one started.
const agentWindow = 8

// ModelWindow is how many of the run's latest requests to a model a new
// request is compared with for the cacheable share over the run.
const ModelWindow = 32

// Book is a run's recent requests: each agent's latest (see Tokens) and
// each model's (see Cacheable). The zero Book is empty and ready.
type Book struct {
	recent        map[string][]Request
	recentByModel map[string][]recentCall
}

// Cacheable are a request's prompt tokens that lie in a start it shares
// with an earlier request, from when such a start is long enough for a
// provider's cache (result.CacheMinTokens): agent with one of the same agent's,
// model with one of any agent's to the same model (endpoint and model
// name), leaving out those of the same call group (they are sent at the
// same time: none is earlier). rules are the tokens of the start shared
// with any agent's as each provider's rule serves it (see cacheRules);
// marks are where the request would carry cache breakpoints
// (llm.BreakpointOffsets). Not safe for concurrent use; it remembers the request.
func (b *Book) Cacheable(agent, model, key string, msgs []kit.ChatMessage, marks []int, promptTokens int) (byAgent, byModel int, rules result.CacheRules) {
	if model == "" || len(msgs) == 0 || promptTokens <= 0 {
		return 0, 0, rules
	}
	if b.recentByModel == nil {
		b.recentByModel = map[string][]recentCall{}
	}
	group := Group(key)
	req, total := comparing(group, msgs)
	bounds := blockBounds(msgs)
	last := -1
	if len(marks) > 0 {
		last = marks[len(marks)-1]
	}
	sharedAgent, sharedModel, sharedMarked := 0, 0, 0
	for _, prev := range b.recentByModel[model] {
		if prev.group == group {
			continue
		}
		n := Shared(prev.Request, req)
		sharedModel = max(sharedModel, n)
		if prev.agent == agent && agent != "" {
			sharedAgent = max(sharedAgent, n)
		}
		sharedMarked = max(sharedMarked, markedPrefix(prev, req, n, bounds, last))
	}
	signed := signMarks(req, marks)
	req.raw = nil
	recent := b.recentByModel[model]
	if len(recent) == ModelWindow {
		// Shifted in place: the window's array is the model's for the run.
		copy(recent, recent[1:])
		recent = recent[:ModelWindow-1]
	}
	b.recentByModel[model] = append(recent, recentCall{Request: req, agent: agent, marks: signed})
	share := func(shared int) int {
		if total == 0 {
			return 0
		}
		return int(math.Round(float64(promptTokens) * float64(shared) / float64(total)))
	}
	rules = cacheRules(share(sharedModel), share(sharedMarked))

	tokens := func(shared int) int {
		if n := share(shared); n >= result.CacheMinTokens {
			return n
		}
		return 0
	}
	return tokens(sharedAgent), tokens(sharedModel), rules
}

// cacheRules are the tokens of a shared start each provider's cache would
// serve: shared is the start shared with an earlier request, marked the part
// of it up to a breakpoint that request wrote and this one can read (both in
// tokens). OpenAI serves a start of at least 1,024 tokens in steps of 128,
// Anthropic one up to a breakpoint of at least 1,024, Gemini (implicit) one
// of at least 2,048.
func cacheRules(shared, marked int) result.CacheRules {
	var r result.CacheRules
	if shared >= result.OpenAICacheMin {
		r.OpenAI.Tokens = shared / result.OpenAICacheStep * result.OpenAICacheStep
	}
	if marked >= result.AnthropicCacheMin {
		r.Anthropic.Tokens = marked
	}
	if shared >= result.GeminiCacheMin {
		r.Gemini.Tokens = shared
	}
	return r
}

// markedPrefix is how much of a request (req) a provider that caches
// only at breakpoints (Anthropic) serves from an earlier one (prev), which
// shares n characters of its start (counted in whole blocks, so maybe a
// little short): the longest start that ends at a breakpoint of prev
// (written there), is the same in both (every message before the mark's
// whole, and the mark's message up to it), ends at a block boundary of req
// (the end of a message, or of its first part when it is split: bounds)
// and not after req's last breakpoint (last), where its cache lookup
// starts and looks back from.
func markedPrefix(prev recentCall, req Request, n int, bounds map[int]bool, last int) int {
	best := 0
	for _, m := range prev.marks {
		if m.at > last || !bounds[m.at] || m.at <= best || n < m.at-m.n || m.msg >= len(req.msgs) {
			continue
		}
		x, y := prev.msgs[m.msg], req.msgs[m.msg]
		if y.n < m.n || x.role != y.role {
			continue
		}
		same := false
		if m.n <= Exact {
			same = x.text[:m.n] == y.text[:m.n]
		} else if req.raw != nil {
			same = wholeOf(req.hashes[y.first:], req.raw[m.msg].Content, m.n) == m.hash
		}
		if same {
			best = m.at
		}
	}
	return best
}

// cacheMark is a breakpoint of a recent request: its offset (as a shared
// start is counted), the message it is in, the bytes of that message's
// content before it and, for a message longer than Exact, their hash.
type cacheMark struct {
	at, msg, n int
	hash       uint64
}

// signMarks are a request's breakpoints (offsets) signed to be compared
// once its messages are gone: each with its message and the hash of the
// content before it (req.raw must be at hand).
func signMarks(req Request, offsets []int) []cacheMark {
	if len(offsets) == 0 {
		return nil
	}
	var out []cacheMark
	at := 0
	for i, m := range req.msgs {
		start := at + len(m.role)
		at = start + m.n
		for _, p := range offsets {
			if p <= start || p > at {
				continue
			}
			c := cacheMark{at: p, msg: i, n: p - start}
			if m.n > Exact {
				c.hash = wholeOf(req.hashes[m.first:], req.raw[i].Content, c.n)
			}
			out = append(out, c)
		}
	}
	return out
}

// blockBounds are the offsets, counted as a shared start is (each
// message's role and content), where a request's content blocks end: each
// message's end, and its split (kit.ChatMessage.CacheSplit) when it has one.
func blockBounds(msgs []kit.ChatMessage) map[int]bool {
	out := make(map[int]bool, len(msgs)+1)
	at := 0
	for _, m := range msgs {
		start := at + len(m.Role)
		at = start + len(m.Content)
		if m.CacheSplit > 0 && m.CacheSplit < len(m.Content) {
			out[start+m.CacheSplit] = true
		}
		out[at] = true
	}
	return out
}

// recentCall is one of the run's recent requests to a model, with its
// agent.
type recentCall struct {
	Request
	agent string
	// marks are where it would carry cache breakpoints (see Cacheable).
	marks []cacheMark
}

// Tokens is how many of a request's prompt tokens repeat, from the
// start, one of the agent's recent requests (leaving out those of the same
// call group, the concurrent siblings of one node run: which of them
// finishes first is chance, and the count must not depend on it, so that a
// resumed run counts what an uninterrupted one does): what a provider's prompt
// cache, which matches requests by their leading bytes, can serve. It is
// the prompt tokens in proportion to the characters repeated (roles and
// contents, message by message, then the common start of the first message
// that differs; see Block). Not safe for concurrent use; it remembers the
// request.
func (b *Book) Tokens(agent, key string, msgs []kit.ChatMessage, promptTokens int) int {
	if agent == "" || len(msgs) == 0 {
		return 0
	}
	if b.recent == nil {
		b.recent = map[string][]Request{}
	}
	group := Group(key)
	req, total := comparing(group, msgs)
	shared := 0
	for _, prev := range b.recent[agent] {
		if prev.group != group {
			shared = max(shared, Shared(prev, req))
		}
	}
	req.raw = nil
	recent := b.recent[agent]
	if len(recent) == agentWindow {
		// Shifted in place: the window's array is the agent's for the run.
		copy(recent, recent[1:])
		recent = recent[:agentWindow-1]
	}
	b.recent[agent] = append(recent, req)
	if total == 0 {
		return 0
	}
	return int(math.Round(float64(promptTokens) * float64(shared) / float64(total)))
}

// A recent request keeps the first Exact bytes of each message's
// content and hashes of the content in blocks of Block bytes, each
// hash covering its block and all before it. Keeping whole prompts, 8 for
// each agent, kept about 0.4 MB for a conversation of 8 agents, and as much
// again of the heap in use, the prompts pinning spans otherwise filled with
// the calls' garbage; this is a quarter of a long prompt's size. The common
// start of two messages is exact when it is shorter than Exact or
// the whole of the earlier message; else it is counted in whole blocks,
// short by fewer than Block characters (8 tokens or so).
const Block, Exact = 32, 512

// prefixSeed seeds the hashes: they are compared within a process only.
var prefixSeed = maphash.MakeSeed()

// Request is one of an agent's recent requests, as Shared
// compares them: each message's role and name, whether it has tool calls,
// and hashes of its content.
type Request struct {
	group string
	msgs  []signedMessage
	// hashes are, per message longer than Exact, the hash of each
	// whole block of its content, then the hash of the whole content (see
	// blockHashes).
	hashes []uint64
	// raw are the messages themselves while the request is compared with
	// the recent ones, nil once it is one of them.
	raw []kit.ChatMessage
}

type signedMessage struct {
	role, name string
	tools      bool
	n          int    // the content's length
	first      int    // the message's first hash in hashes, if it has any
	text       string // the content's first Exact bytes
}

// comparing is a request signed to be compared with recent ones, its
// messages still at hand (raw), and its size in characters (roles and
// contents) that shared prefixes are a part of.
func comparing(group string, msgs []kit.ChatMessage) (Request, int) {
	total := 0
	for _, m := range msgs {
		total += len(m.Role) + len(m.Content)
	}
	req := Sign(group, msgs)
	req.raw = msgs
	return req, total
}

func Sign(group string, msgs []kit.ChatMessage) Request {
	count := 0
	for _, m := range msgs {
		if len(m.Content) > Exact {
			count += len(m.Content)/Block + 1
		}
	}
	r := Request{group: group, msgs: make([]signedMessage, len(msgs))}
	if count > 0 {
		r.hashes = make([]uint64, 0, count)
	}
	for i, m := range msgs {
		r.msgs[i] = signedMessage{role: m.Role, name: m.Name, tools: len(m.ToolCalls) > 0, n: len(m.Content), first: len(r.hashes)}
		if len(m.Content) <= Exact {
			// Compared by its text only.
			r.msgs[i].text = m.Content
			continue
		}
		// A copy: a slice would keep the whole prompt.
		r.msgs[i].text = strings.Clone(m.Content[:Exact])
		var whole uint64
		r.hashes, whole = blockHashes(r.hashes, m.Content)
		r.hashes = append(r.hashes, whole)
	}
	return r
}

// blockHashes appends to hashes the hash of each whole block of s and
// returns them and the hash of s, made from its blocks' hashes and of the
// rest: the hash of a prefix of s can be made from s's block hashes.
func blockHashes(hashes []uint64, s string) ([]uint64, uint64) {
	var whole uint64
	for len(s) >= Block {
		h := maphash.String(prefixSeed, s[:Block])
		hashes = append(hashes, h)
		whole = fold(whole, h)
		s = s[Block:]
	}
	return hashes, fold(whole, maphash.String(prefixSeed, s))
}

// wholeOf is the whole-content hash of s's first n bytes (n at most
// len(s)), from s's block hashes.
func wholeOf(blocks []uint64, s string, n int) uint64 {
	var whole uint64
	for _, h := range blocks[:n/Block] {
		whole = fold(whole, h)
	}
	return fold(whole, maphash.String(prefixSeed, s[n/Block*Block:n]))
}

func fold(whole, h uint64) uint64 { return (whole ^ h) * 0x9e3779b97f4a7c15 }

// Shared is the number of characters two requests share from their
// start: whole messages of the same role and content, then the common
// start of the first that differs (when its role is the same), in whole
// blocks.
func Shared(a, b Request) int {
	n := 0
	for i := 0; i < len(a.msgs) && i < len(b.msgs); i++ {
		x, y := a.msgs[i], b.msgs[i]
		if x.role != y.role {
			return n
		}
		n += len(x.role)
		blocks := x.n / Block
		if x.n == y.n && x.text == y.text && (x.n <= Exact || a.hashes[x.first+blocks] == b.hashes[y.first+blocks]) {
			// The same content.
			n += x.n
			if x.name == y.name && !x.tools && !y.tools {
				continue
			}
			return n
		}
		j := 0
		for j < len(x.text) && j < len(y.text) && x.text[j] == y.text[j] {
			j++
		}
		if j < Exact || j == x.n || j == y.n {
			return n + j
		}
		// Both are longer than Exact, so hashed.
		if x.n < y.n && b.raw != nil && wholeOf(b.hashes[y.first:], b.raw[i].Content, x.n) == a.hashes[x.first+blocks] {
			// b's content goes on from the whole of a's.
			return n + x.n
		}
		k := 0
		for k < blocks && k < y.n/Block && a.hashes[x.first+k] == b.hashes[y.first+k] {
			k++
		}
		return n + k*Block
	}
	return n
}

// Group is a call key without its last part (agent, target, sample)
// and repair suffix: the calls one node run makes at once share it
// ("critique/round=1/a>b" and "critique/round=1/a>c"), while a
// conversation's turns ("panel/t3/ann", "panel/t5/ann") and a call's tool
// rounds ("KEY/tool1") do not.
func Group(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		if strings.HasPrefix(key[i+1:], "tool") {
			return key
		}
		return key[:i]
	}
	return key
}
