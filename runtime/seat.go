// This file is the seat of an agent a person plays (human: true): its
// turns are answered by the person's message instead of its model.

package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/spec/value"
)

// seats answers the turns of agents a person plays, and hands every other
// call on to next. A turn is a question to the person, asked as a
// clarifying question is (--answers, the terminal, else the run waits
// with it in questions.yaml and its prompt in turns.json), whose id is the
// turn's call key; the message given is the turn's reply, journaled as a
// model_response of source "human", so a resume and a replay serve it as
// they serve a model's. The stage comes after the request is journaled
// and before the budget, the cache and the network: a person's turn costs
// nothing and is never cached.
func (r *Run) seats(next calls.Stage) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if !c.Kit.Seat() {
			return next.Complete(ctx, c)
		}
		return r.takeSeat(ctx, c)
	})
}

func (r *Run) takeSeat(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
	q := value.Question{ID: c.Key, Agent: c.Agent, Question: seatQuestion(c)}
	msg, ok := r.opts.Answers[q.ID]
	if !ok && r.opts.Ask != nil {
		var err error
		// Asked at a terminal, the turn is posted for the view too.
		turn := turnOf(c)
		if msg, err = r.opts.Ask(r.shared(ctx, q, &turn), q); err != nil {
			return kit.Reply{}, calls.Human, err
		}
		ok = true
	}
	if !ok {
		r.mu.Lock()
		r.waiting = append(r.waiting, q)
		r.turns = append(r.turns, turnOf(c))
		r.mu.Unlock()
		return kit.Reply{}, calls.Human, kit.ErrWaiting
	}
	// Journaled (and synced) before the run goes on with it, as an answer
	// is: one typed at the terminal exists nowhere else.
	if err := r.event(event.Answer, q.ID, answerEvent{Agent: q.Agent, Question: "the turn of " + q.Agent, Answer: msg}); err != nil {
		return kit.Reply{}, calls.Human, err
	}
	return kit.Reply{Content: msg, FinishReason: "stop"}, calls.Human, nil
}

// seatQuestion is how a turn is asked at the terminal and in
// questions.yaml: whose turn and where, then the prompt the agent's model
// would have been sent.
func seatQuestion(c *calls.Call) string {
	var b strings.Builder
	name := c.Agent
	if c.Kit.Agent != nil && c.Kit.Agent.Name != "" {
		name = c.Kit.Agent.Name
	}
	fmt.Fprintf(&b, "%swrite the message of %s in node %s", answers.TurnPrefix, name, c.Node)
	if c.Round > 0 {
		fmt.Fprintf(&b, ", round %d", c.Round)
	}
	if c.Goal != "" {
		fmt.Fprintf(&b, ", goal %s", c.Goal)
	}
	b.WriteString(". What its model would have been sent:")
	for _, m := range c.Kit.Messages {
		head := m.Role
		if m.Name != "" {
			head += " " + m.Name
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", head, strings.TrimRight(m.Content, "\n"))
	}
	return b.String()
}

// turnOf is the turn a call waits for, as turns.json holds it.
func turnOf(c *calls.Call) answers.Turn {
	t := answers.Turn{ID: c.Key, Agent: c.Agent, Node: c.Node, Round: c.Round, Goal: c.Goal, Messages: make([]answers.TurnMessage, len(c.Kit.Messages))}
	for i, m := range c.Kit.Messages {
		t.Messages[i] = answers.TurnMessage{Role: m.Role, Name: m.Name, Content: m.Content}
	}
	return t
}

// writeTurns writes the turns the run waits for to turns.json, redacted
// as the journal is; a run that does not wait (or waits for none) removes
// the file an earlier attempt left.
func (r *Run) writeTurns(waiting bool) error {
	var turns []answers.Turn
	if waiting {
		r.mu.Lock()
		turns = append(turns, r.turns...)
		r.mu.Unlock()
	}
	if err := redactValue(r.red, &turns); err != nil {
		return err
	}
	return answers.WriteTurns(filepath.Join(r.Dir, answers.TurnsFile), turns)
}

// shared is ctx marked so that a terminal asking q posts it in the run's
// folder for the view to answer too (see answers.Shared), secrets taken
// out as in questions.yaml and turns.json.
func (r *Run) shared(ctx context.Context, q value.Question, turn *answers.Turn) context.Context {
	p := answers.Posted{Question: q, Turn: turn}
	if err := redactValue(r.red, &p); err != nil {
		return ctx // not posted: the terminal alone asks
	}
	return answers.Shared(ctx, r.Dir, p)
}
