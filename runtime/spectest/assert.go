package spectest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/spec/value"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// Env is what an assertion sees: the run as a test looks at it. Names are
// those of result.json and expressions in specs.
type Env struct {
	// Status is completed, inconclusive, failed, waiting or
	// budget_exceeded; Error why it failed.
	Status string `expr:"status"`
	Error  string `expr:"error"`
	// InconclusiveGoals and FallbackOutputs say why a run that finished
	// is inconclusive (result.json's conclusion); Fallbacks and
	// ForcedVerdicts count the messages whose output is a fallback and the
	// verdicts a conversation forced.
	InconclusiveGoals []string `expr:"inconclusive_goals"`
	FallbackOutputs   []string `expr:"fallback_outputs"`
	Fallbacks         int      `expr:"fallbacks"`
	ForcedVerdicts    int      `expr:"forced_verdicts"`
	// Outputs are the run's outputs by name.
	Outputs map[string]any `expr:"outputs"`
	// Messages are every recorded message, as expressions in specs see them.
	Messages []value.Message `expr:"messages"`
	// Verdicts are the goal verdicts (result.json's goal_verdicts).
	Verdicts []value.GoalVerdicts `expr:"verdicts"`
	// Calls are the model calls, in the order of the flow.
	Calls []Call `expr:"calls"`
	// Events are the journal's events, in order.
	Events     []Event               `expr:"events"`
	Rejections []Rejection           `expr:"rejections"`
	ToolCalls  []result.ToolCallInfo `expr:"tool_calls"`
	Warnings   []string              `expr:"warnings"`
	Usage      map[string]any        `expr:"usage"`
	Inputs     map[string]any        `expr:"inputs"`
	Vars       map[string]any        `expr:"vars"`
	Nodes      map[string]Node       `expr:"nodes"`
	Whispers   []map[string]any      `expr:"whispers"`
	// Dynamics are result.json's dynamics: verdict changes, consensus and
	// whisper influence per thread (a node on a goal).
	Dynamics []map[string]any `expr:"dynamics"`
	// Score is the run's score (nil without one), Judgements a judged
	// score's judgements (result.json's).
	Score      *float64         `expr:"score"`
	Judgements []map[string]any `expr:"judgements"`

	// Absent are the agents nodes completed without (result.json's absent).
	Absent []Absence `expr:"absent"`
}

// Call is one model call of the run.
type Call struct {
	Key   string `expr:"key" json:"key"`
	Node  string `expr:"node" json:"node"`
	Agent string `expr:"agent" json:"agent"`
	Round int    `expr:"round" json:"round"`
	Goal  string `expr:"goal" json:"goal"`
	// Prompt is the last user message, System the system prompt.
	Prompt string `expr:"prompt" json:"prompt"`
	System string `expr:"system" json:"system"`
	// Reply is the text the call was answered with ("" when it failed).
	Reply string `expr:"reply" json:"reply"`
	// Tools are the names of the tools the model called in its reply.
	Tools []string `expr:"tools" json:"tools"`
	// Attempts counts the requests sent (retries included); Statuses are
	// their HTTP statuses (0 for a timeout or dropped connection).
	Attempts int   `expr:"attempts" json:"attempts"`
	Statuses []int `expr:"statuses" json:"statuses"`
	// Scripted is false for a call answered with a stand-in.
	Scripted bool `expr:"scripted" json:"scripted"`
	// Error is why the call failed after its retries, or "".
	Error string `expr:"error" json:"error"`
}

// Event is a journal event.
type Event struct {
	Type string         `expr:"type" json:"type"`
	Key  string         `expr:"key" json:"key"`
	Data map[string]any `expr:"data" json:"data"`
}

// Rejection is a reply a conversation rejected.
type Rejection struct {
	Key     string `expr:"key" json:"key"`
	Node    string `expr:"node" json:"node"`
	Goal    string `expr:"goal" json:"goal"`
	Round   int    `expr:"round" json:"round"`
	Agent   string `expr:"agent" json:"agent"`
	Attempt int    `expr:"attempt" json:"attempt"`
	Reasons string `expr:"reasons" json:"reasons"`
	Content string `expr:"content" json:"content"`
}

// Absence is an agent a node completed without.
type Absence struct {
	Key    string `expr:"key" json:"key"`
	Node   string `expr:"node" json:"node"`
	Goal   string `expr:"goal" json:"goal"`
	Round  int    `expr:"round" json:"round"`
	Agent  string `expr:"agent" json:"agent"`
	Reason string `expr:"reason" json:"reason"`
	Reply  string `expr:"reply" json:"reply"`
}

// Node counts the executions of a node.
type Node struct {
	// Runs is how often the node started; Calls the model calls it made.
	Runs  int `expr:"runs" json:"runs"`
	Calls int `expr:"calls" json:"calls"`
}

// Assertion is a compiled assertion.
type Assertion struct {
	Source  Source
	program *vm.Program
	tree    *parser.Tree
}

func exprOptions() []expr.Option {
	return append([]expr.Option{expr.Env(Env{}), expr.AsBool()}, spec.ExprFunctions()...)
}

// compile compiles an assertion, or says where it is wrong.
func compile(path string, src Source) (*Assertion, error) {
	prog, err := spec.CompileExpr(src.Text, exprOptions()...)
	if err != nil {
		line, col := src.Line, src.Col
		msg := err.Error()
		if fe, ok := err.(*file.Error); ok {
			line, col = src.at(fe.Line, fe.Column+1)
			msg = fe.Message
		}
		return nil, &yamljson.Error{Path: path, Line: line, Col: col, Msg: "assertion " + quote(src.Text) + ": " + msg}
	}
	tree, err := parser.Parse(src.Text)
	if err != nil {
		return nil, &yamljson.Error{Path: path, Line: src.Line, Col: src.Col, Msg: err.Error()}
	}
	return &Assertion{Source: src, program: prog, tree: tree}, nil
}

// check evaluates the assertion; failing, it says what the values
// involved were.
func (a *Assertion) check(env *Env) (ok bool, detail string) {
	v, err := expr.Run(a.program, *env)
	if err != nil {
		return false, "error: " + firstLine(err.Error()) + a.values(env)
	}
	b, _ := v.(bool)
	if b {
		return true, ""
	}
	return false, strings.TrimPrefix(a.values(env), "\n")
}

// values shows the parts of a failed assertion: each side of the
// comparison that failed, each operand of a condition, the arguments of
// a function, and for all and none over a list the first element that
// breaks them, as TEXT = VALUE lines.
func (a *Assertion) values(env *Env) string {
	var parts []part
	collect(a.tree.Node, &parts)
	var b strings.Builder
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.text] || strings.TrimSpace(p.text) == strings.TrimSpace(a.Source.Text) {
			continue
		}
		seen[p.text] = true
		prog, err := spec.CompileExpr(p.text, append([]expr.Option{expr.Env(Env{})}, spec.ExprFunctions()...)...)
		if err != nil {
			continue // a part that reads a closure's variables
		}
		v, err := expr.Run(prog, *env)
		if err != nil {
			fmt.Fprintf(&b, "\n%s: error: %s", p.label(), firstLine(err.Error()))
			continue
		}
		if p.first {
			list, _ := v.([]any)
			if len(list) == 0 {
				continue
			}
			v = list[0]
			if m, ok := asMap(v); ok && len(p.fields) > 0 {
				showFields(&b, p.label(), m, p.fields)
				continue
			}
		}
		fmt.Fprintf(&b, "\n%s = %s", p.label(), show(v, maxShown))
	}
	return b.String()
}

// part is an expression whose value a failure shows; first shows the
// first element of a list, under the name given.
type part struct {
	text, name string
	first      bool
	// fields are the fields of the first element the predicate reads:
	// shown alone, and whole, they say more than the element cut short.
	fields []string
}

func (p part) label() string {
	if p.name != "" {
		return p.name
	}
	return p.text
}

// collect gathers the parts of an assertion worth showing when it fails.
func collect(n ast.Node, out *[]part) {
	switch x := n.(type) {
	case *ast.BinaryNode:
		switch x.Operator {
		case "and", "&&", "or", "||":
			collect(x.Left, out)
			collect(x.Right, out)
			return
		}
		addPart(x.Left, out)
		addPart(x.Right, out)
	case *ast.UnaryNode:
		collect(x.Node, out)
	case *ast.ConditionalNode:
		collect(x.Cond, out)
	case *ast.BuiltinNode:
		builtinParts(x, out)
	case *ast.CallNode:
		for _, arg := range x.Arguments {
			addPart(arg, out)
		}
	default:
		addPart(n, out)
	}
}

// builtinParts shows what a builtin over a list saw: for all and none,
// the first element that breaks them; for the others, the list's length
// and the arguments that are not predicates.
func builtinParts(x *ast.BuiltinNode, out *[]part) {
	if len(x.Arguments) == 2 {
		if pred, ok := x.Arguments[1].(*ast.PredicateNode); ok {
			list := x.Arguments[0].String()
			fields := predicateFields(pred)
			switch x.Name {
			case "all":
				*out = append(*out, part{text: fmt.Sprintf("filter(%s, {not (%s)})", list, pred), name: "first of " + list + " where it does not hold", first: true, fields: fields})
				return
			case "none":
				*out = append(*out, part{text: fmt.Sprintf("filter(%s, {%s})", list, pred), name: "first of " + list + " where it holds", first: true, fields: fields})
				return
			}
			if !isLiteral(x.Arguments[0]) {
				*out = append(*out, part{text: "len(" + list + ")"})
			}
			return
		}
	}
	for _, arg := range x.Arguments {
		addPart(arg, out)
	}
}

func isLiteral(n ast.Node) bool {
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode, *ast.NilNode, *ast.ConstantNode, *ast.PredicateNode, *ast.PointerNode:
		return true
	}
	return false
}

// addPart adds a part unless it is a literal or a predicate, and the
// parts of what it is made of.
func addPart(n ast.Node, out *[]part) {
	if isLiteral(n) {
		return
	}
	*out = append(*out, part{text: n.String()})
	switch x := n.(type) {
	case *ast.BuiltinNode:
		builtinParts(x, out)
	case *ast.BinaryNode:
		addPart(x.Left, out)
		addPart(x.Right, out)
	case *ast.CallNode:
		for _, arg := range x.Arguments {
			addPart(arg, out)
		}
	}
}

// predicateFields are the fields a predicate reads of its element (.x),
// in the order it reads them.
func predicateFields(pred *ast.PredicateNode) []string {
	var out []string
	ast.Find(pred.Node, func(n ast.Node) bool {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return false
		}
		if _, ok := m.Node.(*ast.PointerNode); !ok {
			return false
		}
		if name, ok := m.Property.(*ast.StringNode); ok && !slices.Contains(out, name.Value) {
			out = append(out, name.Value)
		}
		return false
	})
	return out
}

// asMap gives an element's fields by their names in assertions.
func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m) == nil && m != nil
}

// showFields shows an element by its key (when it has one) and the
// fields a predicate read.
func showFields(b *strings.Builder, label string, m map[string]any, fields []string) {
	if k, ok := m["key"].(string); ok && !slices.Contains(fields, "key") {
		fmt.Fprintf(b, "\n%s: the one with key %s", label, quote(k))
	} else {
		fmt.Fprintf(b, "\n%s:", label)
	}
	for _, f := range fields {
		if v, ok := m[f]; ok {
			fmt.Fprintf(b, "\n    .%s = %s", f, show(v, maxField))
		}
	}
}

// maxShown bounds a value shown in a failure; maxField a field of an
// element that broke all or none, which is what the failure is about.
const (
	maxShown = 400
	maxField = 4000
)

func show(v any, limit int) string {
	var s string
	switch x := v.(type) {
	case string:
		s = quote(x)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			s = fmt.Sprint(v)
		} else {
			s = string(data)
		}
	}
	if len(s) > limit {
		s = s[:limit] + fmt.Sprintf("... (%d characters)", len(s))
	}
	return s
}

func quote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
