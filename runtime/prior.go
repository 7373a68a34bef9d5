package runtime

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/mcpclient"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// What a run's journal says of its earlier attempts, read back for a
// resume: the replies and requests it journaled, the tools it ran, the
// answers it was given, the calls nodes completed without, and (with the
// dead-end rule, deadend.go) how its last attempt ended.

// prior is what a run's journal says of its earlier attempts.
type prior struct {
	replies  map[string]kit.Reply
	requests map[string]requestRecord
	// models are the model names of journaled requests by call key, and
	// network the keys whose reply came from an endpoint (for the budget).
	models  map[string]string
	nodes   map[string]string
	network []string
	answers map[string]string
	tools   *toolBook
	mcp     map[string]mcpclient.Listing
	already map[string]int
	// absent are the failed calls nodes completed without (see leftOut).
	absent map[string]absentRecord
	// threads are the journaled prompts of thread turns (see threads.sent).
	threads   map[string][]string
	completed bool
	// last is the last attempt (see attempt); order the keys of journaled
	// replies in journal order, agents their agents, fresh their resample
	// numbers (see calls.Call.Resample).
	last   attempt
	order  []string
	agents map[string]string
	fresh  map[string]int
	// fallbacks are the chains of calls (by first key) whose last reply
	// gave way to a fallback output (see noteFallback).
	fallbacks map[string]bool
}

// readPrior reads a journal for a resume.
func readPrior(path string) (*prior, error) {
	events, err := journal.Read(path)
	if err != nil {
		return nil, err
	}
	p := &prior{
		replies: map[string]kit.Reply{}, requests: map[string]requestRecord{}, models: map[string]string{},
		nodes: map[string]string{}, answers: map[string]string{}, tools: &toolBook{}, already: map[string]int{},
		agents: map[string]string{}, fresh: map[string]int{}, fallbacks: map[string]bool{}, last: attempt{unanswered: map[string]bool{}},
		absent: map[string]absentRecord{},
	}
	for _, ev := range events {
		p.already[string(ev.Type)+"\x00"+ev.Key]++
		p.last.note(ev)
		p.noteFallback(ev.Type, ev.Key)
		switch ev.Type {
		case event.ModelRequest:
			var req struct {
				requestRecord
				Node      string `json:"node"`
				Agent     string `json:"agent"`
				ModelName string `json:"model_name"`
				Resample  int    `json:"resample"`
			}
			if err := json.Unmarshal(ev.Data, &req); err != nil {
				return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
			}
			p.requests[ev.Key], p.models[ev.Key], p.nodes[ev.Key] = req.requestRecord, req.ModelName, req.Node
			p.agents[ev.Key] = req.Agent
			if req.Resample > 0 {
				p.fresh[ev.Key] = req.Resample
			}
		case event.ModelResponse:
			var rep replayedReply
			if err := json.Unmarshal(ev.Data, &rep); err != nil {
				return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
			}
			if _, seen := p.replies[ev.Key]; !seen {
				p.order = append(p.order, ev.Key)
			}
			p.replies[ev.Key] = rep.Reply
			if rep.Source == "" {
				p.network = append(p.network, ev.Key)
			}
		case event.Answer:
			var a answerEvent
			if err := json.Unmarshal(ev.Data, &a); err != nil {
				return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
			}
			p.answers[ev.Key] = a.Answer
		case event.RunFinished:
			var fin struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(ev.Data, &fin)
			p.completed = result.Finished(fin.Status)
		case "run_resumed":
			// A resume after the run completed (to write its records) has
			// not finished until it says so again.
			p.completed = false
		}
	}
	if err := readToolCalls(events, p.tools); err != nil {
		return nil, err
	}
	if err := readAbsent(events, p.absent); err != nil {
		return nil, err
	}
	if p.mcp, err = mcpclient.ReadJournal(events); err != nil {
		return nil, err
	}
	if p.threads, err = threadPrompts(events); err != nil {
		return nil, err
	}
	return p, nil
}

// spent is what the journaled calls that went to an endpoint spent, by
// node, priced with plan's models.
func (p *prior) spent(plan *spec.Plan) map[string]calls.Spend {
	out := map[string]calls.Spend{}
	for _, key := range p.network {
		rep := p.replies[key]
		c := &calls.Call{Key: key, Model: plan.Models[p.models[key]]}
		node := p.nodes[key]
		if node == "" {
			node, _, _ = strings.Cut(key, "/")
		}
		out[node] = out[node].Plus(calls.Actual(c, rep))
	}
	return out
}

// toolRecord is a tool call as journaled: what the model asked and what it
// was answered, with the context files read to answer it.
type toolRecord struct {
	Agent     string         `json:"agent"`
	Tool      string         `json:"tool"`
	ID        string         `json:"id,omitempty"`
	Arguments string         `json:"arguments"`
	Result    string         `json:"result"`
	Files     []kit.FileRead `json:"files,omitempty"`
	Source    string         `json:"source,omitempty"`
}

// toolBook serves tool results journaled before, by the key of the model
// call that asked for them, in the order they were asked.
type toolBook struct {
	mu     sync.Mutex
	byKey  map[string][]toolRecord
	served map[string]int
	// source is what served results are marked with in a new journal
	// ("replay"), "" when they come from the run's own journal.
	source string
}

func (b *toolBook) add(key string, t toolRecord) {
	if b.byKey == nil {
		b.byKey = map[string][]toolRecord{}
	}
	b.byKey[key] = append(b.byKey[key], t)
}

// next returns the next journaled result for a tool call of key, if it is
// the same call (tool and arguments) as the one journaled.
func (b *toolBook) next(key string, tc kit.ToolCall) (toolRecord, bool) {
	if b == nil {
		return toolRecord{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.served[key]
	list := b.byKey[key]
	if i >= len(list) || list[i].Tool != tc.Name || list[i].Arguments != tc.Arguments {
		return toolRecord{}, false
	}
	if b.served == nil {
		b.served = map[string]int{}
	}
	b.served[key] = i + 1
	return list[i], true
}

// readToolCalls reads the tool_call events of a journal.
func readToolCalls(events []journal.Event, b *toolBook) error {
	for _, ev := range events {
		if ev.Type != event.ToolCall {
			continue
		}
		var t toolRecord
		if err := json.Unmarshal(ev.Data, &t); err != nil {
			return fmt.Errorf("journal event %d: %w", ev.Seq, err)
		}
		b.add(ev.Key, t)
	}
	return nil
}

// answerEvent is the payload of an "answer" event: an answer a clarifying
// question got, from --answers or a person at the terminal.
type answerEvent struct {
	Agent    string `json:"agent,omitempty"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// absentRecord is the payload of an "absent" event.
type absentRecord struct {
	Agent  string `json:"agent"`
	Reason string `json:"reason"`
	// RequestDigest is the request of the call that failed (see
	// drift.RequestDigest); "" when the agent's reply was unusable.
	RequestDigest string `json:"request_digest,omitempty"`
}

// readAbsent reads the "absent" events of failed calls from a journal's
// events into m, by call key.
func readAbsent(events []journal.Event, m map[string]absentRecord) error {
	for _, ev := range events {
		if ev.Type != event.Absent {
			continue
		}
		var rec absentRecord
		if err := json.Unmarshal(ev.Data, &rec); err != nil {
			return fmt.Errorf("journal event %d: %w", ev.Seq, err)
		}
		if rec.RequestDigest != "" {
			m[ev.Key] = rec
		}
	}
	return nil
}

// requestRecord is what the journal says of a call's request.
type requestRecord struct {
	Digest string `json:"request_digest"`
	Prompt string `json:"prompt_digest"`
	// Messages say which message of a changed prompt differs first.
	Messages []launch.RecordedMessage `json:"messages"`
}

// failedCalls are the journaled calls of the node occurrence that failed
// the last attempt, in journal order: those of the one agent its error
// names when it names one, else all of them (with their repairs). When no
// node failed (an output or a condition of the flow did), they are the
// calls whose replies gave way to a node's fallback output, with their
// repairs: the values the failure may rest on that a new sample can
// change. They are what --resample asks afresh.
func (p *prior) failedCalls() []string {
	a := p.last
	if a.prefix == "" {
		return p.fallbackCalls()
	}
	var keys []string
	agents := map[string]bool{}
	for _, k := range p.order {
		if strings.HasPrefix(k, a.prefix+"/") {
			keys = append(keys, k)
			if ag := p.agents[k]; ag != "" {
				agents[ag] = true
			}
		}
	}
	var named []string
	for ag := range agents {
		if strings.Contains(a.nodeErr, fmt.Sprintf("agent %q", ag)) {
			named = append(named, ag)
		}
	}
	if len(named) != 1 {
		return keys
	}
	var out []string
	for _, k := range keys {
		if p.agents[k] == named[0] {
			out = append(out, k)
		}
	}
	return out
}

// chainOf is the first call of a chain of repairs (KEY for KEY#repairN).
func chainOf(key string) string {
	return kit.RepairChain(key)
}

// noteFallback keeps the chains whose last reply gave way to a fallback
// output, as the journal says now: a new request in a chain (a resample, a
// changed prompt) makes its fallback history until it falls back again.
func (p *prior) noteFallback(typ event.Type, key string) {
	switch typ {
	case event.Fallback:
		p.fallbacks[chainOf(key)] = true
	case event.ModelRequest:
		delete(p.fallbacks, chainOf(key))
	}
}

// fallbackCalls are the journaled calls of the chains that fell back, in
// journal order.
func (p *prior) fallbackCalls() []string {
	var out []string
	for _, k := range p.order {
		if p.fallbacks[chainOf(k)] {
			out = append(out, k)
		}
	}
	return out
}

// stuck returns the dead end the journal shows, or nil.
func (p *prior) stuck(dir string) *StuckError {
	if !p.last.replays() {
		return nil
	}
	e := &StuckError{Dir: dir, Err: p.last.err, Node: p.last.node, Calls: p.failedCalls(), Fallback: p.last.prefix == ""}
	for _, k := range e.Calls {
		e.Resamples = max(e.Resamples, p.fresh[k])
	}
	return e
}

// Stuck reads a run directory's journal and returns the dead end a resume
// as it is would meet (see StuckError), or nil: the CLI asks after a
// failed run, so that it never advises a resume that cannot go on.
func Stuck(dir string) *StuckError {
	p, err := readPrior(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return nil
	}
	return p.stuck(dir)
}
