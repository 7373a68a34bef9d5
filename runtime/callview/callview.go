// Package callview reads a run directory's model calls back from its
// journal, one call at a time: the messages a call sent, the reply it got
// and where it came from, the fields parsed from it, its retries, repairs
// and rejections, tokens, cost and latency. `runner show` prints a call
// for terminals and `runner view` draws the same record as a page; both
// read only the run directory (run.json and journal.jsonl), never the
// engine.
//
// Secrets never reach the journal (the run redacts them before writing),
// so nothing here can show one.
package callview

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
)

// ToolCall is a function call a model asked for.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one message a call sent.
type Message struct {
	Role       string     `json:"role"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Chars      int        `json:"chars"`
	Digest     string     `json:"digest,omitempty"`
	// Text is the message's text: from the journal when the run logged
	// its prompts (--log-prompts), else found elsewhere in the journal
	// (a reply or a message with the same digest), else "".
	Text string `json:"text,omitempty"`
	// TextFrom says where Text came from: "journal" (logged with the
	// request), "digest" (the same text elsewhere in the journal) or ""
	// (not known: the run did not log its prompts).
	TextFrom string `json:"text_from,omitempty"`
}

// Retry is a failed attempt of a call that was tried again.
type Retry struct {
	Time    time.Time `json:"time"`
	Attempt int       `json:"attempt"`
	Status  int       `json:"status,omitempty"`
	Error   string    `json:"error"`
	WaitMS  int64     `json:"wait_ms,omitempty"`
}

// Repair is a reply the parser refused; the call was asked again under
// Next with the reason.
type Repair struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
	Mode    string `json:"mode,omitempty"`
	Next    string `json:"next,omitempty"`
}

// Rejection is a reply that broke a conversation's rules.
type Rejection struct {
	Attempt int    `json:"attempt"`
	Reasons string `json:"reasons"`
	// Next is the call that asked again, when the journal has it.
	Next string `json:"next,omitempty"`
}

// ToolRun is a tool an agent called, with its result, journaled under the
// call (or its tool rounds).
type ToolRun struct {
	Key       string `json:"key"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments,omitempty"`
	Result    string `json:"result,omitempty"`
}

// Call is everything the journal says of one model call.
type Call struct {
	Key    string `json:"key"`
	Index  int    `json:"index"` // 1-based, in journal order
	Node   string `json:"node,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Target string `json:"target,omitempty"`

	Model     string          `json:"model,omitempty"`      // as sent to the endpoint
	ModelName string          `json:"model_name,omitempty"` // the spec's name
	Endpoint  string          `json:"endpoint,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Tools     []string        `json:"tools,omitempty"`

	// Requested says whether the request was journaled: a reply from a
	// recording (--replay) or from the journal of an earlier attempt is
	// not asked again, so its messages are not known.
	Requested   bool       `json:"requested"`
	RequestedAt *time.Time `json:"requested_at,omitempty"`
	Messages    []Message  `json:"messages,omitempty"`
	PromptChars int        `json:"prompt_chars,omitempty"`
	// PromptsLogged is whether the run wrote prompt texts (--log-prompts).
	PromptsLogged bool `json:"prompts_logged"`
	// RequestFrom names the recording the request was read from, for a
	// replayed reply (see [Run.FillFromRecording]); "" for this run's own.
	RequestFrom   string `json:"request_from,omitempty"`
	RequestDigest string `json:"request_digest,omitempty"`

	Done        bool       `json:"done"`
	RespondedAt *time.Time `json:"responded_at,omitempty"`
	Reply       string     `json:"reply"`
	ToolCalls   []ToolCall `json:"tool_calls,omitempty"`
	Finish      string     `json:"finish_reason,omitempty"`
	ReplyModel  string     `json:"reply_model,omitempty"`
	// Source is where the reply came from: network, cache, shared (an
	// identical call in flight), replay (a recording), journal (this
	// run's journal, on resume).
	Source           string `json:"source"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens"`
	CacheWriteTokens int    `json:"cache_write_tokens,omitempty"`
	// Batch is the provider's batch that answered the call (--batch).
	Batch          string  `json:"batch,omitempty"`
	UsageEstimated bool    `json:"usage_estimated,omitempty"`
	LatencyMS      int64   `json:"latency_ms"`
	Attempts       int     `json:"attempts"`
	Cost           float64 `json:"cost"`
	Priced         bool    `json:"priced"`

	// Output is what was parsed from the reply (absent when nothing was:
	// a call whose reply is read elsewhere, or that failed to parse).
	Output   json.RawMessage `json:"output,omitempty"`
	Fallback json.RawMessage `json:"fallback,omitempty"`
	// FallbackReason is why the fallback output was used.
	FallbackReason string      `json:"fallback_reason,omitempty"`
	Repairs        []Repair    `json:"repairs,omitempty"`
	RepairOf       string      `json:"repair_of,omitempty"`
	Retries        []Retry     `json:"retries,omitempty"`
	Rejections     []Rejection `json:"rejections,omitempty"`
	Errors         []string    `json:"errors,omitempty"`
	ToolRuns       []ToolRun   `json:"tool_runs,omitempty"`
	// Messages recorded from this call's reply (ids such as "m3").
	Recorded []string `json:"recorded,omitempty"`
	// Stopped is set when the run finished, failed or was resumed after
	// the call was asked and before any reply to it.
	Stopped bool `json:"stopped,omitempty"`
}

// Run is the calls of one run directory.
type Run struct {
	Dir  string `json:"dir"`
	ID   string `json:"run_id"`
	Spec string `json:"spec"`
	// ReplayedFrom is the recording a --replay run was served from, as
	// it was given (a run directory or its journal).
	ReplayedFrom string `json:"replayed_from,omitempty"`
	// Provenance names the runner, spec digest and built-in library
	// versions that made the run (result.Manifest.Provenance).
	Provenance string  `json:"provenance,omitempty"`
	Calls      []*Call `json:"calls"`
	byKey      map[string]*Call
}

// Unanswered says why a call without a reply has none: "failed" (its
// error is journaled), "no reply" (the run ended, or was stopped, before
// the reply came: another call failed, or the run was killed) or "in
// flight" (the run is still going).
func (c *Call) Unanswered() string {
	switch {
	case c.Done:
		return ""
	case len(c.Errors) > 0:
		return "failed"
	case c.Stopped:
		return "no reply"
	}
	return "in flight"
}

// ErrNoRun is a directory that is not a run directory.
var ErrNoRun = errors.New("not a run directory (no run.json)")

// Read reads the calls of the run directory dir.
func Read(dir string) (*Run, error) {
	m, err := result.ReadManifest(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNoRun)
		}
		return nil, err
	}
	evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, ID: m.RunID, Spec: m.SpecName, ReplayedFrom: m.ReplayedFrom, Provenance: m.Provenance(), byKey: map[string]*Call{}}
	prices := map[string]*result.PriceInfo{}
	for name, mi := range m.Models {
		prices[name] = mi.Price
	}
	b := builder{run: r, prices: prices, texts: map[string]string{}, replyKey: map[string]string{}}
	for _, ev := range evs {
		b.event(ev)
	}
	b.finish(len(m.Models) == 1, m)
	return r, nil
}

// Keys lists the run's call keys in journal order.
func (r *Run) Keys() []string {
	out := make([]string, len(r.Calls))
	for i, c := range r.Calls {
		out[i] = c.Key
	}
	return out
}

// Call returns the call of a key.
func (r *Run) Call(key string) (*Call, bool) {
	c, ok := r.byKey[key]
	return c, ok
}

// Near lists the keys that contain key, or that key's parts lead to,
// for an error that offers what the user may have meant.
func (r *Run) Near(key string) []string {
	var out []string
	low := strings.ToLower(key)
	for _, k := range r.Keys() {
		if strings.Contains(strings.ToLower(k), low) {
			out = append(out, k)
		}
	}
	return out
}

type builder struct {
	run      *Run
	prices   map[string]*result.PriceInfo
	texts    map[string]string // text by digest
	replyKey map[string]string // call key by the digest of its reply
	logged   bool
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func (b *builder) call(key string) *Call {
	if c, ok := b.run.byKey[key]; ok {
		return c
	}
	c := &Call{Key: key, Index: len(b.run.Calls) + 1}
	c.Node = strings.SplitN(key, "/", 2)[0]
	b.run.byKey[key] = c
	b.run.Calls = append(b.run.Calls, c)
	return c
}

// known returns the call of a key only if it exists: events of other
// kinds share keys with steps that are not calls.
func (b *builder) known(key string) *Call { return b.run.byKey[key] }

func (b *builder) event(ev journal.Event) {
	switch ev.Type {
	case event.ModelRequest:
		var d struct {
			Agent     string          `json:"agent"`
			Endpoint  string          `json:"endpoint"`
			Model     string          `json:"model"`
			ModelName string          `json:"model_name"`
			Node      string          `json:"node"`
			Target    string          `json:"target"`
			Params    json.RawMessage `json:"params"`
			Chars     int             `json:"prompt_chars"`
			Digest    string          `json:"request_digest"`
			Tools     []string        `json:"tools"`
			Messages  []struct {
				Role       string     `json:"role"`
				Chars      int        `json:"chars"`
				Digest     string     `json:"digest"`
				Content    string     `json:"content"`
				Name       string     `json:"name"`
				ToolCallID string     `json:"tool_call_id"`
				ToolCalls  []ToolCall `json:"tool_calls"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		c := b.call(ev.Key)
		t := ev.Time
		c.Requested, c.RequestedAt, c.Stopped = true, &t, false
		c.Node, c.Agent, c.Target, c.Endpoint, c.Model, c.ModelName = d.Node, d.Agent, d.Target, d.Endpoint, d.Model, d.ModelName
		if len(d.Params) > 0 && string(d.Params) != "{}" {
			c.Params = d.Params
		}
		c.PromptChars, c.RequestDigest, c.Tools = d.Chars, d.Digest, d.Tools
		c.Messages = c.Messages[:0]
		for _, m := range d.Messages {
			msg := Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls, Chars: m.Chars, Digest: m.Digest}
			switch {
			case m.Content != "":
				msg.Text, msg.TextFrom = m.Content, "journal"
				b.texts[m.Digest] = m.Content
				b.logged = true
				c.PromptsLogged = true
			case m.Chars == 0 && m.Digest != "":
				// An empty text (a tool call's message) is known
				// whether or not prompts are logged.
				msg.TextFrom = "journal"
			}
			c.Messages = append(c.Messages, msg)
		}
	case event.ModelResponse:
		var d struct {
			Content          string     `json:"content"`
			ToolCalls        []ToolCall `json:"tool_calls"`
			FinishReason     string     `json:"finish_reason"`
			Model            string     `json:"model"`
			PromptTokens     int        `json:"prompt_tokens"`
			CompletionTokens int        `json:"completion_tokens"`
			CachedTokens     int        `json:"cached_tokens"`
			CacheWriteTokens int        `json:"cache_write_tokens"`
			Batch            string     `json:"batch"`
			UsageEstimated   bool       `json:"usage_estimated"`
			LatencyMS        int64      `json:"latency_ms"`
			Attempts         int        `json:"attempts"`
			Source           string     `json:"source"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		c := b.call(ev.Key)
		t := ev.Time
		c.Done, c.RespondedAt = true, &t
		c.Reply, c.ToolCalls, c.Finish, c.ReplyModel = d.Content, d.ToolCalls, d.FinishReason, d.Model
		c.PromptTokens, c.CompletionTokens, c.CachedTokens, c.UsageEstimated = d.PromptTokens, d.CompletionTokens, d.CachedTokens, d.UsageEstimated
		c.LatencyMS, c.Attempts, c.Source = d.LatencyMS, d.Attempts, d.Source
		c.CacheWriteTokens = d.CacheWriteTokens
		c.Batch = d.Batch
		if c.Source == "" {
			c.Source = "network"
		}
		dg := digest(d.Content)
		b.texts[dg] = d.Content
		b.replyKey[dg] = ev.Key
	case event.Retry:
		var d Retry
		_ = json.Unmarshal(ev.Data, &d)
		d.Time = ev.Time
		c := b.call(ev.Key)
		c.Retries = append(c.Retries, d)
	case event.ModelError:
		var d struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		c := b.call(ev.Key)
		c.Errors = append(c.Errors, d.Error)
	case event.Output:
		c := b.known(ev.Key)
		if c == nil {
			return
		}
		// A node journals its output under the key it asked with; when
		// the model called tools first, the reply parsed is the last
		// tool round's.
		for n := 1; ; n++ {
			next := b.known(fmt.Sprintf("%s/tool%d", ev.Key, n))
			if next == nil {
				break
			}
			c = next
		}
		var d struct {
			Output        json.RawMessage `json:"output"`
			OutputIsReply bool            `json:"output_is_reply"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		if d.OutputIsReply {
			d.Output, _ = json.Marshal(strings.TrimSpace(c.Reply))
		}
		c.Output = d.Output
	case event.Repair:
		c := b.known(ev.Key)
		if c == nil {
			return
		}
		var d Repair
		_ = json.Unmarshal(ev.Data, &d)
		if d.Attempt == 0 {
			d.Attempt = len(c.Repairs) + 1
		}
		d.Next = kit.RepairKey(kit.RepairChain(ev.Key), d.Attempt)
		c.Repairs = append(c.Repairs, d)
	case event.Fallback:
		c := b.known(ev.Key)
		if c == nil {
			return
		}
		var d struct {
			Error  string          `json:"error"`
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		c.Fallback, c.FallbackReason = d.Output, d.Error
	case event.Rejected:
		c := b.known(ev.Key)
		if c == nil {
			return
		}
		var d Rejection
		_ = json.Unmarshal(ev.Data, &d)
		d.Next = kit.RepairKey(kit.RepairChain(ev.Key), d.Attempt)
		c.Rejections = append(c.Rejections, d)
	case event.ToolCall:
		var d struct {
			Tool      string `json:"tool"`
			Arguments any    `json:"arguments"`
			Result    any    `json:"result"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		tr := ToolRun{Key: ev.Key, Tool: d.Tool, Arguments: text(d.Arguments), Result: text(d.Result)}
		if tr.Result != "" {
			// The result goes back to the model as a tool message.
			b.texts[digest(tr.Result)] = tr.Result
		}
		// A tool round's key is CALL/toolN; the round's call and the
		// call it continues both list it.
		for _, k := range []string{ev.Key, parentOfTool(ev.Key)} {
			if c := b.known(k); c != nil {
				c.ToolRuns = append(c.ToolRuns, tr)
			}
		}
	case event.RunFinished, event.RunResumed:
		for _, c := range b.run.Calls {
			if !c.Done {
				c.Stopped = true
			}
		}
	case event.Message:
		var d struct {
			ID            string `json:"id"`
			Content       string `json:"content"`
			ContentDigest string `json:"content_digest"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		dg := d.ContentDigest
		if dg == "" && d.Content != "" {
			dg = digest(d.Content)
			b.texts[dg] = d.Content
		}
		if k, ok := b.replyKey[dg]; ok && dg != "" {
			if c := b.known(k); c != nil {
				c.Recorded = append(c.Recorded, d.ID)
			}
		}
	}
}

func parentOfTool(key string) string {
	i := strings.LastIndex(key, "/")
	if i < 0 || !strings.HasPrefix(key[i+1:], "tool") {
		return ""
	}
	if _, err := strconv.Atoi(key[i+5:]); err != nil {
		return ""
	}
	return key[:i]
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		data, _ := json.Marshal(x)
		return string(data)
	}
}

// finish fills in what needs the whole journal: texts known by digest,
// costs, which call a repair continues.
func (b *builder) finish(oneModel bool, m result.Manifest) {
	var only *result.PriceInfo
	if oneModel {
		for _, mi := range m.Models {
			only = mi.Price
		}
	}
	for _, c := range b.run.Calls {
		c.PromptsLogged = c.PromptsLogged || (b.logged && c.Requested)
		for i := range c.Messages {
			msg := &c.Messages[i]
			if msg.TextFrom == "" && msg.Digest != "" {
				if t, ok := b.texts[msg.Digest]; ok {
					msg.Text, msg.TextFrom = t, "digest"
				}
			}
		}
		if c.Agent == "" {
			c.Agent = agentOfKey(c.Key)
		}
		price := b.prices[c.ModelName]
		if c.ModelName == "" {
			price = only
		}
		if price != nil && c.Done {
			c.Cost, c.Priced = price.CostWritten(c.PromptTokens, c.CachedTokens, c.CacheWriteTokens, c.CompletionTokens)*kit.Reply{Batch: c.Batch}.PriceFactor(), true
		}
		for _, r := range c.Repairs {
			if n := b.known(r.Next); n != nil {
				n.RepairOf = c.Key
			}
		}
		for i, r := range c.Rejections {
			if n := b.known(r.Next); n != nil {
				n.RepairOf = c.Key
			} else {
				c.Rejections[i].Next = ""
			}
		}
	}
}

// agentOfKey guesses a call's agent from its key when no request was
// journaled: the last part that is neither a scope (name=value) nor a
// tool round.
func agentOfKey(key string) string {
	parts := strings.Split(key, "/")
	for i := len(parts) - 1; i > 0; i-- {
		p := strings.SplitN(strings.SplitN(parts[i], "#", 2)[0], ">", 2)[0]
		if p == "" || strings.Contains(p, "=") || parentOfTool("x/"+p) != "" {
			continue
		}
		return p
	}
	return ""
}

// Summary is one line per call for a list.
type Summary struct {
	Index            int     `json:"index"`
	Key              string  `json:"key"`
	Agent            string  `json:"agent,omitempty"`
	Source           string  `json:"source"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	LatencyMS        int64   `json:"latency_ms"`
	Cost             float64 `json:"cost"`
	Priced           bool    `json:"priced"`
	Done             bool    `json:"done"`
	Repairs          int     `json:"repairs,omitempty"`
	Retries          int     `json:"retries,omitempty"`
	Rejections       int     `json:"rejections,omitempty"`
}

// Summaries lists the run's calls, one summary each.
func (r *Run) Summaries() []Summary {
	out := make([]Summary, len(r.Calls))
	for i, c := range r.Calls {
		out[i] = Summary{Index: c.Index, Key: c.Key, Agent: c.Agent, Source: c.Source, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
			LatencyMS: c.LatencyMS, Cost: c.Cost, Priced: c.Priced, Done: c.Done, Repairs: len(c.Repairs), Retries: len(c.Retries),
			Rejections: len(c.Rejections)}
		if !c.Done {
			out[i].Source = c.Unanswered()
		}
	}
	return out
}

// Find resolves what a user typed for a call: a key, or its number in the
// list (1-based, as `runner show RUN` prints it).
func (r *Run) Find(arg string) (*Call, error) {
	if c, ok := r.byKey[arg]; ok {
		return c, nil
	}
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(r.Calls) {
		return r.Calls[n-1], nil
	}
	near := r.Near(arg)
	if len(near) == 1 {
		return r.byKey[near[0]], nil
	}
	msg := fmt.Sprintf("run %s has no call %q", r.ID, arg)
	if len(near) > 1 {
		sort.Strings(near)
		if len(near) > 8 {
			near = append(near[:8], "…")
		}
		msg += "; did you mean one of: " + strings.Join(near, ", ")
	} else {
		msg += fmt.Sprintf(" (it has %d calls; `runner show %s` lists them)", len(r.Calls), r.Dir)
	}
	return nil, errors.New(msg)
}

// RecordingDir is the run directory of the recording a --replay run was
// served from, relative paths taken from base (the folder the run was
// started in, as far as the reader can tell); "" when there is none.
func (r *Run) RecordingDir(base string) string {
	p := r.ReplayedFrom
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	if filepath.Base(p) == "journal.jsonl" {
		p = filepath.Dir(p)
	}
	return p
}

// FillFromRecording gives the replayed calls, whose requests this run
// did not journal, the requests of the recording's calls of the same key:
// what the recorded reply was the answer to.
func (r *Run) FillFromRecording(rec *Run) int {
	n := 0
	for _, c := range r.Calls {
		if c.Requested || c.Source != "replay" {
			continue
		}
		o, ok := rec.byKey[c.Key]
		if !ok || !o.Requested {
			continue
		}
		c.Messages, c.PromptsLogged, c.PromptChars = o.Messages, o.PromptsLogged, o.PromptChars
		c.Model, c.ModelName, c.Endpoint, c.Params, c.Tools = o.Model, o.ModelName, o.Endpoint, o.Params, o.Tools
		if c.Node == "" || c.Agent == "" {
			c.Node, c.Agent = o.Node, o.Agent
		}
		c.Target = o.Target
		c.RequestFrom = rec.Dir
		n++
	}
	return n
}
