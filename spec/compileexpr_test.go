package spec

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/debate-runner/runner/spec/value"
)

type messagesEnv struct {
	Messages []value.Message `expr:"messages"`
}

// TestCompileExprReadsFieldsOfFoundItems compiles generated expressions
// that pick one item of a filtered or sorted list of messages and read a
// field of it (expr's optimiser turns filter(...)[0] into a find whose
// type lost its fields, and expr's compiler then panics): every one must
// compile, and give on generated messages what the expression means,
// evaluated without the optimiser.
func TestCompileExprReadsFieldsOfFoundItems(t *testing.T) {
	var fields []string
	rt := reflect.TypeOf(value.Message{})
	for i := 0; i < rt.NumField(); i++ {
		if tag := rt.Field(i).Tag.Get("expr"); tag != "" && tag != "-" {
			fields = append(fields, tag)
		}
	}
	preds := []string{`.content != ""`, `.round > 1`, `.from == "a"`, `true`, `len(.content) > 3`, `!.private`}
	lists := []string{"filter(messages, %s)", "sortBy(filter(messages, %s), .round)", "filter(filter(messages, %s), true)"}
	rng := rand.New(rand.NewSource(1))
	panics := 0
	for n := 0; n < 300; n++ {
		list := fmt.Sprintf(lists[rng.Intn(len(lists))], preds[rng.Intn(len(preds))])
		idx := []string{"0", "-1", "1"}[rng.Intn(3)]
		src := fmt.Sprintf("%s[%s].%s", list, idx, fields[rng.Intn(len(fields))])
		if _, err := expr.Compile(src, expr.Env(messagesEnv{})); err != nil && internalPanic(err) {
			panics++
		}
		prog, err := CompileExpr(src, expr.Env(messagesEnv{}))
		if err != nil {
			t.Fatalf("%s: %v", src, firstLine(err.Error()))
		}
		plain, err := expr.Compile(src, expr.Env(messagesEnv{}), expr.Optimize(false))
		if err != nil {
			t.Fatalf("%s without the optimiser: %v", src, err)
		}
		var env messagesEnv
		for i := rng.Intn(4); i > 0; i-- {
			env.Messages = append(env.Messages, value.Message{From: string(rune('a' + rng.Intn(2))), Round: rng.Intn(3), Content: strings.Repeat("x", rng.Intn(6))})
		}
		got, gerr := expr.Run(prog, env)
		want, werr := expr.Run(plain, env)
		if (gerr == nil) != (werr == nil) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s over %d messages: %v (%v), without the optimiser %v (%v)", src, len(env.Messages), got, gerr, want, werr)
		}
	}
	if panics == 0 {
		t.Log("expr's compiler no longer panics on these: CompileExpr's second try may go")
	}
}
