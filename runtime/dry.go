package runtime

import (
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
}

// errBudget stops a dry run that has simulated as many calls as it may.
var errBudget = errors.New("the dry run's budget of simulated calls is spent")

// dryState is what a dry run keeps beside the run.
type dryState struct {
	Dry
	rendered atomic.Int64
	calls    atomic.Int64
	// extrapolated are calls counted without being simulated.
	extrapolated atomic.Int64
	mu           sync.Mutex
	noted        map[string]bool
	// sizes are, per template and agent, the size of the last prompt
	// rendered in full and how many messages its agent could see then.
	sizes map[string][2]int
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
	r.dry = &dryState{Dry: dry, noted: map[string]bool{}, sizes: map[string][2]int{}}
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
func (r *Run) finishDry(runErr error, started time.Time) (*result.Result, error) {
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
