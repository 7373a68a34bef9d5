package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/spec"
)

// Placeholders is a dry run's last stage: it answers every call, without a
// model, with a stand-in of the shape the call expects (StandIn), and
// counts the call's tokens: its prompt as rendered, with every stand-in it
// quotes counted as the reply it stands for, and a reply of the model's
// max_tokens (or ReplyTokens).
type Placeholders struct {
	// ReplyTokens is the size assumed of a reply from a model that sets no
	// max_tokens.
	ReplyTokens int
	// ByPrompt labels each stand-in with a digest of its prompt instead of
	// the call's key, so that identical requests get identical stand-ins:
	// a server that sees only requests (an end-to-end test serving the
	// real binary) can then answer each with the dry run's stand-in.
	ByPrompt bool
	// Long answers with lists as long as their schemas allow (up to three
	// items; see StandInLong), not as short.
	Long bool

	mu        sync.Mutex
	answered  []Answered
	standsFor map[string]int // stand-in label -> tokens of the reply it stands for
	// ratios are, per model, tokens per byte measured with the tokenizer
	// on the first texts counted.
	ratios map[string]*ratio
}

// ratio is how many tokens a model's tokenizer makes of a byte of text,
// measured on a sample.
type ratio struct {
	bytes, tokens int
}

// sampleBytes is how much text of each model a dry run counts with the
// tokenizer; the rest is counted at the tokens per byte measured on it.
// The tokenizer reads about a megabyte and a half a second: counting every
// prompt would cost a dry run far more than the run it stands for.
const sampleBytes = 64 << 10

// Answered is a call a Placeholders stage answered.
type Answered struct {
	Key, Node, Agent, Target string
	// Model is the model configuration's name, ModelID the model's.
	Model, ModelID string
	Messages       []kit.ChatMessage
	// Reply is the stand-in the call was answered with.
	Reply string
	// PromptTokens and CompletionTokens are the call's estimated usage.
	PromptTokens, CompletionTokens int
	// Bound is how many requests the call may take at worst: its repairs
	// and tool round trips included.
	Bound int
	// Human says a person takes the turn (kit.Call.Seat): no model is
	// called, and its tokens cost nothing.
	Human bool
}

// standInPrefix starts every stand-in label, so prompts that quote
// stand-ins can be found and charged for the replies they stand for.
const standInPrefix = "<reply to "

// EstimatedPrompt is what a dry run renders in place of a prompt once it
// has rendered enough in full: a marker holding the prompt's estimated
// size in characters, which the stage counts as that many.
func EstimatedPrompt(chars int) string {
	return "\x00estimated prompt of " + strconv.Itoa(chars) + " characters\x00"
}

// Complete implements Stage.
func (p *Placeholders) Complete(_ context.Context, c *Call) (kit.Reply, Source, error) {
	label := "reply to " + c.Key
	if p.ByPrompt {
		label = "reply to " + promptLabel(c.Kit.Messages)
	}
	text := standIn(c.Kit.Shape, label, p.Long, false)
	model := c.Model
	reply := p.ReplyTokens
	if reply <= 0 {
		reply = 500
	}
	if model != nil && model.MaxTokens > 0 {
		reply = model.MaxTokens
	}
	// As tokens.CountChat counts a request: a few tokens a message and for
	// the reply's start, plus each message's text.
	prompt := tokens.CountChat("", make([]string, len(c.Kit.Messages))...)
	for _, m := range c.Kit.Messages {
		prompt += p.textTokens(model, m.Content)
	}
	bound := (1 + max(0, c.Kit.Repairs)) * (1 + max(0, c.Kit.ToolRounds))
	p.mu.Lock()
	if p.standsFor == nil {
		p.standsFor = map[string]int{}
	}
	p.standsFor["<"+label+">"] = reply
	a := Answered{Key: c.Key, Node: c.Node, Agent: c.Agent, Target: c.Kit.Target, Messages: c.Kit.Messages, Reply: text,
		PromptTokens: prompt, CompletionTokens: reply, Bound: bound, Human: c.Kit.Seat()}
	if model != nil {
		a.Model, a.ModelID = model.Name, model.Model
	}
	p.answered = append(p.answered, a)
	p.mu.Unlock()
	return kit.Reply{Content: text, PromptTokens: prompt, CompletionTokens: reply, UsageEstimated: true, Attempts: 1}, Placeholder, nil
}

// Answered returns the calls answered so far, in the order answered.
func (p *Placeholders) Answered() []Answered {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Answered(nil), p.answered...)
}

// maxCounted is the longest text counted with the tokenizer; longer ones
// are counted by a prefix of this size, scaled.
const maxCounted = 16 << 10

// textTokens counts a prompt text's tokens, stand-ins it quotes counted as
// the replies they stand for, estimated prompts as their size.
func (p *Placeholders) textTokens(model *spec.ModelPlan, text string) int {
	id := ""
	if model != nil {
		id = model.Model
	}
	extra := 0
	if i := strings.Index(text, "\x00estimated prompt of "); i >= 0 {
		rest := text[i+len("\x00estimated prompt of "):]
		if n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ' ')]); err == nil {
			extra += n / 4
		}
		text = text[:i]
	}
	extra += p.quoted(text, func(s string) int { return len(s) / 4 })
	return extra + p.count(id, text)
}

// count counts a text's tokens: with the tokenizer while the model's sample
// is being measured, then at the rate measured.
func (p *Placeholders) count(model, text string) int {
	if text == "" {
		return 0
	}
	p.mu.Lock()
	if p.ratios == nil {
		p.ratios = map[string]*ratio{}
	}
	r := p.ratios[model]
	if r == nil {
		r = &ratio{}
		p.ratios[model] = r
	}
	if r.bytes >= sampleBytes {
		n := (len(text)*r.tokens + r.bytes/2) / r.bytes
		p.mu.Unlock()
		return n
	}
	p.mu.Unlock()
	sample := text
	if len(sample) > maxCounted {
		sample = sample[:maxCounted]
	}
	n := tokens.Count(model, sample)
	p.mu.Lock()
	r.bytes += len(sample)
	r.tokens += n
	p.mu.Unlock()
	if len(sample) < len(text) {
		n = n * len(text) / len(sample)
	}
	return n
}

// quoted is what the stand-ins a text quotes add beyond their own size, in
// the unit size measures.
func (p *Placeholders) quoted(text string, size func(string) int) int {
	if !strings.Contains(text, standInPrefix) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	extra := 0
	for rest := text; ; {
		i := strings.Index(rest, standInPrefix)
		if i < 0 {
			break
		}
		rest = rest[i:]
		j := strings.IndexByte(rest, '>')
		if j < 0 {
			break
		}
		label := rest[:j+1]
		if n, ok := p.standsFor[label]; ok {
			extra += max(0, n-size(label))
		}
		rest = rest[j+1:]
	}
	return extra
}

// Size is how many characters a text stands for: stand-in replies it
// quotes count as replies of the size assumed for them (four characters a
// token). A dry run measures histories with it, so that summaries start
// when real replies would have made the history long enough.
func (p *Placeholders) Size(text string) int {
	return len(text) + p.quoted(text, func(s string) int { return len(s) / 4 })*4
}

// promptLabel is a short digest of a prompt's roles and texts.
func promptLabel(ms []kit.ChatMessage) string {
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	return "prompt " + hex.EncodeToString(h.Sum(nil)[:6])
}
