package spec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/parser"
)

// TestNormaliserFieldReadsFail: generated reads of a field or an item of
// what an answer normaliser gives, inside generated surroundings. Every
// one the checker's normaliserFieldErrors refuses fails on every sampled
// argument (replies where the normaliser finds its answer, where it finds
// none, nil, numbers); so it refuses nothing a run could evaluate. And a
// named field's read without ?. is always refused. (A first version also
// refused reads with ?.; this test found that they give nil.)
func TestNormaliserFieldReadsFail(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	args := []any{"yes", "No.", "The answer is (B)", "B", "42", "#### 1,234", "so \\boxed{-3}", "", "nothing here", nil, 7, 2.5}
	access := []string{".a", "?.a", `["k"]`, `?.["k"]`, "[0]", "[1]", "?.[0]", ".content"}
	wrap := []string{"%s", "(%s) ?? \"x\"", "string(%s)", "[%s]", "%s == nil", "let v = %s; v", "true ? %s : 1"}
	refused, accepted := 0, 0
	for i := 0; i < 400; i++ {
		fn := []string{"number", "choice", "yesno"}[r.IntN(3)]
		acc := access[r.IntN(len(access))]
		src := fmt.Sprintf(wrap[r.IntN(len(wrap))], fn+"(x)"+acc)
		tree, err := parser.Parse(src)
		if err != nil {
			continue // ?.[ may not parse in every version
		}
		errs := normaliserFieldErrors(tree.Node)
		named := !strings.HasPrefix(acc, "?") && (strings.Contains(acc, "a") || strings.Contains(acc, "k") || strings.Contains(acc, "content"))
		if named && len(errs) == 0 {
			t.Errorf("%s: a named field of %s(...) read, not refused", src, fn)
		}
		if len(errs) == 0 {
			accepted++
			continue
		}
		refused++
		for _, a := range args {
			env := map[string]any{"x": a}
			prog, err := CompileExpr(src, exprOptions(env, AnyResult)...)
			if err != nil {
				continue // refused by expr too, for this argument's type
			}
			if v, err := expr.Run(prog, env); err == nil {
				t.Errorf("%s: refused (%s), but gives %v when x is %#v", src, errs[0].msg, v, a)
				break
			}
		}
	}
	t.Logf("reads %d refused, %d left to the checker's other parts", refused, accepted)
	if refused == 0 || accepted == 0 {
		t.Errorf("the draws test nothing: %d refused, %d accepted", refused, accepted)
	}
}
