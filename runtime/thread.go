package runtime

import (
	"fmt"
	"sync"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
)

// threads are the agents' chat threads of a run (see kit.Thread), and the
// prompts of turns an earlier attempt (a resume) or a recording (--replay)
// sent, which the threads are rebuilt from.
type threads struct {
	mu   sync.Mutex
	open map[string]*thread
	// sent are the journaled prompts of thread turns, by turn key: one
	// per attempt (a repaired turn was sent more than once), in order.
	sent map[string][]string
}

// thread is one agent's chat in one thread and goal.
type thread struct {
	run  *Run
	key  string // thread/NAME/AGENT, with @GOAL inside a goal
	name string
	// agent and goal are journaled with each turn.
	agent, goal string

	mu    sync.Mutex
	turns []kit.ChatMessage
	// tries counts the prompts of the next turn fixed so far (attempts).
	tries int
}

// Thread implements kit.Host: the agent's thread of that name in the
// current goal, made on first use.
func (h *host) Thread(name, agent string) kit.Thread {
	r := h.run
	goal := h.scope.Goal.ID
	key := "thread/" + name + "/" + agent
	if goal != "" {
		key += "@" + goal
	}
	r.threads.mu.Lock()
	defer r.threads.mu.Unlock()
	if r.threads.open == nil {
		r.threads.open = map[string]*thread{}
	}
	var from *thread // the thread a concurrent iteration's continues
	if it := h.iteration(); it != nil {
		// Each iteration of a concurrent foreach has a thread of its own,
		// which goes on from the thread as it was when the foreach began:
		// iterations do not take turns in one thread in the order they
		// happen to run.
		base := key
		if it.parent != nil {
			base += "#" + it.parent.key
		}
		from = r.threads.open[base]
		key += "#" + it.key
	}
	t, ok := r.threads.open[key]
	if !ok {
		t = &thread{run: r, key: key, name: name, agent: agent, goal: goal}
		if from != nil {
			from.mu.Lock()
			t.turns = append([]kit.ChatMessage(nil), from.turns...)
			from.mu.Unlock()
		}
		r.threads.open[key] = t
	}
	return t
}

func (t *thread) Turns() []kit.ChatMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.turns[:len(t.turns):len(t.turns)]
}

func (t *thread) Prompt(rendered string) (string, error) {
	t.mu.Lock()
	n := len(t.turns)/2 + 1
	try := t.tries
	t.tries++
	t.mu.Unlock()
	key := fmt.Sprintf("%s#%d", t.key, n)
	r := t.run
	r.threads.mu.Lock()
	sent := r.threads.sent[key]
	r.threads.mu.Unlock()
	if try < len(sent) {
		// This attempt was sent before (a resume, a replay): send it as
		// it was, and journal nothing new.
		return sent[try], nil
	}
	ev := threadTurn{Thread: t.name, Agent: t.agent, Goal: t.goal, Turn: n, Prompt: rendered}
	if err := r.event(event.ThreadTurn, key, ev); err != nil {
		return "", err
	}
	return rendered, nil
}

func (t *thread) Add(prompt, reply string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.turns = append(t.turns, kit.ChatMessage{Role: "user", Content: prompt}, kit.ChatMessage{Role: "assistant", Content: reply})
	t.tries = 0
}
