package spec

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// Env holds the values an expression sees. Map turns it into the expr
// environment; the compiler builds the same shape from empty values, so an
// expression that compiles finds every name it uses at run time.
type Env struct {
	Inputs   map[string]any
	Vars     map[string]any
	Nodes    map[string]value.NodeResult
	Goals    []value.GoalView
	Verdicts map[string][]string
	Messages []value.Message
	Round    int
	Goal     value.GoalView
	// Loop holds loop and foreach variables by their 'as' name; they are
	// also visible as top-level names.
	Loop map[string]any
	// Loops holds every enclosing loop's iteration and foreach's item
	// number (1-based) by the loop's name, as messages carry them
	// (msg.loops) and templates see them (.Loops).
	Loops map[string]int
	// Extra holds kind-specific names (participants, turn, undecided...).
	Extra map[string]any
	// Seed is the run's seed: mode(list, "random") breaks ties with it.
	Seed int64
}

// SeedName is the hidden name the run's seed has in the environment: an
// expression cannot spell it ($ starts no name), and compiling passes it
// to mode (see tiePatch).
const SeedName = "$seed"

// Map returns the expr environment.
func (e *Env) Map() map[string]any {
	m := map[string]any{
		"inputs":   orEmpty(e.Inputs),
		"vars":     orEmpty(e.Vars),
		"nodes":    e.Nodes,
		"goals":    e.Goals,
		"verdicts": e.Verdicts,
		"messages": e.Messages,
		"round":    e.Round,
		"goal":     e.Goal,
		"loop":     orEmpty(e.Loop),
		"loops":    orNoCounters(e.Loops),
		"latest":   func(record string) []value.Message { return latestOf(e.Messages, record) },
		SeedName:   e.Seed,
	}
	if m["nodes"] == nil || len(e.Nodes) == 0 {
		if e.Nodes == nil {
			m["nodes"] = map[string]value.NodeResult{}
		}
	}
	if e.Goals == nil {
		m["goals"] = []value.GoalView{}
	}
	if e.Verdicts == nil {
		m["verdicts"] = map[string][]string{}
	}
	if e.Messages == nil {
		m["messages"] = []value.Message{}
	}
	for k, v := range e.Loop {
		if _, reserved := m[k]; !reserved {
			m[k] = v
		}
	}
	for k, v := range e.Extra {
		m[k] = v
	}
	return m
}

func orNoCounters(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// latestOf returns each author's latest message of a record, in the order the
// authors first appear.
func latestOf(ms []value.Message, record string) []value.Message {
	return value.LatestOf(ms, record)
}

// exprFunctions are the functions every expression may call, beyond expr's
// builtins (all, any, filter, map, len, sum, mean, max, min...). mode and
// counts take any list: their types list the lists a declared type may be
// (a var's [1, 2] is checked as a list of whole numbers). mode's second
// argument is its tie rule, its third the seed of the rule "random" (a
// spec's expressions get the run's seed there, see tiePatch).
var exprFunctions = []expr.Option{
	expr.Function("mode", func(params ...any) (any, error) {
		list, ok := toList(params[0])
		if !ok {
			return nil, fmt.Errorf("mode: expected a list, got %T", params[0])
		}
		tie, seed := TieNone, int64(1)
		if len(params) > 1 {
			s, _ := params[1].(string)
			if !slices.Contains(TieRules, s) {
				return nil, fmt.Errorf("mode: tie rule %q is not one of %s", fmt.Sprint(params[1]), strings.Join(TieRules, ", "))
			}
			tie = s
		}
		if len(params) > 2 {
			switch n := params[2].(type) {
			case int:
				seed = int64(n)
			case int64:
				seed = n
			}
		}
		return Mode(list, tie, seed), nil
	}, modeTypes()...),
	expr.Function("counts", func(params ...any) (any, error) {
		list, ok := toList(params[0])
		if !ok {
			return nil, fmt.Errorf("counts: expected a list, got %T", params[0])
		}
		out := map[string]any{}
		for _, v := range list {
			k := fmt.Sprint(v)
			n, _ := out[k].(int)
			out[k] = n + 1
		}
		return out, nil
	}, new(func([]any) map[string]any), new(func([]int) map[string]any), new(func([]float64) map[string]any),
		new(func([]string) map[string]any), new(func([]bool) map[string]any)),
}

// toList accepts any slice: a value typed "any" when the expression was
// compiled may hold []string or []Message when it runs.
func toList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// Tie rules of mode: which value a vote gives when several are most
// frequent.
const (
	// TieNone gives no answer (nil): a tie is no majority. The default.
	TieNone = "none"
	// TieFirst gives the tied value seen first in the list (the first
	// agent's, in a list of agents' answers).
	TieFirst = "first"
	// TieRandom draws one of the tied values, seeded by the run's seed and
	// the tied values themselves: the same votes in any order give the same
	// value, and no position in the list is favoured.
	TieRandom = "random"
)

// TieRules are the tie rules mode takes.
var TieRules = []string{TieNone, TieFirst, TieRandom}

// modeTypes are mode's signatures: a list of any item type a declared type
// may be, alone, with a tie rule, or with a tie rule and a seed.
func modeTypes() []any {
	var out []any
	out = append(out, new(func([]any) any), new(func([]int) any), new(func([]float64) any), new(func([]string) any), new(func([]bool) any))
	out = append(out, new(func([]any, string) any), new(func([]int, string) any), new(func([]float64, string) any), new(func([]string, string) any), new(func([]bool, string) any))
	out = append(out, new(func([]any, string, int) any), new(func([]int, string, int) any), new(func([]float64, string, int) any), new(func([]string, string, int) any), new(func([]bool, string, int) any))
	return out
}

// Mode returns the most frequent value of a list; nil values do not vote.
// Values are the same when they print the same (1 and 1.0 are one value).
// When several values are most frequent, tie decides (TieNone, TieFirst,
// TieRandom with seed); an empty list gives nil.
func Mode(list []any, tie string, seed int64) any {
	counts := map[string]int{}
	vals := map[string]any{}
	var order []string
	for _, v := range list {
		if v == nil {
			continue
		}
		k := fmt.Sprint(v)
		if _, ok := counts[k]; !ok {
			order = append(order, k)
			vals[k] = v
		}
		counts[k]++
	}
	top := 0
	for _, k := range order {
		top = max(top, counts[k])
	}
	var tied []string
	for _, k := range order {
		if counts[k] == top {
			tied = append(tied, k)
		}
	}
	switch {
	case len(tied) == 0:
		return nil
	case len(tied) == 1 || tie == TieFirst:
		return vals[tied[0]]
	case tie == TieRandom:
		// Drawn over the tied values in sorted order, so the list's order
		// plays no part.
		sort.Strings(tied)
		h := fnv.New64a()
		fmt.Fprintf(h, "%d", seed)
		for _, k := range tied {
			fmt.Fprintf(h, "\x00%s", k)
		}
		r := rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
		return vals[tied[r.IntN(len(tied))]]
	}
	return nil
}

// tiePatch gives every mode(list, tie) of a spec's expression the run's
// seed as its third argument.
type tiePatch struct{}

func (tiePatch) Visit(n *ast.Node) {
	c, ok := (*n).(*ast.CallNode)
	if !ok || len(c.Arguments) != 2 {
		return
	}
	if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == "mode" {
		c.Arguments = append(c.Arguments, &ast.IdentifierNode{Value: SeedName})
	}
}

// tieErrors are the constant tie rules of mode calls that are not one.
func tieErrors(root ast.Node) []refError {
	var out []refError
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		c, ok := (*n).(*ast.CallNode)
		if !ok || len(c.Arguments) < 2 {
			return
		}
		if id, ok := c.Callee.(*ast.IdentifierNode); !ok || id.Value != "mode" {
			return
		}
		if s, ok := c.Arguments[1].(*ast.StringNode); ok && !slices.Contains(TieRules, s.Value) {
			out = append(out, refError{offset: s.Location().From, msg: fmt.Sprintf("mode: tie rule %q is not one of %s%s", s.Value, strings.Join(TieRules, ", "), syntax.DidYouMean(s.Value, TieRules))})
		}
	}))
	return out
}

// ExprResult says what an expression must produce.
type ExprResult int

// Expression result kinds.
const (
	AnyResult ExprResult = iota
	BoolResult
	IntResult
	// StringResult is text, such as an agent id.
	StringResult
	// ListResult is a list, such as what foreach iterates over.
	ListResult
	// PairsResult is few-shot pairs: a list of {user, assistant} mappings
	// or [user, assistant] lists, or JSON text of one.
	PairsResult
)

// refChecker walks an expression and checks names indexed on nodes, vars,
// inputs and verdicts, which a map environment would otherwise accept. It
// also collects the nodes the expression reads, and which of those reads
// are guarded against a node that has not run (nodes.X?.output,
// nodes.X.output ?? fallback).
type refChecker struct {
	known map[string][]string
	errs  []refError
	// typed is set when the expression reads vars or inputs.
	typed bool
	// readsRun is set when it reads what the run has recorded so far
	// (nodes, messages, latest, goal_verdicts).
	readsRun bool
	reads    []nodeRead
	guarded  map[ast.Node]bool
	// conditional are member accesses evaluated only on some values (a
	// branch of ?:, the right side of && and ||).
	conditional map[ast.Node]bool
	// outputReads are the nodes.X member accesses followed by .output or
	// .outputs (a node that has not run has them nil; its calls, text and
	// messages are zero values that do no harm).
	outputReads map[ast.Node]bool
}

type refError struct {
	offset int
	msg    string
}

type nodeRead struct {
	id     string
	offset int
	at     ast.Node
}

func (v *refChecker) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok {
		switch id.Value {
		case "vars", "inputs":
			v.typed = true
		case "nodes", "messages", "latest", "goal_verdicts":
			v.readsRun = true
		}
	}
	if c, ok := (*node).(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == "latest" {
			v.readsRun = true
		}
	}
	if b, ok := (*node).(*ast.BinaryNode); ok && b.Operator == "??" {
		v.guardCoalesce(b.Left)
	}
	v.noteConditional(*node)
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	if m.Optional {
		v.guard(m.Node)
	}
	if prop, ok := m.Property.(*ast.StringNode); ok && (prop.Value == "output" || prop.Value == "outputs") {
		if v.outputReads == nil {
			v.outputReads = map[ast.Node]bool{}
		}
		v.outputReads[m.Node] = true
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	names, checked := v.known[id.Value]
	if !checked {
		return
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	for _, n := range names {
		if n == prop.Value {
			if id.Value == "nodes" {
				v.reads = append(v.reads, nodeRead{id: prop.Value, offset: prop.Location().From, at: m})
			}
			return
		}
	}
	what := map[string]string{"nodes": "node", "vars": "var", "inputs": "input", "verdicts": "verdict set", "loops": "loop"}[id.Value]
	v.errs = append(v.errs, refError{
		offset: m.Location().From,
		msg:    fmt.Sprintf("unknown %s %q%s", what, prop.Value, syntax.DidYouMean(prop.Value, names)),
	})
}

// guard marks every member access inside n as guarded.
func (v *refChecker) guard(n ast.Node) {
	if v.guarded == nil {
		v.guarded = map[ast.Node]bool{}
	}
	ast.Walk(&n, visitorFunc(func(x *ast.Node) {
		if _, ok := (*x).(*ast.MemberNode); ok {
			v.guarded[*x] = true
		}
	}))
}

// nodeRefs are the nodes whose output the expression reads, at their
// positions.
func (v *refChecker) nodeRefs(pos func(offset int) syntax.Pos, what string) []nodeRef {
	out := make([]nodeRef, 0, len(v.reads))
	for _, r := range v.reads {
		if v.outputReads[r.at] {
			out = append(out, nodeRef{id: r.id, pos: pos(r.offset), guarded: v.guarded[r.at], conditional: v.conditional[r.at], what: what})
		}
	}
	return out
}

// exprErrorPos turns an expr compile error into a spec position.
func exprErrorPos(base syntax.Pos, err error) (syntax.Pos, string) {
	var fe *file.Error
	if e, ok := err.(*file.Error); ok {
		fe = e
	}
	if fe == nil {
		return base, err.Error()
	}
	pos := base
	if fe.Line <= 1 {
		pos.Col += fe.Column
	} else {
		pos.Line += fe.Line - 1
		pos.Col = fe.Column + 1
	}
	return pos, fe.Message
}

// ExprFunctions returns the functions every expression of a spec may
// call beyond expr's builtins, for tools that compile expressions of their
// own over a run (the assertions of spec tests).
func ExprFunctions() []expr.Option {
	return append([]expr.Option(nil), exprFunctions...)
}
