package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// answerResults are what the answer normalisers give (answers.go): expr
// types them as values of any type, since each gives nil when it finds no
// answer, so its checker takes them where a boolean is wanted; none ever
// gives a boolean, and a condition made of one alone fails every run that
// evaluates it. The checker holds them to these.
var answerResults = map[string]struct{ gives, compare string }{
	"number": {"a number or nil", `number(x) == 42`},
	"choice": {"text (a letter) or nil", `choice(x) == "B"`},
	"yesno":  {`text ("yes" or "no") or nil`, `yesno(x) == "yes"`},
}

// boolSlotError is a part of an expression, where a boolean is wanted,
// that never gives one.
type boolSlotError struct {
	offset int
	msg    string
}

// boolSlotErrors finds the parts of an expression that stand where a
// boolean is wanted but never give one, whatever their operands hold:
// the whole of a condition (root), the operands of &&, ||, and, or, ! and
// not, the condition of ?:, and the predicate of all, any, none, one,
// filter, find, findIndex, findLast, findLastIndex and count. expr's
// checker takes a value of any type there and the run fails converting it
// ("interface conversion: interface {} is nil, not bool").
func boolSlotErrors(root ast.Node, rootIsCondition bool) []boolSlotError {
	var errs []boolSlotError
	check := func(n ast.Node) {
		if why, at, ok := neverBoolWhy(n); ok {
			errs = append(errs, boolSlotError{offset: at.Location().From, msg: why})
		}
	}
	if rootIsCondition {
		check(root)
	}
	ast.Walk(&root, visitorFunc(func(np *ast.Node) {
		switch x := (*np).(type) {
		case *ast.UnaryNode:
			if x.Operator == "!" || x.Operator == "not" {
				check(x.Node)
			}
		case *ast.BinaryNode:
			switch x.Operator {
			case "&&", "||", "and", "or":
				check(x.Left)
				check(x.Right)
			}
		case *ast.ConditionalNode:
			check(x.Cond)
		case *ast.BuiltinNode:
			switch x.Name {
			case "all", "any", "none", "one", "filter", "find", "findIndex", "findLast", "findLastIndex", "count":
				if len(x.Arguments) > 1 {
					if p, ok := x.Arguments[1].(*ast.PredicateNode); ok {
						check(p.Node)
					}
				}
			}
		}
	}))
	return errs
}

// neverBoolWhy says why n never gives a boolean, and which part of it
// gives what is not one: an arithmetic operator or a sign, a call of an
// answer normaliser, either branch of ?:, either side of ?? (its left when
// it is not nil, its right when it is), the last part of a sequence or a
// let.
func neverBoolWhy(n ast.Node) (string, ast.Node, bool) {
	switch x := n.(type) {
	case *ast.UnaryNode:
		if x.Operator == "-" || x.Operator == "+" {
			return fmt.Sprintf("its operator %q gives a number, never a boolean", x.Operator), n, true
		}
	case *ast.BinaryNode:
		switch x.Operator {
		case "+", "-", "*", "/", "%", "**", "^", "..":
			return fmt.Sprintf("its operator %q gives a number or text, never a boolean", x.Operator), n, true
		case "??":
			if why, at, ok := neverBoolWhy(x.Left); ok {
				return why, at, true
			}
			return neverBoolWhy(x.Right)
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			if r, ok := answerResults[id.Value]; ok {
				return fmt.Sprintf("%s(...) gives %s, never a boolean: compare what it gives (%s)", id.Value, r.gives, r.compare), n, true
			}
		}
	case *ast.ConditionalNode:
		if why, at, ok := neverBoolWhy(x.Exp1); ok {
			return why, at, true
		}
		return neverBoolWhy(x.Exp2)
	case *ast.VariableDeclaratorNode:
		return neverBoolWhy(x.Expr)
	case *ast.SequenceNode:
		if len(x.Nodes) > 0 {
			return neverBoolWhy(x.Nodes[len(x.Nodes)-1])
		}
	}
	return "", nil, false
}

// notBoolRun is expr's message when a condition's value, read as a
// boolean where the run evaluates it, is not one.
// (a condition's root gives "bool(T)"; an operand of !, && or || the
// interface conversion).
var notBoolRun = regexp.MustCompile(`interface conversion: interface \{\} is (.+?), not bool|invalid operation: bool\((.+?)\)`)

// ConditionError words expr's failure to read a condition's value as a
// boolean in the spec's words ("a boolean is wanted, but it gives nil")
// rather than Go's; any other error is returned as it is.
func ConditionError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	m := notBoolRun.FindStringSubmatchIndex(msg)
	if m == nil {
		return err
	}
	var got string
	if m[2] >= 0 {
		got = msg[m[2]:m[3]]
	} else {
		got = msg[m[4]:m[5]]
	}
	words := "a value of type " + got
	switch {
	case got == "nil":
		words = "nil (nothing)"
	case got == "string":
		words = "text"
	case strings.HasPrefix(got, "int"), strings.HasPrefix(got, "uint"), strings.HasPrefix(got, "float"):
		words = "a number"
	case strings.HasPrefix(got, "[]"):
		words = "a list"
	case strings.HasPrefix(got, "map["):
		words = "a mapping"
	}
	return errors.New(msg[:m[0]] + "a boolean is wanted, but the condition gives " + words + msg[m[1]:])
}

// normaliserFieldErrors finds reads of a named field of what an answer
// normaliser gives (yesno(x).a, number(x)["k"]): text, a number or nil has
// no named field, so such a read fails every run that evaluates it. A
// number's index fails alike; an index of text (a character) is left
// alone, since it works when the answer is found, and so is a read with
// ?., which gives nil where the field is missing.
func normaliserFieldErrors(root ast.Node) []boolSlotError {
	var errs []boolSlotError
	ast.Walk(&root, visitorFunc(func(np *ast.Node) {
		m, ok := (*np).(*ast.MemberNode)
		if !ok || m.Optional {
			return
		}
		call, ok := m.Node.(*ast.CallNode)
		if !ok {
			return
		}
		id, ok := call.Callee.(*ast.IdentifierNode)
		if !ok {
			return
		}
		r, ok := answerResults[id.Value]
		if !ok {
			return
		}
		switch p := m.Property.(type) {
		case *ast.StringNode:
			errs = append(errs, boolSlotError{offset: m.Location().From,
				msg: fmt.Sprintf("%s(...) gives %s, which has no field %q: compare what it gives (%s)", id.Value, r.gives, p.Value, r.compare)})
		case *ast.IntegerNode:
			if id.Value == "number" {
				errs = append(errs, boolSlotError{offset: m.Location().From,
					msg: fmt.Sprintf("number(...) gives %s, which has no item %d", r.gives, p.Value)})
			}
		}
	}))
	return errs
}
