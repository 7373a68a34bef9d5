// Package tmplguard makes a run's template set refuse to print what
// text/template would otherwise print silently: "<no value>" for a missing or
// nil value, and printf's "%!d(string=...)" for a format its arguments do not
// fit. Validate's type checker refuses what it can see; this is the net for
// what only the data shows (a null field in a reply, a value a var holds at
// run time), so that no such prompt is ever sent to a model.
package tmplguard

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// guardFunc is the name of the function appended to every printing action.
// It starts with an underscore so that no helper a spec may call has it.
const guardFunc = "_runnerPrinted"

// MissingError is what rendering returns when an action would print
// "<no value>".
type MissingError struct {
	Template string // the template's name
	Where    string // the action's position in the template, name:line:col
	Action   string // the action as written, e.g. {{.Own.Output}}
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s: %s has no value here (text/template would print \"<no value>\" into the prompt)", e.Where, e.Action)
}

// FormatError is what rendering returns when printf's format does not fit
// its arguments.
type FormatError struct {
	Format string
	Output string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("printf %q does not fit its arguments: it gives %q", e.Format, e.Output)
}

// Guard returns a copy of set whose printing actions fail with a
// *MissingError instead of printing "<no value>", and whose printf fails
// with a *FormatError instead of printing fmt's "%!" marks. set itself is
// left as it was; its parse trees are copied, not shared.
func Guard(set *template.Template) *template.Template {
	if set == nil {
		return nil
	}
	var actions []*MissingError
	// The clone keeps the set's functions and options; its trees are
	// replaced by guarded copies below, so set's own are never touched.
	out, err := set.Clone()
	if err != nil {
		// text/template's Clone has never returned an error.
		return set
	}
	out.Funcs(template.FuncMap{
		guardFunc: func(id int, v any) (any, error) {
			if v == nil {
				return nil, actions[id]
			}
			return v, nil
		},
		"printf": printf,
	})
	for _, t := range out.Templates() {
		if t.Tree == nil || t.Name() == "" {
			continue
		}
		tree := t.Tree.Copy()
		walk(tree.Root, func(a *parse.ActionNode) {
			if len(a.Pipe.Decl) > 0 || len(a.Pipe.Cmds) == 0 {
				return // assignments print nothing
			}
			where, _ := tree.ErrorContext(a)
			actions = append(actions, &MissingError{Template: t.Name(), Where: where, Action: a.String()})
			id := parse.NewIdentifier(guardFunc).SetTree(tree).SetPos(a.Pos)
			n := len(actions) - 1
			num := &parse.NumberNode{NodeType: parse.NodeNumber, Pos: a.Pos, IsInt: true, IsUint: true, IsFloat: true,
				Int64: int64(n), Uint64: uint64(n), Float64: float64(n), Text: fmt.Sprint(n)}
			a.Pipe.Cmds = append(a.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: a.Pos, Args: []parse.Node{id, num}})
		})
		// Replacing a tree under its own name: text/template's
		// AddParseTree returns no error then.
		_, _ = out.AddParseTree(t.Name(), tree)
	}
	return out
}

// walk calls f on every action below n, in the order they appear.
func walk(n parse.Node, f func(*parse.ActionNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		f(n)
	case *parse.IfNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.RangeNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.WithNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	}
}

// printf is fmt.Sprintf that refuses a format its arguments do not fit:
// fmt marks those with "%!" in its output.
func printf(format string, args ...any) (string, error) {
	s := fmt.Sprintf(format, args...)
	if !strings.Contains(s, "%!") || strings.Contains(format, "%!") {
		return s, nil
	}
	for _, a := range args {
		if strings.Contains(fmt.Sprint(a), "%!") {
			return s, nil // the mark came with the data
		}
	}
	return "", &FormatError{Format: format, Output: s}
}

// IsGuardError reports whether err came from the guard.
func IsGuardError(err error) bool {
	var m *MissingError
	var f *FormatError
	return errors.As(err, &m) || errors.As(err, &f)
}
