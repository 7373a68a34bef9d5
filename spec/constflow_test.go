package spec_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// constCond and constList make random expressions that read nothing of
// the run (literals, operators, builtins) or that do (inputs, vars), for
// an if's condition and a foreach's list.
func constCond(rng *rand.Rand, depth int) string {
	if depth > 2 {
		return []string{"true", "false", "1 < 2", "2 < 1", `"a" == "a"`, `"a" in ["b"]`}[rng.Intn(6)]
	}
	switch rng.Intn(8) {
	case 0:
		return "!(" + constCond(rng, depth+1) + ")"
	case 1:
		return "(" + constCond(rng, depth+1) + ") and (" + constCond(rng, depth+1) + ")"
	case 2:
		return "(" + constCond(rng, depth+1) + ") or (" + constCond(rng, depth+1) + ")"
	case 3:
		return fmt.Sprintf("len(%s) > %d", constList(rng, depth+1), rng.Intn(3))
	case 4:
		return fmt.Sprintf("%d %s %d", rng.Intn(4), []string{"<", "<=", "==", "!=", ">"}[rng.Intn(5)], rng.Intn(4))
	case 5:
		return "inputs.k > 1" // reads the run
	case 6:
		return "vars.on"
	}
	return constCond(rng, depth+1)
}

func constList(rng *rand.Rand, depth int) string {
	switch rng.Intn(9) {
	case 0:
		return "[]"
	case 1:
		return fmt.Sprintf("[%d, %d]", rng.Intn(3), rng.Intn(3))
	case 2:
		return `split("a,b", ",")`
	case 3:
		return fmt.Sprintf("filter([1, 2, 3], # > %d)", rng.Intn(4))
	case 4:
		return fmt.Sprintf(`split(inputs.q, "%s")`, []string{",", " ", "\\n"}[rng.Intn(3)])
	case 5:
		return "[inputs.q]"
	case 6:
		return `split(inputs.q, "")`
	case 7:
		return "vars.items"
	}
	if depth > 2 {
		return "[1]"
	}
	return fmt.Sprintf("map(%s, # * 2)", constList(rng, depth+1))
}

// TestConstantFlowDecidesWhatRan: an if whose condition, or a foreach
// whose list, reads nothing of the run takes the same course in every
// run, and the check of what has run when the flow ends follows it. An
// output reading a node under it is accepted when the node runs in every
// run (a true condition, a list with an item: a constant one, a literal
// with items, a split over a separator that is not empty) and refused at
// its position otherwise (a false condition or an empty list: the node
// never runs; one that reads the run: it may not). The oracle is expr's
// own evaluation of the condition or list.
func TestConstantFlowDecidesWhatRan(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	seen := map[string]int{}
	for trial := 0; trial < 60; trial++ {
		var step, src string
		foreach := rng.Intn(2) == 0
		if foreach {
			src = constList(rng, 0)
			step = fmt.Sprintf("{foreach: {in: %q, as: it, do: [c]}}", src)
		} else {
			src = constCond(rng, 0)
			step = fmt.Sprintf("{if: %q, then: [c]}", src)
		}
		text := "version: 1\nname: p\nvars: {on: true, items: [1]}\ninputs: {q: {default: hello}, k: {default: 3}}\nagents: {x: {}}\n" +
			"nodes:\n  c: {kind: compute, set: {n: 1}}\nflow: [" + step + "]\noutputs:\n  o: nodes.c.output.n\n"
		plan, diags := loadText(t, text)
		refused := plan == nil || strings.Contains(diags, "error")
		runs := "unknown"
		readsRun := strings.Contains(src, "inputs.") || strings.Contains(src, "vars.")
		if !readsRun {
			v, err := expr.Eval(src, nil)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			rv := reflect.ValueOf(v)
			switch {
			case foreach && rv.Len() > 0, !foreach && v == true:
				runs = "always"
			default:
				runs = "never"
			}
		} else if foreach && (strings.HasPrefix(src, "[inputs") || strings.HasPrefix(src, `split(inputs.q, "`) && src != `split(inputs.q, "")`) {
			runs = "always" // a literal with an item, a split over a separator
		}
		seen[runs]++
		switch runs {
		case "always":
			if refused {
				t.Errorf("%s: the node runs in every run, but the output is refused:\n%s", src, diags)
			}
		default:
			if !refused || !strings.Contains(diags, "have run") {
				t.Errorf("%s: the node runs %s, but the output's read of it is not refused:\n%s", src, map[string]string{"never": "in no run", "unknown": "in some runs only"}[runs], diags)
			}
		}
	}
	if seen["always"] == 0 || seen["never"] == 0 || seen["unknown"] == 0 {
		t.Errorf("the generated flows do not cover every course: %v", seen)
	}
	t.Logf("%v", seen)
}
