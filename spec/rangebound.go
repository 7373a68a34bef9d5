package spec

import (
	"errors"
	"fmt"
	"reflect"
	"text/template"
	"text/template/parse"
)

// MaxTemplateRange is the most a template's range over a number may count
// to: `{{range 2000000000}}` would render (or spin) for minutes. Lists and
// mappings are as long as the run's data makes them.
const MaxTemplateRange = 10_000

// ErrRunaway is in the error of a template that ranged over more than
// MaxTemplateRange: it fails a dry run too, whatever the replies.
var ErrRunaway = errors.New("a runaway template")

// rangeBoundFunc is the function boundRanges puts at the end of every
// range's pipeline.
const rangeBoundFunc = "rangeBound"

// rangeCount is the number a range's pipeline is, when it is a literal.
func rangeCount(p *parse.PipeNode) (int64, bool) {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return 0, false
	}
	n, ok := p.Cmds[0].Args[0].(*parse.NumberNode)
	if !ok || !n.IsInt {
		return 0, false
	}
	return n.Int64, true
}

// rangeBound passes a ranged value through, refusing a number larger than
// MaxTemplateRange: what validate cannot see (`{{range .Vars.n}}`) fails
// when rendered instead of running away.
func rangeBound(v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rv.Int() > MaxTemplateRange {
			return nil, fmt.Errorf("range over %d: a template ranges over at most %d (%w)", rv.Int(), MaxTemplateRange, ErrRunaway)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if rv.Uint() > MaxTemplateRange {
			return nil, fmt.Errorf("range over %d: a template ranges over at most %d (%w)", rv.Uint(), MaxTemplateRange, ErrRunaway)
		}
	}
	return v, nil
}

// boundRanges ends the pipeline of every range in the set's templates with
// rangeBound, once the templates have been checked.
func boundRanges(set *template.Template) {
	set.Funcs(template.FuncMap{rangeBoundFunc: rangeBound})
	for _, t := range set.Templates() {
		if t.Tree == nil || t.Tree.Root == nil {
			continue
		}
		boundIn(t.Tree, t.Tree.Root)
	}
}

func boundIn(tree *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			boundIn(tree, x)
		}
	case *parse.IfNode:
		boundIn(tree, n.List)
		boundIn(tree, n.ElseList)
	case *parse.WithNode:
		boundIn(tree, n.List)
		boundIn(tree, n.ElseList)
	case *parse.RangeNode:
		if p := n.Pipe; p != nil && !boundAlready(p) {
			id := parse.NewIdentifier(rangeBoundFunc).SetTree(tree).SetPos(p.Position())
			p.Cmds = append(p.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: p.Position(), Args: []parse.Node{id}})
		}
		boundIn(tree, n.List)
		boundIn(tree, n.ElseList)
	}
}

func boundAlready(p *parse.PipeNode) bool {
	if len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	id, ok := last.Args[0].(*parse.IdentifierNode)
	return ok && len(last.Args) == 1 && id.Ident == rangeBoundFunc
}
