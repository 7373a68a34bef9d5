package clarify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/parse"
	"github.com/debate-runner/runner/spec"
)

// Execute implements kit.Def: each agent asks up to MaxQuestions
// questions per iteration (concurrently); answers come from the run's
// answerer; follow-up iterations continue until nobody asks anything new or
// MaxIterations is reached. Questions nobody can answer yet stop the run
// with kit.ErrWaiting, after every question of the iteration is known, so a
// person answers them all at once.
func (Kind) Execute(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	var answered []value.Question
	calls := 0
	var recorded []value.Message
	for iter := 1; iter <= cfg.MaxIterations; iter++ {
		asked := make([][]value.Question, len(node.Agents))
		err := h.Parallel(ctx, len(node.Agents), func(ctx context.Context, i int) error {
			var err error
			asked[i], err = ask(ctx, h, node, cfg, node.Agents[i], iter, answered)
			return err
		})
		calls += len(node.Agents)
		if err != nil {
			return value.NodeResult{}, err
		}
		var fresh []value.Question
		for _, qs := range asked {
			fresh = append(fresh, qs...)
		}
		if len(fresh) == 0 {
			break
		}
		waiting := false
		for i := range fresh {
			ans, ok, err := h.Answers().Answer(ctx, fresh[i])
			if err != nil {
				return value.NodeResult{}, fmt.Errorf("node %q: answering %s: %w", node.ID, fresh[i].ID, err)
			}
			if !ok {
				waiting = true
				continue
			}
			fresh[i].Answer = ans
		}
		if waiting {
			_ = h.Event(event.Waiting, "", map[string]any{"questions": fresh})
			return value.NodeResult{}, kit.ErrWaiting
		}
		// One message per agent and iteration, in agent order.
		var msgs []value.Message
		for _, a := range node.Agents {
			var qs []value.Question
			for _, q := range fresh {
				if q.Agent == a.ID {
					qs = append(qs, q)
				}
			}
			if len(qs) == 0 {
				continue
			}
			msgs = append(msgs, value.Message{From: a.ID, Record: "clarification", Content: formatQA(qs), Output: questionsOutput(qs)})
		}
		recorded = append(recorded, h.Record(msgs...)...)
		answered = append(answered, fresh...)
	}
	out := make([]any, 0, len(answered))
	for _, q := range answered {
		out = append(out, map[string]any{"id": q.ID, "agent": q.Agent, "question": q.Question, "answer": q.Answer})
	}
	return value.NodeResult{Output: out, Messages: recorded, Calls: calls, Outputs: map[string]any{}}, nil
}

func formatQA(qs []value.Question) string {
	var b strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&b, "Q (%s): %s\nA: %s\n\n", q.ID, q.Question, q.Answer)
	}
	return strings.TrimSpace(b.String())
}

func questionsOutput(qs []value.Question) []any {
	out := make([]any, len(qs))
	for i, q := range qs {
		out[i] = map[string]any{"id": q.ID, "question": q.Question, "answer": q.Answer}
	}
	return out
}

// ask gets one agent's questions for an iteration.
func ask(ctx context.Context, h interface {
	kit.Prompter
	kit.RepairHost
}, node *spec.NodePlan, cfg *Config, a *spec.AgentPlan, iter int, answered []value.Question) ([]value.Question, error) {
	data := &PromptData{PromptBase: h.Base(node, a)}
	data.Questions = answered
	data.MaxQuestions = cfg.MaxQuestions
	system, err := kit.SystemPrompt(h, cfg.System, a, data)
	if err != nil {
		return nil, err
	}
	user, err := h.Render(cfg.Template, data)
	if err != nil {
		return nil, err
	}
	model := cfg.Model
	if model == nil {
		model = a.Model
	}
	key := fmt.Sprintf("%s/i%d", a.ID, iter)
	call := kit.Call{
		Key: key, Node: node.ID, Agent: a, Model: model, Messages: kit.Messages(system, user),
		JSONMode: true, JSONSchema: questionsSchema(cfg.MaxQuestions), SchemaName: "questions",
		// A stand-in asks one question, so a dry run counts every
		// follow-up iteration.
		Shape:   kit.Shape{Format: "json", Schema: json.RawMessage(`{"type": "object", "required": ["questions"], "properties": {"questions": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}}}}`)},
		Repairs: cfg.Repair,
	}
	var texts []string
	at, err := kit.Repairs{
		Max: cfg.Repair,
		Accept: func(reply kit.Reply) error {
			var perr error
			texts, perr = questionsFrom(reply.Content)
			return parse.Truncated(reply.FinishReason, perr)
		},
		Feedback: func(perr error) string { return parse.RepairPrompt("json", perr) },
		Event:    func(_ int, perr error) any { return map[string]any{"error": perr.Error()} },
	}.Call(ctx, h, call)
	if err != nil {
		return nil, err
	}
	if at.Invalid != nil {
		return nil, fmt.Errorf("node %q, agent %q: questions are not valid JSON after %d repair(s): %w", node.ID, a.ID, at.N, at.Invalid)
	}
	// Ids continue the agent's numbering; a question it asked before is no
	// follow-up and does not count against the cap.
	seen := map[string]bool{}
	n := 0
	for _, q := range answered {
		if q.Agent == a.ID {
			seen[normalize(q.Question)] = true
			n++
		}
	}
	var out []value.Question
	for _, t := range texts {
		if seen[normalize(t)] || len(out) == cfg.MaxQuestions {
			continue
		}
		seen[normalize(t)] = true
		n++
		out = append(out, value.Question{ID: fmt.Sprintf("%s.q%d", a.ID, n), Agent: a.ID, Question: t})
	}
	return out, nil
}

// questionsSchema is the JSON Schema of a reply, sent to endpoints that
// take response_format json_schema. It is closed, so strict mode applies.
func questionsSchema(maxQuestions int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"questions":{"type":"array","maxItems":%d,`+
		`"items":{"type":"object","properties":{"question":{"type":"string"}},"required":["question"],"additionalProperties":false}}},`+
		`"required":["questions"],"additionalProperties":false}`, maxQuestions))
}

func normalize(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// questionsFrom reads {"questions": [{"question": "..."} | "..."]} or a bare list.
func questionsFrom(reply string) ([]string, error) {
	v, err := parse.JSON(reply)
	if err != nil {
		return nil, err
	}
	var list []any
	switch x := v.(type) {
	case map[string]any:
		q, ok := x["questions"]
		if !ok {
			return nil, errors.New(`the JSON has no "questions" list`)
		}
		if q == nil {
			return nil, nil
		}
		l, ok := q.([]any)
		if !ok {
			return nil, errors.New(`"questions" must be a list`)
		}
		list = l
	case []any:
		list = x
	default:
		return nil, errors.New(`expected {"questions": [...]}`)
	}
	var out []string
	for i, item := range list {
		switch q := item.(type) {
		case string:
			if s := strings.TrimSpace(q); s != "" {
				out = append(out, s)
			}
		case map[string]any:
			s, _ := q["question"].(string)
			if s = strings.TrimSpace(s); s == "" {
				return nil, fmt.Errorf(`questions[%d] has no "question" text`, i)
			}
			out = append(out, s)
		default:
			return nil, fmt.Errorf("questions[%d] must be a string or {\"question\": ...}", i)
		}
	}
	return out, nil
}
