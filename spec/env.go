package spec

import (
	"fmt"
	"reflect"
	"sort"

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
	// Extra holds kind-specific names (participants, turn, undecided...).
	Extra map[string]any
}

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
		"latest":   func(record string) []value.Message { return latestOf(e.Messages, record) },
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
// (a var's [1, 2] is checked as a list of whole numbers).
var exprFunctions = []expr.Option{
	expr.Function("mode", func(params ...any) (any, error) {
		list, ok := toList(params[0])
		if !ok {
			return nil, fmt.Errorf("mode: expected a list, got %T", params[0])
		}
		return mode(list), nil
	}, new(func([]any) any), new(func([]int) any), new(func([]float64) any), new(func([]string) any), new(func([]bool) any)),
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

// mode returns the most frequent value; ties go to the value seen first. Nil
// values do not vote.
func mode(list []any) any {
	counts := map[string]int{}
	first := map[string]int{}
	vals := map[string]any{}
	for i, v := range list {
		if v == nil {
			continue
		}
		k := fmt.Sprint(v)
		if _, ok := first[k]; !ok {
			first[k] = i
			vals[k] = v
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return first[keys[i]] < first[keys[j]]
	})
	if len(keys) == 0 {
		return nil
	}
	return vals[keys[0]]
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
	what := map[string]string{"nodes": "node", "vars": "var", "inputs": "input", "verdicts": "verdict set"}[id.Value]
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
