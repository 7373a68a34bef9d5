package view

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/report"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// Event is a journal event as the page reads it: the journal's own fields,
// and data made ready to show. A message's text is resolved when the
// journal refers to an earlier copy by digest, and rendered to HTML; a
// call's node, agent, round and cost are filled in; replies' texts are left
// out except where they are shown (rejected replies).
type Event struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	Key  string    `json:"key,omitempty"`
	Data any       `json:"data,omitempty"`
}

// Message is a recorded message ready to show.
type Message struct {
	value.Message
	HTML string `json:"html"`
	// Call is the key of the model call whose reply made the message,
	// when it can be told: the call page links back to it.
	Call string `json:"call,omitempty"`
}

// Call is what the page knows of a model call.
type Call struct {
	Node             string  `json:"node"`
	Agent            string  `json:"agent,omitempty"`
	Target           string  `json:"target,omitempty"`
	Model            string  `json:"model,omitempty"`
	Round            int     `json:"round,omitempty"`
	Goal             string  `json:"goal,omitempty"`
	PromptChars      int     `json:"prompt_chars,omitempty"`
	PromptTokens     int     `json:"prompt_tokens,omitempty"`
	CompletionTokens int     `json:"completion_tokens,omitempty"`
	LatencyMS        int64   `json:"latency_ms,omitempty"`
	Attempts         int     `json:"attempts,omitempty"`
	FinishReason     string  `json:"finish_reason,omitempty"`
	Source           string  `json:"source,omitempty"`
	Cost             float64 `json:"cost,omitempty"`
	Priced           bool    `json:"priced"`
	// CachedTokens are the prompt tokens the provider served from its
	// cache (at the cached price in Cost); BuiltinPrice is the date of the
	// built-in list price Cost is at, when the spec gave the model none.
	CachedTokens int    `json:"cached_tokens,omitempty"`
	BuiltinPrice string `json:"builtin_price,omitempty"`
	ToolCalls    int    `json:"tool_calls,omitempty"`
	// Human marks the turn of a person at a seat (human: true): asked of
	// the person, no model call.
	Human bool `json:"human,omitempty"`
	// Started is when the call was journaled as requested, for its wait:
	// the time between that and its response beyond the endpoint's
	// latency went to queues, rate limits and retries.
	Started *time.Time `json:"started,omitempty"`
}

// normalizer turns journal events into page events. It reads a journal
// from its start, as its state (texts by digest, calls by key) depends on
// everything before.
type normalizer struct {
	prices   map[string]*result.PriceInfo // by model name (the spec's)
	loops    map[string]bool              // loop variables
	foreachs map[string]bool              // foreach variables
	byDigest map[string]string            // text by the digest messages use
	keyOf    map[string]string            // call key of a reply, by digest
	outputs  map[string]json.RawMessage   // parsed output by call key
	replies  map[string]string            // reply text by call key
	calls    map[string]*Call             // by call key
	// unclaimed are the keys of replies no message was matched to yet,
	// by node and agent, in the order they came (a repair's reply
	// stands in for the reply it repairs).
	unclaimed map[string][]string
}

func newNormalizer(m result.Manifest, plan *spec.Plan) *normalizer {
	n := &normalizer{
		prices: map[string]*result.PriceInfo{}, loops: map[string]bool{}, foreachs: map[string]bool{},
		byDigest: map[string]string{}, keyOf: map[string]string{}, outputs: map[string]json.RawMessage{},
		replies: map[string]string{}, calls: map[string]*Call{}, unclaimed: map[string][]string{},
	}
	for name, mi := range m.Models {
		n.prices[name] = mi.Price
	}
	if plan != nil {
		var walk func([]*spec.FlowStep)
		walk = func(steps []*spec.FlowStep) {
			for _, s := range steps {
				switch s.Kind {
				case spec.StepLoop:
					n.loops[s.As] = true
				case spec.StepForeach:
					n.foreachs[s.As] = true
				}
				walk(s.Do)
				walk(s.Else)
			}
		}
		walk(plan.Flow)
	} else {
		n.loops["round"] = true
		n.foreachs["goal"] = true
	}
	return n
}

// digest is how the journal names a text it does not repeat.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// keyParts reads a call key: the node, the scope's loop values, and the
// agent the call is for.
func (n *normalizer) keyParts(key string) (node string, round int, goal, agent string) {
	parts := strings.Split(key, "/")
	node = parts[0]
	rest := parts[1:]
	for len(rest) > 0 {
		name, value, ok := strings.Cut(rest[0], "=")
		if !ok {
			break
		}
		if n.loops[name] {
			if r, err := strconv.Atoi(strings.SplitN(value, "#", 2)[0]); err == nil {
				round = r
			}
		}
		if n.foreachs[name] {
			if _, err := strconv.Atoi(value); err != nil {
				goal = strings.SplitN(value, "#", 2)[0]
			}
		}
		rest = rest[1:]
	}
	for i := len(rest) - 1; i >= 0; i-- {
		a := strings.SplitN(rest[i], "#", 2)[0]
		a = strings.SplitN(a, ">", 2)[0]
		if a != "" && !strings.HasPrefix(a, "tool") {
			agent = a
			break
		}
	}
	return
}

// call returns the call of a key, made from the key when no request was
// journaled (a replayed reply).
func (n *normalizer) call(key string) *Call {
	if c, ok := n.calls[key]; ok {
		return c
	}
	node, round, goal, agent := n.keyParts(key)
	c := &Call{Node: node, Round: round, Goal: goal, Agent: agent}
	n.calls[key] = c
	return c
}

// event normalizes one journal event; false for events the page does not
// use.
func (n *normalizer) event(ev journal.Event) (Event, bool) {
	out := Event{Seq: ev.Seq, Time: ev.Time, Type: string(ev.Type), Key: ev.Key}
	switch ev.Type {
	case event.ModelRequest:
		var req struct {
			Agent       string `json:"agent"`
			Node        string `json:"node"`
			Target      string `json:"target"`
			ModelName   string `json:"model_name"`
			PromptChars int    `json:"prompt_chars"`
			Human       bool   `json:"human"`
		}
		_ = json.Unmarshal(ev.Data, &req)
		_, round, goal, _ := n.keyParts(ev.Key)
		t := ev.Time
		c := &Call{Node: req.Node, Agent: req.Agent, Target: req.Target, Model: req.ModelName, Round: round, Goal: goal, PromptChars: req.PromptChars, Started: &t, Human: req.Human}
		n.calls[ev.Key] = c
		out.Data = c
	case event.ModelResponse:
		var rep struct {
			Content          string            `json:"content"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
			FinishReason     string            `json:"finish_reason"`
			PromptTokens     int               `json:"prompt_tokens"`
			CompletionTokens int               `json:"completion_tokens"`
			CachedTokens     int               `json:"cached_tokens"`
			CacheWriteTokens int               `json:"cache_write_tokens"`
			Batch            string            `json:"batch"`
			LatencyMS        int64             `json:"latency_ms"`
			Attempts         int               `json:"attempts"`
			Source           string            `json:"source"`
			Human            bool              `json:"human"`
		}
		_ = json.Unmarshal(ev.Data, &rep)
		n.replies[ev.Key] = rep.Content
		d := digest(rep.Content)
		n.byDigest[d] = rep.Content
		n.keyOf[d] = ev.Key
		c := *n.call(ev.Key)
		n.unclaim(c.Node, c.Agent, ev.Key)
		c.PromptTokens, c.CompletionTokens, c.LatencyMS, c.Attempts = rep.PromptTokens, rep.CompletionTokens, rep.LatencyMS, rep.Attempts
		c.CachedTokens = rep.CachedTokens
		c.FinishReason, c.Source, c.ToolCalls = rep.FinishReason, rep.Source, len(rep.ToolCalls)
		c.Human = c.Human || rep.Human
		if p := n.prices[c.Model]; p != nil {
			c.Cost = p.CostWritten(rep.PromptTokens, rep.CachedTokens, rep.CacheWriteTokens, rep.CompletionTokens) * kit.Reply{Batch: rep.Batch}.PriceFactor()
			c.Priced, c.BuiltinPrice = true, p.Builtin
		}
		out.Data = c
	case event.Output:
		var o struct {
			Output        json.RawMessage `json:"output"`
			OutputIsReply bool            `json:"output_is_reply"`
		}
		_ = json.Unmarshal(ev.Data, &o)
		if o.OutputIsReply {
			text, _ := json.Marshal(strings.TrimSpace(n.replies[ev.Key]))
			o.Output = text
		}
		n.outputs[ev.Key] = o.Output
		return out, false
	case event.Message:
		var m struct {
			value.Message
			ContentDigest string `json:"content_digest"`
		}
		_ = json.Unmarshal(ev.Data, &m)
		if m.ContentDigest != "" {
			m.Content = n.byDigest[m.ContentDigest]
			if key, ok := n.keyOf[m.ContentDigest]; ok && m.Output == nil {
				if raw, ok := n.outputs[key]; ok {
					_ = json.Unmarshal(raw, &m.Output)
				}
			}
		} else if m.Content != "" {
			n.byDigest[digest(m.Content)] = m.Content
		}
		out.Data = Message{Message: m.Message, HTML: n.html(m.Content), Call: n.claim(m.Message, m.ContentDigest)}
	case event.Rejected:
		var r struct {
			Speaker string `json:"speaker"`
			Reasons string `json:"reasons"`
			Attempt int    `json:"attempt"`
		}
		_ = json.Unmarshal(ev.Data, &r)
		c := n.call(ev.Key)
		text := n.replies[ev.Key]
		out.Data = map[string]any{"agent": r.Speaker, "reasons": r.Reasons, "attempt": r.Attempt, "node": c.Node,
			"goal": c.Goal, "round": c.Round, "content": text, "html": n.html(text)}
	case event.Retry, event.ModelError, event.Repair, event.Fallback:
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		if d == nil {
			d = map[string]any{}
		}
		c := n.call(ev.Key)
		d["node"], d["agent"], d["round"], d["goal"] = c.Node, c.Agent, c.Round, c.Goal
		out.Data = d
	case event.RunFinished:
		var d struct {
			Status     string             `json:"status"`
			Outputs    map[string]any     `json:"outputs"`
			DurationMS int64              `json:"duration_ms"`
			Conclusion *result.Conclusion `json:"conclusion"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		htmls := map[string]string{}
		for k, v := range d.Outputs {
			if s, ok := v.(string); ok {
				htmls[k] = n.html(s)
			}
		}
		out.Data = map[string]any{"status": d.Status, "outputs": d.Outputs, "outputs_html": htmls, "duration_ms": d.DurationMS, "conclusion": d.Conclusion.Summary()}
	case event.ToolCall:
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		if s, ok := d["result"].(string); ok && len(s) > 4000 {
			d["result"] = s[:4000] + "…"
		}
		out.Data = d
	default:
		if len(ev.Data) > 0 {
			out.Data = json.RawMessage(ev.Data)
		}
	}
	return out, true
}

// unclaim notes a reply that a message may come from.
func (n *normalizer) unclaim(node, agent, key string) {
	k := node + "\x00" + agent
	list := n.unclaimed[k]
	if kit.IsRepair(key) {
		base := kit.RepairChain(key)
		for i, x := range list {
			if kit.RepairChain(x) == base {
				list[i] = key
				return
			}
		}
	}
	if base, _, ok := strings.Cut(key, "/tool"); ok {
		for i, x := range list {
			if x == base || strings.HasPrefix(x, base+"/tool") {
				list[i] = key
				return
			}
		}
	}
	n.unclaimed[k] = append(list, key)
}

// claim finds the call a recorded message came from: the reply with the
// same text, else the first unclaimed reply of its node and agent (to its
// addressee, when it has one).
func (n *normalizer) claim(m value.Message, contentDigest string) string {
	if m.Carried || m.Record == "interjection" {
		return ""
	}
	d := contentDigest
	if d == "" && m.Content != "" {
		d = digest(m.Content)
	}
	k := m.Node + "\x00" + m.From
	list := n.unclaimed[k]
	pick := -1
	if key, ok := n.keyOf[d]; ok {
		for i, x := range list {
			if x == key {
				pick = i
			}
		}
		if pick < 0 {
			return key
		}
	}
	if pick < 0 && m.To != "" {
		for i, x := range list {
			if strings.Contains(x, m.From+">"+m.To) {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		if len(list) == 0 {
			return ""
		}
		pick = 0
	}
	key := list[pick]
	n.unclaimed[k] = append(list[:pick:pick], list[pick+1:]...)
	return key
}

// html renders a contribution as the report does, for the page.
func (n *normalizer) html(text string) string {
	if text == "" {
		return ""
	}
	h, err := report.Fragment(report.Block(text, 3))
	if err != nil {
		return "<pre>" + esc(text) + "</pre>"
	}
	return h
}

// tail reads a journal as it grows: complete lines only, from where it
// stopped.
type tail struct {
	path   string
	offset int64
	rest   []byte // a line not complete yet
}

// errShrunk means the journal became shorter (a resume cut a torn line):
// read it again from the start.
var errShrunk = &os.PathError{Op: "follow", Err: os.ErrInvalid}

// next returns the events appended since the last call.
func (t *tail) next() ([]journal.Event, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() < t.offset {
		return nil, errShrunk
	}
	if info.Size() == t.offset {
		return nil, nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, info.Size()-t.offset))
	if err != nil {
		return nil, err
	}
	t.offset += int64(len(data))
	data = append(t.rest, data...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		t.rest = data
		return nil, nil
	}
	lines := data[:end+1]
	t.rest = append([]byte(nil), data[end+1:]...)
	var evs []journal.Event
	_, err = journal.Scan(bytes.NewReader(lines), func(e journal.Event) error {
		evs = append(evs, e)
		return nil
	})
	return evs, err
}
