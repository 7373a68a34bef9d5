package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"

	"github.com/debate-runner/runner/nodes/kit"

	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// Dry makes a run a dry run: the real flow walker and node kinds, but every
// model call is answered by Stage (stand-ins, see calls.Placeholders) and,
// where replies would decide, the worst case is taken: loops run to their
// max (until is evaluated, and ignored), both branches of an if whose
// condition reads what the run recorded are run, conversations go on to
// max_turns (Host.Holds answers false), every clarifying question is
// answered. Nothing is written to disk.
type Dry struct {
	// Stage answers every model call.
	Stage calls.Stage
	// Size is how many characters a text stands for (stand-ins quoted in
	// it count as the replies they stand for); nil counts its length.
	Size func(text string) int
	// RenderBudget bounds the bytes of prompts rendered in full (0: 16
	// MiB); beyond it prompts are estimated from the last ones rendered.
	RenderBudget int64
	// CallBudget bounds the calls simulated (0: 20,000); beyond it the
	// walk stops and the conversations, loops and foreach steps it was in
	// are extrapolated.
	CallBudget int
	// Note is told each thing the worst case simplifies, once.
	Note func(string)
	// Sparse renders in full, of the prompts one template makes for one
	// agent, the first few and then ever fewer (see sampledRender), and
	// estimates the others: the path check's setting, whose walks of long
	// threads would otherwise render each turn's whole history again,
	// in time that grows with the square of the thread's length.
	Sparse bool
}

// sampledRender reports whether the n-th prompt (from 1) of one template
// for one agent is rendered in full when renders are sparse: the first 6,
// then each about a quarter further on (7, 8, 10, 12, 15, 18, 22, 27, 33,
// 41, 51, ...), so that n prompts render at most 9 + 4.5 ln(n/6) of them
// (17 of 60).
func sampledRender(n int) bool {
	next := 6
	for next < n {
		next += max(next/4, 1)
	}
	return next == n || n <= 6
}

// errBudget stops a dry run that has simulated as many calls as it may.
var errBudget = errors.New("the dry run's budget of simulated calls is spent")

// dryState is what a dry run keeps beside the run.
type dryState struct {
	Dry
	plan     *spec.Plan
	rendered atomic.Int64
	calls    atomic.Int64
	// stopped is the bound on evaluations (budget.max_evaluations) that
	// stopped the walk, as a real run stops there, or "".
	stopped string
	// extrapolated are calls counted without being simulated.
	extrapolated atomic.Int64
	mu           sync.Mutex
	noted        map[string]bool
	// sizes are, per template and agent, the size of the last prompt
	// rendered in full and how many messages its agent could see then.
	sizes map[string][2]int
	// prompts counts, per template and agent, the prompts asked for.
	prompts map[string]int
}

// NewDry prepares a dry run of plan: inputs and vars are resolved as for a
// run (give placeholders for required inputs you do not have), and nothing
// is written or sent.
func NewDry(plan *spec.Plan, opts Options, dry Dry) (*Run, error) {
	if dry.Stage == nil {
		return nil, errors.New("a dry run needs a stage that answers its calls")
	}
	r, err := newDetached(plan, opts, dry.Stage)
	if err != nil {
		return nil, err
	}
	if dry.RenderBudget <= 0 {
		dry.RenderBudget = 16 << 20
	}
	if dry.CallBudget <= 0 {
		dry.CallBudget = 20000
	}
	r.ID = "dry-run"
	r.dry = &dryState{Dry: dry, plan: r.Plan, noted: map[string]bool{}, sizes: map[string][2]int{}}
	r.walk = r.dry
	return r, nil
}

// newDetached prepares a run that has no directory, journal or endpoints of
// its own, whose calls stage answers (a dry run, an embedded one): inputs
// and vars are resolved and the seed chosen as for any run.
func newDetached(plan *spec.Plan, opts Options, stage calls.Stage) (*Run, error) {
	v, err := launch.Prepare(plan, opts.Given)
	if err != nil {
		return nil, err
	}
	r := newPrepared(v, opts)
	r.chain = stage
	return r, nil
}

// note tells the dry run's Note about a simplification, once.
func (d *dryState) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.mu.Lock()
	seen := d.noted[msg]
	d.noted[msg] = true
	d.mu.Unlock()
	if !seen && d.Note != nil {
		d.Note(msg)
	}
}

// spent reports whether the dry run may simulate no more calls.
func (d *dryState) spent() bool { return d.calls.Load() >= int64(d.CallBudget) }

// worst is the calls counted so far, simulated or extrapolated.
func (d *dryState) worst() int64 { return d.calls.Load() + d.extrapolated.Load() }

// size is how many characters a text stands for.
func (d *dryState) size(text string) int {
	if d.Size == nil {
		return len(text)
	}
	return d.Size(text)
}

// Extrapolated is how many calls a dry run counted without simulating them
// (its call budget ran out inside a loop), 0 for other runs.
func (r *Run) Extrapolated() int {
	if r.dry == nil {
		return 0
	}
	return int(r.dry.extrapolated.Load())
}

// StoppedBy is, for a dry run whose walk stopped at the bound on
// evaluations (budget.max_evaluations) as a real run would, the error that
// run would stop with; "" otherwise.
func (r *Run) StoppedBy() string {
	if r.dry == nil {
		return ""
	}
	return r.dry.stopped
}

// estimate stands in for a prompt once the render budget is spent: the size
// of the agent's last prompt of this template rendered in full, grown by
// the messages it can see now beyond those it could see then, at the
// average size of a message.
func (d *dryState) estimate(template, agent string, seen, avg int) string {
	d.mu.Lock()
	last, ok := d.sizes[template+"\x00"+agent]
	d.mu.Unlock()
	chars := last[0]
	if ok && seen > last[1] {
		chars += (seen - last[1]) * avg
	}
	return calls.EstimatedPrompt(chars)
}

// skipRender counts a prompt of template for agent and reports whether
// sparse rendering estimates it: one rendered in full before, and not
// sampled.
func (d *dryState) skipRender(template, agent string) bool {
	key := template + "\x00" + agent
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prompts == nil {
		d.prompts = map[string]int{}
	}
	d.prompts[key]++
	_, before := d.sizes[key]
	return before && !sampledRender(d.prompts[key])
}

// rendered notes the size of a prompt rendered in full.
func (d *dryState) renderedPrompt(template, agent string, chars, seen int) {
	d.rendered.Add(int64(chars))
	d.mu.Lock()
	d.sizes[template+"\x00"+agent] = [2]int{chars, seen}
	d.mu.Unlock()
}

// finishDry ends a dry run: the walk stopped by the call budget counts as
// finished (the rest was extrapolated), outputs that cannot be computed
// from stand-ins are noted, and nothing is written.
func (r *Run) finishDry(ctx context.Context, runErr error, started time.Time) (*result.Result, error) {
	var be *calls.BudgetError
	if errors.As(runErr, &be) && be.Limit == "max_evaluations" {
		// A real run stops there (budget_exceeded): the dry run reports
		// the walk up to it.
		r.dry.stopped = be.Error()
		runErr = nil
	}
	if errors.Is(runErr, errBudget) {
		r.dry.note("the dry run stopped after simulating %d calls; the conversations, loops and foreach steps it was in are extrapolated, and nodes after that point are not counted", r.dry.calls.Load())
		runErr = nil
	}
	status := result.StatusCompleted
	if runErr != nil {
		status = result.StatusFailed
	}
	outputs := map[string]any{}
	if runErr == nil {
		env := r.env(kit.Scope{})
		for _, o := range r.Plan.Outputs {
			v, err := evalProgram(o.Program, env)
			if err != nil {
				r.dry.note("output %q cannot be computed from stand-in replies: %v", o.Name, err)
				continue
			}
			outputs[o.Name] = jsonable(v)
		}
		// The judges of a judged score grade the run: their calls are
		// in the plan (stand-ins answer them with a level).
		if r.Plan.Judge != nil {
			r.judge(ctx, outputs)
		}
	}
	res := r.buildResult(status, outputs, runErr, time.Since(started))
	r.result = res
	return res, runErr
}

// dryTurns follows the turns of one execution of a node that takes turns
// (kit.TurnBounded) in a dry run: the worst-case calls when its first turn
// began (after what it posts before it) and when the last turn it recorded
// was over (with what was posted in it), and that turn's number.
type dryTurns struct {
	mu          sync.Mutex
	start, done int64
	turn        int
}

// recorded notes a message of turn n recorded when worst calls had been
// counted.
func (t *dryTurns) recorded(n int, worst int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n == 0 && t.turn == 0 {
		t.start, t.done = worst, worst
		return
	}
	if n >= t.turn {
		t.turn, t.done = n, worst
	}
}

// extrapolated is how many calls the turns after the one cut short (and
// the rest of that one) would make, at the pace of the turns taken, up to
// max turns.
func (t *dryTurns) extrapolated(now int64, max int) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.turn >= max {
		return 0
	}
	return extrapolate(t.start, t.done, now, t.turn+1, max)
}

// A dry run observes the flow walker (walkObserver): loops run to their
// max, until is evaluated and ignored, a foreach whose list is not known
// before the run is walked once, both branches of an if that reads what
// the run recorded are walked, and what a spent call budget cut short is
// extrapolated.

// dryLoop follows a loop's or foreach's iterations: the worst-case calls
// when it began and after its last whole iteration; cut short by the call
// budget in iteration i, the iterations left of n are extrapolated.
type dryLoop struct {
	d           *dryState
	n           int
	start, done int64
}

func (d *dryState) span(n int) *dryLoop {
	w := d.worst()
	return &dryLoop{d: d, n: n, start: w, done: w}
}

func (l *dryLoop) iterated(i int, err error) {
	switch {
	case err == nil:
		l.done = l.d.worst()
	case errors.Is(err, errBudget):
		l.d.extrapolated.Add(extrapolate(l.start, l.done, l.d.worst(), i, l.n))
	}
}

func (d *dryState) loop(s *spec.FlowStep, max int) (int, walkSpan) {
	if planned := plannedMax(s, max); planned != max {
		d.note("the loop at %s counts %d iterations, its max's declared maximum: max (%s) reads what the run records", posString(d.plan, s.Pos), planned, s.MaxExpr.Source)
		max = planned
	}
	return max, d.span(max)
}

// plannedMax is the iterations a dry run or the path check plans a loop
// for: its max, or, when the max reads what the run records (which
// stand-in replies do not tell), its declared maximum.
func plannedMax(s *spec.FlowStep, max int) int {
	if s.MaxExpr != nil && s.MaxExpr.ReadsRun && s.MaxBound > 0 {
		return s.MaxBound
	}
	return max
}

func (d *dryState) until(s *spec.FlowStep, _, max int, holds func() (any, error)) (bool, error) {
	if _, err := holds(); err != nil {
		d.note("%s: loop until (%s) cannot be evaluated on stand-in replies (%v)", posString(d.plan, s.Pos), s.Until.Source, err)
	}
	d.note("the loop at %s counts all %d iterations; until (%s) may end it earlier", posString(d.plan, s.Pos), max, s.Until.Source)
	return false, nil
}

func (d *dryState) breaks(s *spec.FlowStep, _ int, holds func() (any, error)) (bool, error) {
	if _, err := holds(); err != nil {
		d.note("%s: loop break (%s) cannot be evaluated on stand-in replies (%v)", posString(d.plan, s.Pos), s.Break.Source, err)
	}
	d.note("the loop at %s counts every step of its iterations; break (%s) may end it earlier", posString(d.plan, s.Pos), s.Break.Source)
	return false, nil
}

func (d *dryState) foreach(s *spec.FlowStep, items []any, err error) ([]any, error) {
	if err != nil {
		d.note("foreach at %s: its list (%s) is not known before the run (%v); counted once", posString(d.plan, s.Pos), s.In.Source, err)
		return []any{nil}, nil
	}
	return items, nil
}

func (d *dryState) items(_ *spec.FlowStep, n int) walkSpan { return d.span(n) }

func (d *dryState) oneByOne() bool { return true }

func (d *dryState) branches(s *spec.FlowStep, cond func() (any, error)) ([]bool, error) {
	if s.Cond.ReadsRun {
		// What the replies would decide: the worst case takes both.
		d.note("if at %s (%s) depends on replies; both branches are counted", posString(d.plan, s.Pos), s.Cond.Source)
		return []bool{true, false}, nil
	}
	v, err := cond()
	if err != nil {
		return nil, fmt.Errorf("%s: if (%s): %w", posString(d.plan, s.Pos), s.Cond.Source, err)
	}
	b, _ := v.(bool)
	return []bool{b}, nil
}

// dryNode watches one execution of a node in a dry run.
type dryNode struct {
	d    *dryState
	node *spec.NodePlan
	h    *host
}

func (d *dryState) node(n *spec.NodePlan, h *host) nodeWatch {
	if _, ok := n.Config.(kit.TurnBounded); ok {
		w := d.worst()
		h.turns = &dryTurns{start: w, done: w}
	}
	return dryNode{d: d, node: n, h: h}
}

func (w dryNode) ended(ctx context.Context, res value.NodeResult, err error) (value.NodeResult, error) {
	if w.h.turns != nil && errors.Is(err, errBudget) {
		// Cut short by the call budget: the turns left are counted at
		// the pace of those taken.
		w.d.extrapolated.Add(w.h.turns.extrapolated(w.d.worst(), w.node.Config.(kit.TurnBounded).TurnBound()))
	}
	if err != nil && !errors.Is(err, errBudget) && !errors.Is(err, spec.ErrRunaway) && !budgetStop(err) && ctx.Err() == nil && !isRenderError(err) {
		// Stand-in replies can fail a check no real reply would (a rule on
		// the content, say); the worst case goes on without the node's
		// result.
		w.d.note("node %q did not finish on stand-in replies (%v); its calls so far are counted", w.node.ID, firstLineOf(err))
		return value.NodeResult{}, nil
	}
	return res, err
}

func (d *dryState) call() error {
	if d.spent() {
		return errBudget
	}
	d.calls.Add(1)
	return nil
}

// extrapolate counts the calls of a loop's iterations a dry run did not
// simulate: cut short in iteration i of max, the loop had made done-start
// calls in its i-1 whole iterations and now-done in the one cut short. The
// iterations left go at the pace of the whole ones (or of the one cut
// short, when it was the first), less what the one cut short has made.
func extrapolate(start, done, now int64, i, max int) int64 {
	if i == 1 {
		return (now - start) * int64(max-1)
	}
	per := float64(done-start) / float64(i-1)
	left := per*float64(max-i+1) - float64(now-done)
	if left < 0 {
		return 0
	}
	return int64(left + 0.5)
}
