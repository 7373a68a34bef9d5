package runtime

import (
	"math"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/result"
)

// prefixWindow is how many of an agent's latest requests a new request is
// compared with. Calls of one agent may run at once (samples, each:), so
// "the previous request" is the closest of the last few, not only the
// very last one started.
const prefixWindow = 8

// modelWindow is how many of the run's latest requests to a model a new
// request is compared with for the cacheable share over the run.
const modelWindow = 32

// cacheable are a request's prompt tokens that lie in a start it shares
// with an earlier request, from when such a start is long enough for a
// provider's cache (result.CacheMinTokens): agent with one of the same agent's,
// model with one of any agent's to the same model (endpoint and model
// name), leaving out those of the same call group (they are sent at the
// same time: none is earlier). Call with b.mu held; it remembers the
// request.
func (b *usageBook) cacheable(agent, model, key string, msgs []kit.ChatMessage, promptTokens int) (byAgent, byModel int) {
	if model == "" || len(msgs) == 0 || promptTokens <= 0 {
		return 0, 0
	}
	if b.recentByModel == nil {
		b.recentByModel = map[string][]recentCall{}
	}
	group := callGroup(key)
	total := 0
	for _, m := range msgs {
		total += len(m.Role) + len(m.Content)
	}
	sharedAgent, sharedModel := 0, 0
	for _, prev := range b.recentByModel[model] {
		if prev.group == group {
			continue
		}
		n := sharedPrefix(prev.msgs, msgs)
		sharedModel = max(sharedModel, n)
		if prev.agent == agent && agent != "" {
			sharedAgent = max(sharedAgent, n)
		}
	}
	recent := append(b.recentByModel[model], recentCall{recentRequest: recentRequest{group: group, msgs: msgs}, agent: agent})
	if len(recent) > modelWindow {
		recent = recent[len(recent)-modelWindow:]
	}
	b.recentByModel[model] = recent
	tokens := func(shared int) int {
		if total == 0 {
			return 0
		}
		n := int(math.Round(float64(promptTokens) * float64(shared) / float64(total)))
		if n < result.CacheMinTokens {
			return 0
		}
		return n
	}
	return tokens(sharedAgent), tokens(sharedModel)
}

// recentCall is one of the run's recent requests to a model, with its
// agent.
type recentCall struct {
	recentRequest
	agent string
}

// prefixTokens is how many of a request's prompt tokens repeat, from the
// start, one of the agent's recent requests (leaving out those of the same
// call group, the concurrent siblings of one node run: which of them
// finishes first is chance, and the count must not depend on it, so that a
// resumed run counts what an uninterrupted one does): what a provider's prompt
// cache, which matches requests by their leading bytes, can serve. It is
// the prompt tokens in proportion to the characters repeated (roles and
// contents, message by message, then the common start of the first message
// that differs). Call with b.mu held; it remembers the request.
func (b *usageBook) prefixTokens(agent, key string, msgs []kit.ChatMessage, promptTokens int) int {
	if agent == "" || len(msgs) == 0 {
		return 0
	}
	if b.recent == nil {
		b.recent = map[string][]recentRequest{}
	}
	group := callGroup(key)
	total := 0
	for _, m := range msgs {
		total += len(m.Role) + len(m.Content)
	}
	shared := 0
	for _, prev := range b.recent[agent] {
		if prev.group != group {
			shared = max(shared, sharedPrefix(prev.msgs, msgs))
		}
	}
	recent := append(b.recent[agent], recentRequest{group: group, msgs: msgs})
	if len(recent) > prefixWindow {
		recent = recent[len(recent)-prefixWindow:]
	}
	b.recent[agent] = recent
	if total == 0 {
		return 0
	}
	return int(math.Round(float64(promptTokens) * float64(shared) / float64(total)))
}

// sharedPrefix is the number of characters two requests share from their
// start: whole messages of the same role and content, then the common
// start of the first that differs (when its role is the same).
func sharedPrefix(a, b []kit.ChatMessage) int {
	n := 0
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].Role != b[i].Role {
			return n
		}
		n += len(a[i].Role)
		if a[i].Content == b[i].Content && a[i].Name == b[i].Name && len(a[i].ToolCalls) == 0 && len(b[i].ToolCalls) == 0 {
			n += len(a[i].Content)
			continue
		}
		x, y := a[i].Content, b[i].Content
		j := 0
		for j < len(x) && j < len(y) && x[j] == y[j] {
			j++
		}
		return n + j
	}
	return n
}

// recentRequest is one of an agent's recent requests.
type recentRequest struct {
	group string
	msgs  []kit.ChatMessage
}

// callGroup is a call key without its last part (agent, target, sample)
// and repair suffix: the calls one node run makes at once share it
// ("critique/round=1/a>b" and "critique/round=1/a>c"), while a
// conversation's turns ("panel/t3/ann", "panel/t5/ann") and a call's tool
// rounds ("KEY/tool1") do not.
func callGroup(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		if strings.HasPrefix(key[i+1:], "tool") {
			return key
		}
		return key[:i]
	}
	return key
}
