package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
)

// What static types cannot decide (how long a list is, which round a
// template renders in, whether a division's divisor is 0, whether free text
// converts to a number) CheckPaths decides by running the plan, as a dry
// run does (the real flow walker and node kinds, stand-in replies shaped by
// the schemas, no model called), along every path of its flow: each loop
// whose until reads the run both ending after its first round and running
// to its max, each if whose condition reads the run both taken and not,
// each foreach over a list from replies also empty when the replies can
// make it so. Choices are made per flow step: a path is one choice at each.
// Every path is walked twice, with the shortest replies the schemas allow
// and with the longest (lists of up to three items).
//
// A template that makes many prompts for one agent (a thread's turns, a
// long loop's rounds) has its first six rendered in full and then ever
// fewer (Dry.Sparse, sampledRender: 17 of 60), the others estimated, as
// prompts past the render budget are: what fails only at an unsampled
// turn, and at no sampled one, is not seen here. Rendering every turn
// made the check's time grow with the square of the thread's length
// (research-review: 4.9 s, now 1.5 s, with the same diagnostics for every
// example: TestSparseRendersFindWhatDenseRendersFind).
//
// What fails on some path whatever the replies is an error at its position,
// with the path named; what fails on one reply profile and not the other
// depends only on what a model replies, and is a warning naming the guard
// to add.

// Bounds of a path check: paths per reply profile, and per path the
// calls, prompt bytes and node executions it simulates.
const (
	maxCheckedPaths     = 32
	pathCallBudget      = 400
	checkCallBudget     = 1000 // all walks of a check together
	pathRenderBudget    = 2 << 20
	pathEvaluationBound = 2000
)

// denseRenders turns sparse rendering off (tests compare the two).
var denseRenders = false

// CheckPaths walks plan's flow along its paths (see above) and reports
// what fails on them. Required inputs without a default get a stand-in
// text, as a dry run's placeholders.
//
// A spec whose counts are expressions (max_turns: vars.turns * 2) is
// walked twice: with its counts' values for the defaults, and with every
// count at its declared maximum (spec.Plan.AtCountMaximum), what no
// validated run passes; what fails only there is reported as such.
func CheckPaths(plan *spec.Plan) syntax.Diagnostics {
	diags := checkPaths(plan)
	if plan == nil || plan.CountExprs == 0 {
		return diags
	}
	most := plan.AtCountMaximum()
	if most == nil {
		return diags
	}
	seen := map[string]bool{}
	for _, d := range diags {
		seen[fmt.Sprint(d.Pos, d.Severity)] = true
	}
	for _, d := range checkPaths(most) {
		if seen[fmt.Sprint(d.Pos, d.Severity)] {
			continue
		}
		d.Message += " (with every count at its declared maximum)"
		diags = append(diags, d)
	}
	return diags
}

func checkPaths(plan *spec.Plan) syntax.Diagnostics {
	if plan == nil || len(plan.Flow) == 0 {
		return nil
	}
	pc := &pathCheck{plan: plan, canBeEmpty: map[string]bool{}, kinds: map[string]string{}}
	pc.namesOf(plan.Flow)
	// The profiles: every reply shortest, every reply longest, and each
	// node's replies shortest or longest as a choice of the path.
	profiles := []replyProfile{shortest, longest, mixed, single}
	found := make([]map[string]*pathFailure, len(profiles))
	var order []string
	for i, profile := range profiles {
		found[i] = map[string]*pathFailure{}
		if profile == mixed && !pc.varies.Load() {
			continue // every reply the same in both: nothing to mix
		}
		if profile == single && !pc.variesOne.Load() {
			continue // no reply has a list one item would change
		}
		forced := map[string]int{}
		for n := 0; n < maxCheckedPaths && pc.calls < checkCallBudget; n++ {
			walk := pc.walk(forced, profile)
			if walk.unprepared {
				return nil
			}
			if walk.dryState != nil {
				pc.calls += walk.dryState.calls.Load()
			}
			if f := walk.failure; f != nil {
				k := f.key()
				if _, seen := found[i][k]; !seen {
					found[i][k] = f
					if !containsKey(order, k) {
						order = append(order, k)
					}
				}
			}
			next, ok := walk.next()
			if !ok {
				break
			}
			forced = next
		}
	}
	var diags syntax.Diagnostics
	for _, k := range order {
		short, long, mix, one := found[0][k], found[1][k], found[2][k], found[3][k]
		f := short
		if f == nil {
			f = long
		}
		if f == nil {
			f = mix
		}
		if f == nil {
			f = one
		}
		d := syntax.Diagnostic{File: f.file, Pos: f.pos, Severity: syntax.Error}
		if d.File == "" {
			d.File = plan.Path
		}
		if short != nil && long != nil {
			d.Message = fmt.Sprintf("%s (%s; a run would fail there, after the calls before it)", f.msg, f.where())
		} else {
			which := "when models reply with the shortest lists their schemas allow"
			switch f {
			case long:
				which = "when models reply with the longest lists their schemas allow"
			case mix:
				which = "for some lengths of the lists models reply with"
			case one:
				which = "when models reply with one item in each list"
			}
			d.Severity = syntax.Warning
			d.Message = fmt.Sprintf("%s (%s, %s): it depends only on the replies; guard it (test the length first: {{if gt (len X) N}} in a template, len(x) > n ? ... : ... in an expression, a default with ??) or bound the list in its schema (minItems, maxItems)",
				f.msg, f.where(), which)
		}
		if f.file == "" || f.file == plan.Path {
			d.Snippet = plan.Snippet(f.pos)
		}
		diags = append(diags, d)
	}
	return diags
}

func containsKey(list []string, k string) bool {
	for _, s := range list {
		if s == k {
			return true
		}
	}
	return false
}

// pathCheck is what the walks of one plan share.
type pathCheck struct {
	plan *spec.Plan
	// canBeEmpty are the foreach steps (by path) over a list from replies
	// that the shortest replies made empty.
	canBeEmpty map[string]bool
	// kinds are the loop and foreach variables' steps: "loop" or "foreach".
	kinds map[string]string
	// calls are the calls the walks simulated so far.
	calls int64
	// varies is set once a call's shortest and longest replies differed.
	varies atomic.Bool
	// variesOne is set once a call's one-item reply differed from both.
	variesOne atomic.Bool
}

func (pc *pathCheck) namesOf(steps []*spec.FlowStep) {
	for _, s := range steps {
		switch s.Kind {
		case spec.StepLoop:
			pc.kinds[s.As] = "loop"
		case spec.StepForeach:
			pc.kinds[s.As] = "foreach"
		}
		pc.namesOf(s.Do)
		pc.namesOf(s.Else)
	}
}

// pathFailure is what failed on a path, where, and on which path.
type pathFailure struct {
	file  string
	pos   syntax.Pos
	msg   string
	scope string   // the scope key of the node or step that failed
	path  []string // the path's choices, described
	pc    *pathCheck
}

func (f *pathFailure) key() string {
	return fmt.Sprintf("%s:%d:%d:%s", f.file, f.pos.Line, f.pos.Col, f.msg)
}

// where names the path: the rounds and items the failure is in, and the
// choices that led there.
func (f *pathFailure) where() string {
	var parts []string
	if f.scope != "" && f.scope != "-" {
		for _, p := range strings.Split(f.scope, "/") {
			p, _, _ = strings.Cut(p, "#")
			as, v, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			switch f.pc.kinds[as] {
			case "loop":
				parts = append(parts, fmt.Sprintf("in round %s of loop `%s`", v, as))
			case "foreach":
				parts = append(parts, fmt.Sprintf("in item %s of foreach `%s`", v, as))
			}
		}
	}
	parts = append(parts, f.path...)
	if len(parts) == 0 {
		return "on every path of the flow"
	}
	return strings.Join(parts, ", ")
}

// pathWalk observes one walk of the flow along one path: a dry run's
// accounting, with the choices the path makes.
type pathWalk struct {
	*dryState
	pc     *pathCheck
	run    *Run
	forced map[string]int
	// met are the choices this walk met, in order.
	// unprepared is set when the run's values could not be prepared.
	unprepared bool
	mu         sync.Mutex // the choices, which concurrent calls make too
	met        []pathChoice
	chosen     map[string]int
	failure    *pathFailure
}

type pathChoice struct {
	step    string
	n, made int
}

// walk runs the plan along the path forced gives (steps not in it take
// their first choice).
// replyProfile is how long the stand-in replies' lists are.
type replyProfile int

const (
	shortest replyProfile = iota
	longest
	// mixed: each node's replies shortest or longest, a choice of the
	// path (for nodes whose replies differ).
	mixed
	// single: every list one item long where its schema allows, between
	// the ends (for replies where that differs from both).
	single
)

func (pc *pathCheck) walk(forced map[string]int, profile replyProfile) *pathWalk {
	plan := *pc.plan
	plan.Budget.MaxEvaluations = min(pc.plan.Budget.Evaluations(), pathEvaluationBound)
	w := &pathWalk{pc: pc, forced: forced, chosen: map[string]int{}}
	given := launch.Given{InputValues: map[string]any{}}
	for _, in := range plan.Inputs {
		if in.Required && !in.HasDefault {
			v := "<input " + in.Name + ">"
			if in.MaxChars > 0 && len([]rune(v)) > in.MaxChars {
				v = string([]rune(v)[:in.MaxChars])
			}
			given.InputValues[in.Name] = v
		}
	}
	stage := standIns{profile: profile, w: w}
	r, err := newDetached(&plan, Options{Launch: launch.Launch{Given: given}}, stage)
	if err != nil {
		// The plan's values cannot be prepared without the run's own (a
		// run reports that itself): nothing to walk.
		w.unprepared = true
		return w
	}
	r.ID = "path-check"
	r.dry = &dryState{Dry: Dry{Stage: stage, CallBudget: int(min(pathCallBudget, checkCallBudget-pc.calls)), RenderBudget: pathRenderBudget, Sparse: !denseRenders}, plan: r.Plan, noted: map[string]bool{}, sizes: map[string][2]int{}}
	w.dryState, w.run = r.dry, r
	r.walk = w
	_, err = r.Execute(context.Background())
	if w.failure != nil || w.ended(err) {
		return w
	}
	if err != nil {
		w.fail(pc.plan.Path, positionIn(err, pc.plan.Path), firstLineOf(err), "")
		return w
	}
	env := r.env(kit.Scope{})
	for _, o := range r.Plan.Outputs {
		v, err := evalProgram(o.Program, env)
		if err == nil {
			err = spec.CheckFinite(o.Program, "the value", v)
		}
		if err == nil {
			_, err = json.Marshal(jsonable(v))
		}
		if err != nil {
			w.fail("", o.Program.Pos, fmt.Sprintf("output %q (%s): %v", o.Name, o.Program.Source, firstLineOf(err)), "")
			return w
		}
	}
	return w
}

// standIns answer a path check's calls with stand-ins (calls.StandIn),
// without counting tokens as a dry run's placeholders do.
type standIns struct {
	profile replyProfile
	w       *pathWalk
}

func (s standIns) Complete(_ context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
	label := "reply to " + c.Key
	text := calls.StandIn(c.Kit.Shape, label)
	long := calls.StandInLong(c.Kit.Shape, label)
	if long != text {
		s.w.pc.varies.Store(true)
	}
	if s.profile == single {
		if one := calls.StandInOne(c.Kit.Shape, label); one != text && one != long {
			text = one
		}
		return kit.Reply{Content: text, UsageEstimated: true, Attempts: 1}, calls.Placeholder, nil
	}
	if one := calls.StandInOne(c.Kit.Shape, label); one != text && one != long {
		s.w.pc.variesOne.Store(true)
	}
	switch {
	case long == text:
	case s.profile == longest:
		text = long
	case s.profile == mixed && s.w.chooseKey("reply:"+c.Node, 2) == 1:
		text = long
	}
	return kit.Reply{Content: text, UsageEstimated: true, Attempts: 1}, calls.Placeholder, nil
}

// ended reports whether err ends a walk without failing it: a bound of the
// check or of the run's budget.
func (w *pathWalk) ended(err error) bool {
	return err == nil && (w.dryState.stopped != "" || w.dryState.spent()) || errors.Is(err, errBudget) || budgetStop(err) || errors.Is(err, kit.ErrWaiting)
}

var posPattern = regexp.MustCompile(`:(\d+):(\d+):`)

// positionIn finds a FILE:LINE:COL position of file in an error's text.
func positionIn(err error, file string) syntax.Pos {
	msg := err.Error()
	if i := strings.Index(msg, file+":"); i >= 0 {
		if m := posPattern.FindStringSubmatch(msg[i+len(file):]); m != nil {
			l, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			return syntax.Pos{Line: l, Col: c}
		}
	}
	return syntax.Pos{Line: 1, Col: 1}
}

// fail keeps the walk's first failure.
func (w *pathWalk) fail(file string, pos syntax.Pos, msg, scope string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failure != nil {
		return
	}
	var path []string
	seen := map[string]bool{}
	for _, c := range w.met {
		if st := w.stepAt(c.step); st != nil && st.Kind == spec.StepLoop && c.made == 0 && inFirstRound(scope, st.As) {
			continue // round 1 runs however the loop ends
		}
		if d := w.describe(c); c.n > 1 && !seen[d] {
			seen[d] = true
			path = append(path, d)
		}
	}
	w.failure = &pathFailure{file: file, pos: pos, msg: msg, scope: scope, path: path, pc: w.pc}
}

// inFirstRound reports whether a scope key is in round 1 of loop as.
func inFirstRound(scope, as string) bool {
	for _, p := range strings.Split(scope, "/") {
		p, _, _ = strings.Cut(p, "#")
		if p == as+"=1" {
			return true
		}
	}
	return false
}

// maxChoice marks the choice of a loop's count (see loop) after its step's
// path.
const maxChoice = "#max"

// describe names a choice made.
func (w *pathWalk) describe(c pathChoice) string {
	if path, ok := strings.CutSuffix(c.step, maxChoice); ok {
		s := w.stepAt(path)
		if s == nil || s.MaxExpr == nil {
			return ""
		}
		if c.made == 1 {
			return fmt.Sprintf("when loop `%s` (%d:%d) runs as many times as its max (%s) gives on the path's values", s.As, s.Pos.Line, s.Pos.Col, s.MaxExpr.Source)
		}
		return fmt.Sprintf("when loop `%s` (%d:%d) runs to its max's declared bound", s.As, s.Pos.Line, s.Pos.Col)
	}
	if node, ok := strings.CutPrefix(c.step, "reply:"); ok {
		if c.made == 1 {
			return fmt.Sprintf("when node %q replies with the longest lists its schema allows", node)
		}
		return fmt.Sprintf("when node %q replies with the shortest lists its schema allows", node)
	}
	s := w.stepAt(c.step)
	if s == nil {
		return ""
	}
	at := fmt.Sprintf("%d:%d", s.Pos.Line, s.Pos.Col)
	switch s.Kind {
	case spec.StepLoop:
		if c.made == 1 {
			return fmt.Sprintf("when loop `%s` (%s) ends after its first round", s.As, at)
		}
		return fmt.Sprintf("when loop `%s` (%s) runs to its max", s.As, at)
	case spec.StepForeach:
		return fmt.Sprintf("when foreach `%s` (%s) is empty", s.As, at)
	case spec.StepIf:
		if c.made == 0 {
			return fmt.Sprintf("when the if at %s (%s) is taken", at, s.Cond.Source)
		}
		return fmt.Sprintf("when the if at %s (%s) is not taken", at, s.Cond.Source)
	}
	return ""
}

func (w *pathWalk) stepAt(path string) *spec.FlowStep {
	var find func([]*spec.FlowStep) *spec.FlowStep
	find = func(steps []*spec.FlowStep) *spec.FlowStep {
		for _, s := range steps {
			if s.Path == path {
				return s
			}
			if f := find(s.Do); f != nil {
				return f
			}
			if f := find(s.Else); f != nil {
				return f
			}
		}
		return nil
	}
	return find(w.pc.plan.Flow)
}

// choose makes the walk's choice among n at step s: the same at every
// occurrence of the step, the forced one or the first.
func (w *pathWalk) choose(s *spec.FlowStep, n int) int { return w.chooseKey(s.Path, n) }

// chooseKey is choose for a choice named key: a step's path, or "reply:"
// and a node's id for the length of its replies' lists.
func (w *pathWalk) chooseKey(key string, n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.chosen[key]; ok {
		return c
	}
	c := w.forced[key]
	if c >= n {
		c = 0
	}
	w.chosen[key] = c
	w.met = append(w.met, pathChoice{step: key, n: n, made: c})
	return c
}

// next is the path after this walk's, depth first: the last choice met
// that has another option takes it, the choices after it their first.
func (w *pathWalk) next() (map[string]int, bool) {
	for j := len(w.met) - 1; j >= 0; j-- {
		if w.met[j].made+1 < w.met[j].n {
			out := map[string]int{}
			for _, c := range w.met[:j] {
				out[c.step] = c.made
			}
			out[w.met[j].step] = w.met[j].made + 1
			return out, true
		}
	}
	return nil, false
}

func (w *pathWalk) loop(s *spec.FlowStep, max int) (int, walkSpan) {
	// A max that reads the run is walked to its declared bound, and also
	// as the path's values give it (min(len(messages), 2) before any
	// message is 0: a run skips the loop, and what reads its nodes after
	// it finds them not run).
	if s.MaxExpr != nil && s.MaxExpr.ReadsRun && s.MaxBound > 0 && max < s.MaxBound {
		if w.chooseKey(s.Path+maxChoice, 2) == 1 {
			return max, noSpan{}
		}
	}
	max = plannedMax(s, max)
	if s.Until != nil && s.Until.ReadsRun && max > 1 {
		if w.choose(s, 2) == 1 {
			return 1, noSpan{}
		}
	}
	return max, noSpan{}
}

func (w *pathWalk) until(s *spec.FlowStep, i, max int, holds func() (any, error)) (bool, error) {
	v, err := holds()
	if err != nil {
		w.fail("", s.Until.Pos, fmt.Sprintf("loop until (%s): %v", s.Until.Source, spec.ConditionError(err)), "")
		return false, err
	}
	if s.Until.ReadsRun {
		return false, nil // the path's choice of rounds (see loop)
	}
	b, _ := v.(bool)
	return b, nil
}

func (w *pathWalk) breaks(s *spec.FlowStep, _ int, holds func() (any, error)) (bool, error) {
	v, err := holds()
	if err != nil {
		w.fail("", s.Break.Pos, fmt.Sprintf("loop break (%s): %v", s.Break.Source, spec.ConditionError(err)), "")
		return false, err
	}
	if s.Break.ReadsRun {
		return false, nil // walked whole, as a loop whose until reads the run
	}
	b, _ := v.(bool)
	return b, nil
}

func (w *pathWalk) foreach(s *spec.FlowStep, items []any, err error) ([]any, error) {
	if err != nil {
		w.fail("", s.In.Pos, fmt.Sprintf("foreach in (%s): %v", s.In.Source, err), "")
		return nil, err
	}
	if !s.In.ReadsRun {
		return items, nil
	}
	if len(items) == 0 {
		// The replies made it empty: a path of its own, the only one.
		w.pc.canBeEmpty[s.Path] = true
		w.mu.Lock()
		w.met = append(w.met, pathChoice{step: s.Path, n: 2, made: 1})
		w.mu.Unlock()
		return items, nil
	}
	if w.pc.canBeEmpty[s.Path] && w.choose(s, 2) == 1 {
		return nil, nil
	}
	return items, nil
}

func (w *pathWalk) items(*spec.FlowStep, int) walkSpan { return noSpan{} }

func (w *pathWalk) branches(s *spec.FlowStep, cond func() (any, error)) ([]bool, error) {
	v, err := cond()
	if err != nil {
		w.fail("", s.Cond.Pos, fmt.Sprintf("if (%s): %v", s.Cond.Source, spec.ConditionError(err)), "")
		return nil, err
	}
	if s.Cond.ReadsRun {
		return []bool{w.choose(s, 2) == 0}, nil
	}
	b, _ := v.(bool)
	return []bool{b}, nil
}

// pathNode watches a node on a path: any failure but a bound ends the walk.
type pathNode struct {
	nodeWatch
	w    *pathWalk
	node *spec.NodePlan
	h    *host
}

func (w *pathWalk) node(n *spec.NodePlan, h *host) nodeWatch {
	return pathNode{nodeWatch: w.dryState.node(n, h), w: w, node: n, h: h}
}

func (p pathNode) ended(ctx context.Context, res value.NodeResult, err error) (value.NodeResult, error) {
	if err == nil {
		// The journal writes the node's output as JSON.
		if _, jerr := json.Marshal(res.Output); jerr != nil {
			p.w.fail("", p.node.Pos, fmt.Sprintf("node %q: its output cannot be written as JSON: %v", p.node.ID, jerr), p.h.scope.Key)
			return res, jerr
		}
	}
	if err == nil || errors.Is(err, errBudget) || budgetStop(err) || errors.Is(err, kit.ErrWaiting) || ctx.Err() != nil {
		return res, err
	}
	if file, pos, msg, ok := p.w.pc.plan.TemplateErrorAt(err); ok {
		p.w.fail(file, pos, fmt.Sprintf("node %q: %s", p.node.ID, msg), p.h.scope.Key)
		return res, err
	}
	p.w.fail("", p.node.Pos, firstLineOf(err), p.h.scope.Key)
	return res, err
}

// Load compiles the spec file at path and, when it compiles, checks its
// paths (CheckPaths): the one check every way of starting a run goes
// through (run, validate, resume --spec, test, sweeps, studies, Temporal).
// The path check of a spec compiled from the same bytes, in the same
// folder, with the same libraries and node kinds, is remembered for the
// rest of the process (see checkedPaths).
func Load(path string, reg *spec.Registry) (*spec.Plan, syntax.Diagnostics) {
	plan, diags := spec.Load(path, reg)
	if plan == nil || diags.HasErrors() {
		return plan, diags
	}
	return plan, append(diags, checkedPaths.check(plan, reg)...)
}

// CheckPathsOnce is CheckPaths remembered as Load remembers it (see
// checkedPaths), for a plan compiled from reg by other means than Load:
// validate's, from a file's bytes or an editor's unsaved buffer.
func CheckPathsOnce(plan *spec.Plan, reg *spec.Registry) syntax.Diagnostics {
	return checkedPaths.check(plan, reg)
}

// checkedPaths remembers path checks. CheckPaths is a function of the
// plan, and a plan is a function of what it is compiled from: the spec's
// bytes and path (which anchors its folders), each library's files, and
// the registry of node kinds. Keyed by a digest of all of these, a spec
// loaded again (each case of a sweep, a study's cells, `runner validate`
// given the same file twice, the many runs of a test process) is walked
// once. The few most recent are kept.
var checkedPaths = &pathMemo{max: 32}

type pathMemo struct {
	mu    sync.Mutex
	max   int
	order [][sha256.Size]byte
	diags map[[sha256.Size]byte]syntax.Diagnostics
}

func (m *pathMemo) check(plan *spec.Plan, reg *spec.Registry) syntax.Diagnostics {
	return m.checkWith(plan, reg, CheckPaths)
}

// checkWith is check with walk in place of CheckPaths on a miss (one that
// remembers verdicts on disk: LoadRemembering).
func (m *pathMemo) checkWith(plan *spec.Plan, reg *spec.Registry, walk func(*spec.Plan) syntax.Diagnostics) syntax.Diagnostics {
	key := planKey(plan, reg)
	m.mu.Lock()
	d, ok := m.diags[key]
	m.mu.Unlock()
	if ok {
		return slices.Clone(d)
	}
	d = walk(plan)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.diags == nil {
		m.diags = map[[sha256.Size]byte]syntax.Diagnostics{}
	}
	if _, ok := m.diags[key]; !ok {
		if len(m.order) == m.max {
			delete(m.diags, m.order[0])
			m.order = m.order[1:]
		}
		m.order = append(m.order, key)
		m.diags[key] = slices.Clone(d)
	}
	return d
}

// planKey digests everything plan was compiled from.
func planKey(plan *spec.Plan, reg *spec.Registry) [sha256.Size]byte {
	return planDigest(fmt.Sprintf("%p", reg), plan.Path, plan)
}

// planDigest digests what plan was compiled from, its file named path,
// with its kinds named by kinds.
func planDigest(kinds, path string, plan *spec.Plan) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(kinds)
	field(path)
	field(string(plan.Source))
	libs := slices.Clone(plan.Libraries)
	slices.SortFunc(libs, func(a, b *spec.Library) int { return strings.Compare(a.Use+"\x00"+a.Name, b.Use+"\x00"+b.Name) })
	for _, l := range libs {
		field(l.Use)
		field(l.Name)
		field(l.Origin)
		names := slices.Sorted(maps.Keys(l.Files))
		for _, n := range names {
			field(n)
			field(string(l.Files[n]))
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
