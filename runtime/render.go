// This file renders prompts: a kind's templates with what every prompt
// of an agent sees (Base), and a dry run's renderings.

package runtime

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/debate-runner/runner/runtime/tmplguard"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

func (h *host) Render(name string, data any) (string, error) {
	if d := h.run.dry; d != nil {
		return h.renderDry(d, name, data)
	}
	// Size the output like the template's previous one: prompts grow and
	// shrink slowly, and growing a builder from empty copies a prompt about
	// twice over.
	hint := h.run.renderHint(name)
	var b strings.Builder
	if n := hint.Load(); n > 0 {
		b.Grow(int(n + n/8))
	}
	if err := h.run.templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", h.renderError(name, err)
	}
	hint.Store(int64(b.Len()))
	return value.SealCacheBreaks(b.String()), nil
}

// renderError says which node's template failed. A value the guard found
// missing, or a printf that does not fit, is named as the guard names it,
// without text/template's wrapping around the guard's own function.
func (h *host) renderError(name string, err error) error {
	var missing *tmplguard.MissingError
	var format *tmplguard.FormatError
	switch {
	case errors.As(err, &missing):
		err = missing
	case errors.As(err, &format):
		err = format
	}
	return fmt.Errorf("node %q: rendering template %s: %w", h.node.ID, name, err)
}

// renderHint returns the size of the last rendering of a template.
func (r *Run) renderHint(name string) *atomic.Int64 {
	if v, ok := r.renderSizes.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := r.renderSizes.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Base returns what every prompt of an agent sees. The maps and slices in
// it may be shared with the run and with other prompts: callers may set its
// fields but must not change what those hold.
func (h *host) Base(node *spec.NodePlan, agent *spec.AgentPlan) value.PromptBase {
	r := h.run
	r.mu.Lock()
	defer r.mu.Unlock()
	// Results, messages and agent views are shared rather than copied (see
	// setResult and history.Store.Seen), so that a call's cost does not grow
	// with the length of the debate.
	data := value.PromptBase{
		Agent: agent.View(), Round: h.scope.Round, Loop: h.scope.Loop, Loops: h.scope.Counters, Item: h.scope.Item, Goal: h.scope.Goal,
		Inputs: r.inputs, Vars: r.vars, Nodes: r.results,
		Agents: r.agentViews(node), AllAgents: r.agentViews(nil),
	}
	if it := h.iteration(); it != nil {
		data.Nodes = it.nodes()
		data.History, data.Inbox = it.seen(agent.ID, h.scope.Round, h.scope.Goal.ID)
		return data
	}
	data.History, data.Inbox = r.hist.Seen(agent.ID, h.scope.Round, h.scope.Goal.ID)
	return data
}

// renderDry renders a prompt of a dry run: in full while the render budget
// lasts, then as an estimate of its size, so that a dry run of a very long
// conversation stays linear in its calls.
func (h *host) renderDry(d *dryState, name string, data any) (string, error) {
	agent, seen := "", 0
	if b := value.BaseOf(data); b != nil {
		agent, seen = b.Agent.ID, len(b.History)
	}
	if d.rendered.Load() > d.RenderBudget {
		d.note("prompts past %d MiB of rendering are estimated from the last ones rendered in full", d.RenderBudget>>20)
		return d.estimate(name, agent, seen, h.run.avgMessageSize()), nil
	}
	if d.Sparse && d.skipRender(name, agent) {
		return d.estimate(name, agent, seen, h.run.avgMessageSize()), nil
	}
	var b strings.Builder
	if err := h.run.templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", h.renderError(name, err)
	}
	d.renderedPrompt(name, agent, b.Len(), seen)
	return value.SealCacheBreaks(b.String()), nil
}

// avgMessageSize is the average size of a recorded message as prompts show
// it: its content and some framing (author, record).
func (r *Run) avgMessageSize() int {
	n := int64(r.hist.Len())
	if n == 0 {
		return 0
	}
	return int(r.contentBytes.Load()/n) + 40
}
