package spec

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// constantExpr evaluates an expression that reads nothing (no name, no
// function call) once, at validate: `1 / 0` or `int("x")` would fail, or
// give a number JSON cannot hold, at the same place in every run, after its
// calls were paid for.
func (c *compiler) constantExpr(p *pendingExpr, prog *vm.Program, root ast.Node, env map[string]any) {
	constant := true
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.IdentifierNode, *ast.MemberNode, *ast.CallNode,
			*ast.PointerNode, *ast.VariableDeclaratorNode:
			constant = false
		case *ast.BuiltinNode:
			if !pureBuiltins[x.Name] {
				constant = false // now(), and whatever reads the clock or the world
			}
		}
	}))
	if !constant {
		return
	}
	out, err := expr.Run(prog, env)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		msg = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(msg), "(1:1)"))
		c.r.Errorf(p.e.Pos, "%s: always fails when evaluated: %s", p.what, msg)
		return
	}
	if path, f, bad := NonFinite(out); bad {
		c.r.Errorf(p.e.Pos, "%s: always evaluates to %v%s, which no result can hold", p.what, f, pathNote(path))
	}
}

func pathNote(path string) string {
	if path == "" {
		return ""
	}
	return fmt.Sprintf(" (at %s)", path)
}

// pureBuiltins give the same result for the same arguments.
var pureBuiltins = map[string]bool{
	"int": true, "float": true, "string": true, "abs": true, "ceil": true, "floor": true,
	"round": true, "len": true, "upper": true, "lower": true, "trim": true,
	"max": true, "min": true, "sum": true, "mean": true, "median": true,
}
