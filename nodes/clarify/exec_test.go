package clarify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

func TestQuestionsFrom(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  []string
		err   string
	}{
		{"objects", `{"questions": [{"question": "How many users?"}, {"question": " Budget? "}]}`, []string{"How many users?", "Budget?"}, ""},
		{"strings", `{"questions": ["How many users?", "  ", "Budget?"]}`, []string{"How many users?", "Budget?"}, ""},
		{"bare list", `["How many users?"]`, []string{"How many users?"}, ""},
		{"nothing to ask", `{"questions": []}`, nil, ""},
		{"null list", `{"questions": null}`, nil, ""},
		{"fenced", "Here you go:\n```json\n{\"questions\": [\"Peak load?\"]}\n```", []string{"Peak load?"}, ""},
		{"no questions key", `{"asks": []}`, nil, `no "questions" list`},
		{"questions not a list", `{"questions": "Budget?"}`, nil, "must be a list"},
		{"object without text", `{"questions": [{"q": "Budget?"}]}`, nil, `questions[0] has no "question" text`},
		{"number item", `{"questions": [42]}`, nil, "questions[0] must be a string"},
		{"scalar", `"Budget?"`, nil, "expected"},
		{"not JSON", `I have no questions.`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := questionsFrom(tc.reply)
			if tc.name == "not JSON" {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// host is the part of kit.Host a clarify node uses; the embedded nil
// interface makes any other call panic, so the test shows what the node
// relies on.
type host struct {
	kit.Host
	replies map[string]string // call key -> reply; missing keys answer no questions
	answers map[string]string

	mu       sync.Mutex
	keys     []string
	prompts  map[string]string
	events   []string
	recorded []value.Message
}

func (h *host) Base(_ *spec.NodePlan, a *spec.AgentPlan) value.PromptBase {
	return value.PromptBase{Agent: a.View()}
}

func (h *host) Render(_ string, data any) (string, error) {
	d := data.(*PromptData)
	var qs []string
	for _, q := range d.Questions {
		qs = append(qs, q.ID+"="+q.Answer)
	}
	return fmt.Sprintf("%s may ask %d; asked: %s", d.Agent.ID, d.MaxQuestions, strings.Join(qs, ",")), nil
}

func (h *host) Complete(_ context.Context, c kit.Call) (kit.Reply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys = append(h.keys, c.Key)
	h.prompts[c.Key] = c.Messages[len(c.Messages)-1].Content
	if !c.JSONMode {
		return kit.Reply{}, errors.New("clarify calls must ask for JSON")
	}
	r, ok := h.replies[c.Key]
	if !ok {
		r = `{"questions": []}`
	}
	return kit.Reply{Content: r}, nil
}

func (h *host) Event(typ event.Type, key string, _ any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, string(typ)+" "+key)
	return nil
}

func (h *host) Answers() kit.Answerer { return h }

func (h *host) Answer(_ context.Context, q value.Question) (string, bool, error) {
	a, ok := h.answers[q.ID]
	if ok && a == "" {
		a = "NA"
	}
	return a, ok, nil
}

func (h *host) Record(msgs ...value.Message) []value.Message {
	h.recorded = append(h.recorded, msgs...)
	return msgs
}

func clarifyNode(maxQuestions, maxIterations int) *spec.NodePlan {
	return &spec.NodePlan{
		ID:     "clarify",
		Agents: []*spec.AgentPlan{{ID: "arch", Name: "Architect"}, {ID: "sec", Name: "Security"}},
		Config: &Config{Template: "t", MaxQuestions: maxQuestions, MaxIterations: maxIterations, Repair: 1},
	}
}

func TestExecute(t *testing.T) {
	tests := []struct {
		name          string
		maxIterations int
		replies       map[string]string
		answers       map[string]string
		keys          string // calls made, sorted per iteration
		waiting       bool
		output        string // id=answer of every answered question
		messages      int
	}{
		{
			name:          "nobody asks: one iteration",
			maxIterations: 3,
			keys:          "[arch/i1 sec/i1]",
		},
		{
			name:          "follow-ups until nothing new",
			maxIterations: 3,
			replies: map[string]string{
				"arch/i1": `{"questions": ["Users?", "Budget?", "Deadline?"]}`, // capped at 2
				"arch/i2": `{"questions": ["users?", "BUDGET?", "Regions?"]}`,  // repeats (any case) do not count against the cap
				"sec/i2":  `{"questions": ["Audits?"]}`,
			},
			answers:  map[string]string{"arch.q1": "1000", "arch.q2": "", "arch.q3": "EU", "sec.q1": "yearly"},
			keys:     "[arch/i1 sec/i1 arch/i2 sec/i2 arch/i3 sec/i3]",
			output:   "[arch.q1=1000 arch.q2=NA arch.q3=EU sec.q1=yearly]",
			messages: 3,
		},
		{
			name:          "stops at max_iterations",
			maxIterations: 1,
			replies:       map[string]string{"arch/i1": `{"questions": ["Users?"]}`, "arch/i2": `{"questions": ["Budget?"]}`},
			answers:       map[string]string{"arch.q1": "1000"},
			keys:          "[arch/i1 sec/i1]",
			output:        "[arch.q1=1000]",
			messages:      1,
		},
		{
			name:          "repairs an invalid reply",
			maxIterations: 1,
			replies:       map[string]string{"sec/i1": `I'd like to know the budget.`, "sec/i1#repair1": `{"questions": ["Budget?"]}`},
			answers:       map[string]string{"sec.q1": "small"},
			keys:          "[arch/i1 sec/i1 sec/i1#repair1]",
			output:        "[sec.q1=small]",
			messages:      1,
		},
		{
			name:          "waits for unanswered questions",
			maxIterations: 2,
			replies:       map[string]string{"arch/i1": `{"questions": ["Users?"]}`, "sec/i1": `{"questions": ["Audits?"]}`},
			answers:       map[string]string{"arch.q1": "1000"},
			keys:          "[arch/i1 sec/i1]",
			waiting:       true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{replies: tc.replies, answers: tc.answers, prompts: map[string]string{}}
			res, err := kit.Typed(Kind{}).Execute(context.Background(), h, clarifyNode(2, tc.maxIterations))
			if tc.waiting {
				if !errors.Is(err, kit.ErrWaiting) {
					t.Fatalf("error %v, want kit.ErrWaiting", err)
				}
				if len(h.recorded) != 0 || !strings.Contains(strings.Join(h.events, ";"), "waiting") {
					t.Errorf("recorded %v, events %v; want nothing recorded and a waiting event", h.recorded, h.events)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := sortedPerIteration(h.keys); got != tc.keys {
				t.Errorf("calls %s, want %s", got, tc.keys)
			}
			if tc.waiting {
				return
			}
			var got []string
			for _, q := range res.Output.([]any) {
				m := q.(map[string]any)
				got = append(got, fmt.Sprintf("%s=%s", m["id"], m["answer"]))
			}
			if tc.output != "" && fmt.Sprint(got) != tc.output || tc.output == "" && len(got) != 0 {
				t.Errorf("output %v, want %s", got, tc.output)
			}
			if len(h.recorded) != tc.messages {
				t.Errorf("%d clarification messages, want %d", len(h.recorded), tc.messages)
			}
			for _, m := range h.recorded {
				if m.Record != "clarification" || m.Content == "" {
					t.Errorf("message %+v", m)
				}
			}
		})
	}
}

// TestFollowUpPromptsShowAnswers: a follow-up prompt shows every question
// asked so far with its answer, and the cap on questions.
func TestFollowUpPromptsShowAnswers(t *testing.T) {
	h := &host{
		replies: map[string]string{"arch/i1": `{"questions": ["Users?"]}`},
		answers: map[string]string{"arch.q1": ""},
		prompts: map[string]string{},
	}
	if _, err := kit.Typed(Kind{}).Execute(context.Background(), h, clarifyNode(4, 2)); err != nil {
		t.Fatal(err)
	}
	if got := h.prompts["sec/i2"]; got != "sec may ask 4; asked: arch.q1=NA" {
		t.Errorf("follow-up prompt %q", got)
	}
}

// sortedPerIteration sorts call keys within each iteration, since agents
// are asked concurrently.
func sortedPerIteration(keys []string) string {
	iter := func(k string) string {
		i := strings.Index(k, "/i")
		return k[i+2:]
	}
	out := append([]string(nil), keys...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0; j-- {
			a, b := out[j-1], out[j]
			ia, ib := iter(a)[:1], iter(b)[:1]
			if ia > ib || ia == ib && a > b {
				out[j-1], out[j] = b, a
			}
		}
	}
	return fmt.Sprint(out)
}

func (h *host) Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	return kit.Parallel(ctx, n, f)
}
