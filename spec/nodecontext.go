package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// NodeContext is what a node kind sees while it compiles: its declaration,
// the spec around it, and ways to report problems and resolve references.
type NodeContext struct {
	c    *compiler
	Node *NodePlan
	Decl *syntax.NodeDecl
	kind Kind
	// data is the kind's prompt data type (nil: the kind renders none).
	data reflect.Type
}

// Plan is the plan being built (agents, models, verdicts and goals are
// already resolved when kinds compile).
func (n *NodeContext) Plan() *Plan { return n.c.plan }

// Decode decodes the node's YAML into v. A value that does not fit its
// field is reported at the value, unless the schema already reported it
// (the schema is checked first, and speaks the spec's language).
func (n *NodeContext) Decode(v any) {
	n.c.r.DecodeError(n.c.file.Root, n.Decl.Raw.Decode(v))
}

// Field returns the YAML value of a key of the node, or nil.
func (n *NodeContext) Field(key string) *yaml.Node {
	if n.Decl.Raw == nil {
		return nil
	}
	return lookupPair(n.Decl.Raw, key)
}

// FieldPos is the position of a key's value, or the node's position.
func (n *NodeContext) FieldPos(key string) syntax.Pos {
	if f := n.Field(key); f != nil {
		return syntax.NodePos(f)
	}
	return n.Decl.Pos
}

// Errorf reports an error at pos, prefixed with the node id.
func (n *NodeContext) Errorf(pos syntax.Pos, format string, args ...any) {
	n.c.r.Errorf(pos, "node %q: %s", n.Node.ID, fmt.Sprintf(format, args...))
}

// Warnf reports a warning at pos.
func (n *NodeContext) Warnf(pos syntax.Pos, format string, args ...any) {
	n.c.r.Warnf(pos, "node %q: %s", n.Node.ID, fmt.Sprintf(format, args...))
}

// Template checks a reference to a prompt template the kind renders with
// its PromptData: the template must exist and use only fields that type
// has. It returns the template name, "" when invalid or absent.
func (n *NodeContext) Template(s syntax.Str) string {
	if n.data == nil {
		if s.Set {
			n.Errorf(s.Pos, "kind %s renders no templates", n.Node.Kind)
		}
		return ""
	}
	return n.c.templateRef(s, n.data, n.Node)
}

// AgentSystem returns the system template an agent's prompts in this node
// are given (its `system:`, "" when none), checked against the kind's
// PromptData. A kind whose node names a system template of its own uses
// Template for that one instead.
func (n *NodeContext) AgentSystem(a *AgentPlan) string {
	if a == nil || a.System == "" || n.data == nil {
		return ""
	}
	key := a.ID + "\x00" + n.data.String()
	reads := n.c.checkTemplate(a.System, n.data, a.systemPos)
	n.c.systemChecked[key] = true
	n.c.nodeTemplates[n.Node.ID] = append(n.c.nodeTemplates[n.Node.ID], templateUse{name: a.System, pos: a.systemPos, reads: reads})
	return a.System
}

// TemplateWith checks a reference to a template the kind renders with
// another dot than its PromptData (a zero value of that type), e.g. a
// notice posted into a conversation.
func (n *NodeContext) TemplateWith(s syntax.Str, data any) string {
	return n.c.templateRef(s, reflect.TypeOf(data), n.Node)
}

// SetOutput declares the type of the node's output (nodes.ID.output) and
// of each agent's output (nodes.ID.outputs.AGENT; nil: the same as output).
// Expressions reading them are checked against these types. A kind that
// does not call it outputs values of any type.
func (n *NodeContext) SetOutput(output, perAgent *Type) {
	n.Node.Output, n.Node.Outputs = output, perAgent
}

// SetOutputOf declares the node's output type as built from the types of
// its own expressions (a computed value), which are known only once every
// node has declared its output: build is called then, with typeOf giving
// the type of one of the node's Programs, until the types settle.
func (n *NodeContext) SetOutputOf(build func(typeOf func(*Program) *Type) *Type) {
	n.c.outputBuilders = append(n.c.outputBuilders, outputBuilder{node: n.Node, build: build})
}

// UseModel declares that the node calls model m, so that the run connects
// to its endpoint (and needs its key). Models no node uses need nothing.
func (n *NodeContext) UseModel(m *ModelPlan) {
	if m == nil {
		return
	}
	for _, x := range n.Node.Models {
		if x == m {
			return
		}
	}
	n.Node.Models = append(n.Node.Models, m)
}

// AgentModel is the model the node calls for agent a: override when the
// node names one, else the agent's. It declares the use (UseModel).
func (n *NodeContext) AgentModel(a *AgentPlan, override *ModelPlan) *ModelPlan {
	m := override
	if m == nil {
		m = a.Model
	}
	n.UseModel(m)
	return m
}

// UseSummaries declares that the node's prompts use history summaries when
// the spec configures them: the summary template is checked and the
// summary models are declared as used, for each of the node's agents.
func (n *NodeContext) UseSummaries() {
	sp := n.c.plan.Summarize
	if sp == nil {
		return
	}
	for _, a := range n.Node.Agents {
		if sp.Model != nil {
			n.UseModel(sp.Model)
		} else {
			n.UseModel(a.Model)
		}
	}
}

// ThreadSummaries compiles a conversation's own summaries (a converse
// node's summarize: mapping) as history.summarize is compiled, marked
// Thread, with keep (default 0; its schema has no records: the summaries
// cover the conversation's messages); the summary model (else each agent's)
// is declared used and the record summary declared.
func (n *NodeContext) ThreadSummaries(s *syntax.Summarize) *SummarizePlan {
	what := fmt.Sprintf("node %q: summarize", n.Node.ID)
	sp := n.c.summarizePlan(s, what)
	sp.Thread = true
	if s.Keep != nil {
		if *s.Keep < 0 || *s.Keep > 1000 {
			n.c.r.Errorf(s.Pos, "%s.keep is %d; it must be a whole number from 0 to 1000", what, *s.Keep)
		} else {
			sp.Keep = *s.Keep
		}
	}
	for _, a := range n.Node.Agents {
		if sp.Model != nil {
			n.UseModel(sp.Model)
		} else {
			n.UseModel(a.Model)
		}
	}
	n.DeclareRecord("summary")
	return sp
}

// RunsNode declares that this node runs another node itself (what names
// the key, e.g. "watch"), which then need not appear in flow. It reports an
// unknown node, the node itself, and (once every node compiled) cycles of
// nodes running each other. It returns the id, "" when invalid.
func (n *NodeContext) RunsNode(s syntax.Str, what string) string {
	if !n.c.file.Nodes.Has(s.V) {
		if n.c.file.Nodes.Invalid {
			return ""
		}
		n.Errorf(s.Pos, "%s runs unknown node %q%s", what, s.V, syntax.DidYouMean(s.V, n.c.file.Nodes.Names()))
		return ""
	}
	if s.V == n.Node.ID {
		n.Errorf(s.Pos, "%s: a node cannot run itself", what)
		return ""
	}
	n.c.reachable[s.V] = true
	n.Node.Runs = append(n.Node.Runs, s.V)
	n.c.runsAt[n.Node.ID+"\x00"+s.V] = s.Pos
	return s.V
}

// HasTemplate reports whether a template of that name exists.
func (n *NodeContext) HasTemplate(name string) bool {
	return n.c.plan.Templates.Lookup(name) != nil
}

// Expr compiles an expression with the flow environment plus extra names
// (their values fix their types). The Program is complete once every node
// has compiled (expressions are checked against the output types nodes
// declare); a kind keeps the pointer.
func (n *NodeContext) Expr(e syntax.Expr, extra map[string]any, want ExprResult, what string) *Program {
	return n.c.compileExpr(e, extra, want, fmt.Sprintf("node %q: %s", n.Node.ID, what))
}

// ExprTyped is Expr where some extra names' types are known only once
// the nodes' output types are (a compute entry reading the entries before
// it): typed gives, when the expression is checked, values of those types
// that stand in for extra's in the type check. The run evaluates the
// expression with extra's names bound as Execute binds them.
func (n *NodeContext) ExprTyped(e syntax.Expr, extra map[string]any, typed func() map[string]any, want ExprResult, what string) *Program {
	p := n.c.compileExpr(e, extra, want, fmt.Sprintf("node %q: %s", n.Node.ID, what))
	if p != nil {
		n.c.pending[len(n.c.pending)-1].typedExtra = typed
	}
	return p
}

// ExprPos is the position of a byte offset of an expression's source
// (trimmed of surrounding space), for a kind's own diagnostics about a part
// of an expression.
func (n *NodeContext) ExprPos(e syntax.Expr, offset int) syntax.Pos {
	return n.c.offsetPos(e, strings.TrimSpace(e.Source), offset)
}

// ExprChoice compiles an expression that must give one of choices (an
// agent id, say): a result of another type, or a constant that is not among
// choices, is an error.
func (n *NodeContext) ExprChoice(e syntax.Expr, extra map[string]any, what string, choices []string) *Program {
	return n.c.compileExprChoice(e, extra, StringResult, fmt.Sprintf("node %q: %s", n.Node.ID, what), choices)
}

// Agent resolves an agent reference.
func (n *NodeContext) Agent(s syntax.Str) *AgentPlan {
	a, ok := n.c.plan.AgentByID[s.V]
	if !ok {
		if n.c.file.Agents.Invalid {
			return nil
		}
		n.Errorf(s.Pos, "unknown agent %q%s", s.V, syntax.DidYouMean(s.V, n.c.file.Agents.Names()))
		return nil
	}
	return a
}

// Model resolves a model reference; nil when absent or invalid.
func (n *NodeContext) Model(s syntax.Str) *ModelPlan {
	if !s.Set {
		return nil
	}
	return n.c.modelRef(s, fmt.Sprintf("node %q", n.Node.ID))
}

// VerdictSet resolves "verdicts.NAME" or "NAME" to its options.
func (n *NodeContext) VerdictSet(s syntax.Str) (string, []string) {
	name := strings.TrimPrefix(strings.TrimSpace(s.V), "verdicts.")
	opts, ok := n.c.plan.Verdicts[name]
	if !ok {
		n.Errorf(s.Pos, "unknown verdict set %q%s", name, syntax.DidYouMean(name, sortedKeys(n.c.plan.Verdicts)))
		return "", nil
	}
	return name, opts
}

// DeclareRecord notes that this node records messages under name.
func (n *NodeContext) DeclareRecord(name string) { n.c.records[name] = true }

// RequireRecord checks, once every node has compiled, that some node records
// messages under name.
func (n *NodeContext) RequireRecord(s syntax.Str) {
	n.c.requireRecord(s, "node "+strconv.Quote(n.Node.ID))
}

// requireRecord checks, once every node has compiled, that some node
// records s; who names the reference in the error.
func (c *compiler) requireRecord(s syntax.Str, who string) {
	c.deferred = append(c.deferred, func() {
		if !c.records[s.V] {
			var names []string
			for r := range c.records {
				names = append(names, r)
			}
			sort.Strings(names)
			c.r.Errorf(s.Pos, "%s: no node records %q%s", who, s.V, syntax.DidYouMean(s.V, names))
		}
	})
}

// JSONSchema compiles an inline JSON Schema written in YAML at node. It
// returns the compiled schema and the schema as JSON (for endpoints that
// take it, and for the output's type); nil when invalid.
func (n *NodeContext) JSONSchema(node *yaml.Node) (*jsonschema.Schema, json.RawMessage) {
	// Duplicate keys and the like were reported when the whole spec was
	// converted; a scratch reporter keeps them from being reported twice.
	loc := syntax.YAMLToJSON(&syntax.Reporter{Src: n.c.r.Src}, node)
	if loc == nil {
		n.Errorf(syntax.NodePos(node), "output schema is too large")
		return nil, nil
	}
	data, err := json.Marshal(loc.Value)
	if err != nil {
		n.Errorf(syntax.NodePos(node), "output schema: %v", err)
		return nil, nil
	}
	sch, err := CompileJSONSchema(url.PathEscape(n.Node.ID)+"-output", data)
	if err != nil {
		n.schemaDocError(node, loc, err)
		return nil, nil
	}
	return sch, data
}

// schemaDocError reports why a JSON Schema written in the spec does not
// compile, at the key or value each complaint of the meta-schema is about.
func (n *NodeContext) schemaDocError(node *yaml.Node, loc *syntax.Located, err error) {
	var se *jsonschema.SchemaError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &se) || !errors.As(se.Err, &ve) {
		msg := schemaErrorMessage(err)
		at := node
		if ref, ok := refusedRef(msg); ok {
			// Point at the $ref that names the refused file or URL.
			for _, ptr := range sortedKeys(loc.Values) {
				v := loc.Values[ptr]
				target, _, _ := strings.Cut(v.Value, "#")
				if strings.HasSuffix(ptr, "/$ref") && v.Kind == yaml.ScalarNode && target != "" && strings.HasSuffix(ref, target) {
					at = v
					break
				}
			}
		}
		n.Errorf(syntax.NodePos(at), "output schema is not a valid JSON Schema: %s", msg)
		return
	}
	for _, leaf := range syntax.Leaves(ve, loc) {
		ptr := syntax.UnescapeURLPointer(leaf.InstanceLocation)
		at := loc.Values[ptr]
		if at == nil {
			at = node
		}
		where := "schema"
		if ptr != "" {
			where = "schema." + syntax.DescribePointer(ptr)
		}
		msg := leaf.Message
		switch syntax.LastSegment(leaf.KeywordLocation) {
		case "enum":
			msg = syntax.EnumMessage(leaf.Message, at)
		case "type":
			msg = syntax.TypeMessage(leaf.Message, at)
		}
		n.Errorf(syntax.NodePos(at), "output %s: %s", where, msg)
	}
}

// SchemaRef resolves a named schema from a template library: compiled,
// and as JSON.
func (n *NodeContext) SchemaRef(s syntax.Str) (*jsonschema.Schema, json.RawMessage) {
	sch, ok := n.c.plan.Schemas[s.V]
	if !ok {
		var names []string
		for k := range n.c.plan.Schemas {
			names = append(names, k)
		}
		sort.Strings(names)
		n.Errorf(s.Pos, "unknown schema %q%s", s.V, syntax.DidYouMean(s.V, names))
		return nil, nil
	}
	return sch, n.c.plan.SchemaDocs[s.V]
}
