package spec

import (
	"errors"

	"github.com/debate-runner/runner/spec/syntax"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// FieldIn returns the YAML value at a path of keys under the node
// ("output", "fallback"), or nil.
func (n *NodeContext) FieldIn(keys ...string) *yaml.Node {
	if n.Decl.Raw == nil {
		return nil
	}
	at := n.Decl.Raw
	for _, k := range keys {
		if at.Kind == yaml.AliasNode {
			at = at.Alias
		}
		if at == nil || at.Kind != yaml.MappingNode {
			return nil
		}
		if at = lookupPair(at, k); at == nil {
			return nil
		}
	}
	return at
}

// fallbackLack is what a node's fallback output leaves out of the output
// its replies give, and where the fallback is written.
type fallbackLack struct {
	props []string
	pos   syntax.Pos
}

// FallbackLacks records properties every parsed reply of the node has but
// its fallback output leaves out: an expression that reads one of them
// without a guard (nodes.X.output.P ?? DEFAULT, nodes.X.output?.P) is an
// error, reported at the fallback, since the run would fail there on the
// first unreadable reply.
func (n *NodeContext) FallbackLacks(pos syntax.Pos, props ...string) {
	if len(props) == 0 {
		return
	}
	if n.c.fallbackLacks == nil {
		n.c.fallbackLacks = map[string]fallbackLack{}
	}
	l := n.c.fallbackLacks[n.Node.ID]
	l.pos = pos
	for _, p := range props {
		if !contains(l.props, p) {
			l.props = append(l.props, p)
		}
	}
	n.c.fallbackLacks[n.Node.ID] = l
}

// CheckFallback checks a fallback output written in the spec against the
// node's JSON Schema: a value the schema forbids is an error where it is
// written; required properties it leaves out are recorded (FallbackLacks),
// since specs that guard their reads of them (`?? nodes.X.text`) leave
// them out on purpose.
func (n *NodeContext) CheckFallback(node *yaml.Node, sch *jsonschema.Schema) {
	if node == nil || sch == nil {
		return
	}
	loc := syntax.YAMLToJSON(&syntax.Reporter{Src: n.c.r.Src}, node)
	if loc == nil {
		return
	}
	err := sch.Validate(loc.Value)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			n.Errorf(syntax.NodePos(node), "output fallback: %v", err)
		}
		return
	}
	for _, leaf := range syntax.Leaves(ve, loc) {
		ptr := syntax.UnescapeURLPointer(leaf.InstanceLocation)
		if ptr == "" && syntax.LastSegment(leaf.KeywordLocation) == "required" {
			n.FallbackLacks(syntax.NodePos(node), syntax.QuotedNames(leaf.Message)...)
			continue
		}
		at := loc.Values[ptr]
		if at == nil {
			at = node
		}
		where := "output fallback"
		if ptr != "" {
			where += " " + syntax.DescribePointer(ptr)
		}
		n.Errorf(syntax.NodePos(at), "%s does not satisfy the output schema: %s", where, leaf.Message)
	}
}

// checkFallbackRead reports an unguarded read nodes.X.output.P (or
// nodes.X.outputs.A.P) of a property X's fallback leaves out.
func (c *compiler) checkFallbackRead(chain []member, e syntax.Expr, src, what string) bool {
	l, ok := c.fallbackLacks[chain[0].name]
	if !ok {
		return true
	}
	i := 2
	if chain[1].name == "outputs" {
		i = 3
	} else if chain[1].name != "output" {
		return true
	}
	// Only the member node that reads P itself: the chain of a longer
	// read (nodes.X.output.P.Q) is visited once per member.
	if i != len(chain)-1 || !contains(l.props, chain[i].name) {
		return true
	}
	read := c.offsetPos(e, src, chain[i].offset)
	c.r.Errorf(l.pos, "node %q: output fallback lacks %q, which %s reads at %s:%d:%d without a guard: add it to the fallback, or guard the read (`... ?? DEFAULT`)",
		chain[0].name, chain[i].name, what, c.r.Src.Name, read.Line, read.Col)
	return false
}

// guardedNodes are the nodes of an expression on the left of `??`, whose
// nil (or failure to fetch) the operator absorbs.
func guardedNodes(root ast.Node) map[ast.Node]bool {
	out := map[ast.Node]bool{}
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		if b, ok := (*n).(*ast.BinaryNode); ok && b.Operator == "??" {
			left := b.Left
			ast.Walk(&left, visitorFunc(func(m *ast.Node) { out[*m] = true }))
		}
	}))
	return out
}

// optionalChain reports whether a member chain has an optional step
// (nodes.X?.output, nodes.X.output?.p).
func optionalChain(n ast.Node) bool {
	for {
		switch x := n.(type) {
		case *ast.MemberNode:
			if x.Optional {
				return true
			}
			n = x.Node
		case *ast.ChainNode:
			n = x.Node
		default:
			return false
		}
	}
}
