package spec_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// The property, for the regex functions of expressions: for any pattern
// and any text, an expression calling regexFind, regexFindAll,
// regexGroups or regexReplace gives what Go's regexp gives, or fails with
// an error (never a panic) exactly when the pattern does not compile; and
// validate refuses a spec whose pattern, written as a literal, does not
// compile, at the literal's line and column, and accepts it when it does.

// regexPattern makes a pattern from the grammar of RE2, with now and then
// a piece that breaks it (an unclosed group or class, a repeat of
// nothing, a bad escape, a repeat count past RE2's limit).
func regexPattern(r *rand.Rand, depth int) string {
	atoms := []string{"a", "b", ".", `\d`, `\w`, `\s`, "[a-c]", "[^b]", "x", "é", `\.`, "^", "$", `\b`}
	breaks := []string{"(", ")", "[", "*", "+?+", `\`, `\k`, "{2,1}", "a{1001}", "(?P<>a)", "[z-a]", "(?<n", "**"}
	if depth > 2 || r.IntN(3) == 0 {
		if r.IntN(12) == 0 {
			return breaks[r.IntN(len(breaks))]
		}
		return atoms[r.IntN(len(atoms))]
	}
	switch r.IntN(6) {
	case 0:
		return "(" + regexPattern(r, depth+1) + ")"
	case 1:
		return "(?P<g" + strconv.Itoa(r.IntN(3)) + ">" + regexPattern(r, depth+1) + ")"
	case 2:
		return regexPattern(r, depth+1) + "|" + regexPattern(r, depth+1)
	case 3:
		return regexPattern(r, depth+1) + []string{"*", "+", "?", "{1,2}", "*?"}[r.IntN(5)]
	}
	return regexPattern(r, depth+1) + regexPattern(r, depth+1)
}

func regexSubject(r *rand.Rand) string {
	alphabet := []string{"a", "b", "c", "x", "1", "9", " ", "\n", ".", "é", "ab", "xx"}
	var b strings.Builder
	for i := r.IntN(12); i > 0; i-- {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// regexWant is what Go's regexp gives for fn, or an error when the
// pattern does not compile.
func regexWant(fn, text, pattern, with string) (any, bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, false
	}
	switch fn {
	case "regexFind":
		return re.FindString(text), true
	case "regexFindAll":
		all := re.FindAllString(text, -1)
		if all == nil {
			all = []string{}
		}
		return all, true
	case "regexGroups":
		m := re.FindStringSubmatch(text)
		if m == nil {
			m = []string{}
		}
		return m, true
	}
	return re.ReplaceAllString(text, with), true
}

var regexFns = []string{"regexFind", "regexFindAll", "regexGroups", "regexReplace"}

func regexCall(fn, textArg, patArg string) string {
	if fn == "regexReplace" {
		return fn + "(" + textArg + ", " + patArg + ", w)"
	}
	return fn + "(" + textArg + ", " + patArg + ")"
}

// checkRegexEval: a computed pattern evaluates as Go's regexp, or fails
// when it does not compile.
func checkRegexEval(t *testing.T, fn, text, pattern, with string) {
	t.Helper()
	env := map[string]any{"s": text, "p": pattern, "w": with}
	prog, err := expr.Compile(regexCall(fn, "s", "p"), append([]expr.Option{expr.Env(env)}, spec.ExprFunctions()...)...)
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	got, err := func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s(%q, %q) panicked: %v", fn, text, pattern, p)
			}
		}()
		return expr.Run(prog, env)
	}()
	want, compiles := regexWant(fn, text, pattern, with)
	if !compiles {
		if err == nil || !strings.Contains(err.Error(), "not a valid regular expression") {
			t.Fatalf("%s(%q, %q): pattern does not compile, but got %v, %v", fn, text, pattern, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s(%q, %q): %v", fn, text, pattern, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s(%q, %q) = %#v, want %#v", fn, text, pattern, got, want)
	}
}

// exprQuote writes s as an expr string literal, or says it cannot be
// written as one that reads back as s.
func exprQuote(s string) (string, bool) {
	q := strconv.Quote(s)
	tree, err := parser.Parse(q)
	if err != nil {
		return "", false
	}
	n, ok := tree.Node.(*ast.StringNode)
	return q, ok && n.Value == s
}

// checkRegexLiteral: validate accepts a literal pattern iff it compiles,
// and refuses it at the literal's position.
func checkRegexLiteral(t *testing.T, dir, fn, pattern string) {
	t.Helper()
	lit, ok := exprQuote(pattern)
	if !ok || strings.ContainsAny(lit, "\n\r'") {
		return
	}
	call := regexCall(fn, "inputs.q", lit)
	call = strings.Replace(call, ", w)", `, "<$1>")`, 1)
	data := "version: 1\nname: r\ninputs:\n  q: {default: hello}\nagents: {x: {}}\ntemplates: {define: {t/x: hi}}\n" +
		"nodes:\n  a: {kind: ask, agents: [x], template: t/x}\nflow: [a]\noutputs:\n  o: '" + call + "'\n"
	plan, diags := spec.Compile(filepath.Join(dir, "r.yaml"), []byte(data), nodes.Registry())
	_, err := regexp.Compile(pattern)
	if err == nil {
		if plan == nil {
			t.Fatalf("pattern %q compiles, but validate refused %s:\n%s", pattern, call, diags.Error())
		}
		return
	}
	if plan != nil {
		t.Fatalf("pattern %q does not compile (%v), but validate accepted %s", pattern, err, call)
	}
	// The literal starts after the call's name and first argument.
	col := 7 + strings.Index(call, lit)
	for _, d := range diags {
		if d.Severity == syntax.Error && d.Pos.Line == 11 && d.Pos.Col == col && strings.Contains(d.Message, "not a valid regular expression") {
			return
		}
	}
	t.Fatalf("pattern %q: want an error at 11:%d, got:\n%s", pattern, col, diags.Error())
}

func checkRegex(t *testing.T, dir string, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pattern := regexPattern(r, 0)
	fn := regexFns[r.IntN(len(regexFns))]
	checkRegexEval(t, fn, regexSubject(r), pattern, []string{"", "<$1>", "${g0}", "$$", "-"}[r.IntN(5)])
	checkRegexLiteral(t, dir, fn, pattern)
}

// TestRegexProperty checks the property over generated patterns.
func TestRegexProperty(t *testing.T) {
	dir := t.TempDir()
	for i := uint64(0); i < 120; i++ {
		checkRegex(t, dir, i*7919+1)
	}
}

// FuzzRegexFuncs checks it over any pattern, text and replacement.
func FuzzRegexFuncs(f *testing.F) {
	f.Add("(a+)(b?)", "aab ab", "<$1>", uint8(0))
	f.Add(`(?P<n>\d+)`, "x 12 y 3", "${n}", uint8(2))
	f.Add("(", "a", "", uint8(1))
	f.Add(`\`, "", "$", uint8(3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, pattern, text, with string, which uint8) {
		if !utf8.ValidString(pattern) || len(pattern) > 200 {
			return
		}
		fn := regexFns[int(which)%len(regexFns)]
		checkRegexEval(t, fn, text, pattern, with)
		checkRegexLiteral(t, dir, fn, pattern)
	})
}

// TestRegexValues: the functions read text from numbers, booleans and nil
// (a node that has not run) and refuse lists, at run time; validate
// refuses a list where a type says it is one.
func TestRegexValues(t *testing.T) {
	for _, v := range []any{12, 2.5, true, nil} {
		// m.v is typed any, as a node's output or a message's field is.
		env := map[string]any{"m": map[string]any{"v": v}}
		prog, err := expr.Compile(`regexFind(m.v, "\\w+")`, append([]expr.Option{expr.Env(env)}, spec.ExprFunctions()...)...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := expr.Run(prog, env)
		want := regexp.MustCompile(`\w+`).FindString(strings.TrimPrefix(fmt.Sprint(v), "<nil>"))
		if err != nil || got != want {
			t.Errorf("regexFind(%v) = %v, %v; want %q", v, got, err, want)
		}
	}
	env := map[string]any{"m": map[string]any{"v": []any{"a"}}}
	prog, _ := expr.Compile(`regexFind(m.v, "a")`, append([]expr.Option{expr.Env(env)}, spec.ExprFunctions()...)...)
	if _, err := expr.Run(prog, env); err == nil || !strings.Contains(err.Error(), "must be text") {
		t.Errorf("a list: want an error saying text is wanted, got %v", err)
	}
}
