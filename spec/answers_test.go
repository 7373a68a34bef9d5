package spec

import (
	"testing"

	"github.com/expr-lang/expr"
)

func TestAnswerNormalisers(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want any
	}{
		{"The answer is 1,234.", 1234.0},
		{"She pays $1,234.50 in total", 1234.5},
		{"Natalia sold 48/2 = 24 clips in May.\n#### 72", 72.0},
		{"#### 1,000", 1000.0},
		{"42 apples", 42.0},
		{"so \\boxed{-17} and 3 more", -17.0},
		{"−5", -5.0},
		{"about 12.5%", 12.5},
		{42, 42.0},
		{"no number", nil},
		{nil, nil},
	} {
		if got := AnswerNumber(tc.in); got != tc.want {
			t.Errorf("number(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   any
		want any
	}{
		{"b", "B"}, {"(C)", "C"}, {"**D**", "D"}, {"D.", "D"},
		{"Let me think. The answer is (A).", "A"},
		{"Answer: c", "C"},
		{"Between (A) and (B), I pick (B)", "B"},
		{"Reasoning...\nE) because", "E"},
		{"I cannot tell", nil},
	} {
		if got := AnswerChoice(tc.in); got != tc.want {
			t.Errorf("choice(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   any
		want any
	}{
		{"Yes, because...", "yes"}, {"no.", "no"}, {"**No**", "no"}, {true, "yes"}, {"False", "no"},
		{"Considering it all, the answer is yes", "yes"}, {"maybe", nil},
	} {
		if got := AnswerYesNo(tc.in); got != tc.want {
			t.Errorf("yesno(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// The normalisers are callable from expressions, and number() compares
// with a dataset's integer expected value.
func TestAnswerNormalisersInExpressions(t *testing.T) {
	env := map[string]any{"outputs": map[string]any{"answer": "It is 1,234."}, "expected": 1234, "letter": "(b)", "yn": "YES"}
	for _, src := range []string{
		`number(outputs.answer) == number(expected)`,
		`number(outputs.answer) == expected`,
		`choice(letter) == "B"`,
		`yesno(yn) == yesno(true)`,
	} {
		prog, err := expr.Compile(src, append([]expr.Option{expr.Env(env)}, exprFunctions...)...)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := expr.Run(prog, env)
		if err != nil || got != true {
			t.Errorf("%s = %v, %v", src, got, err)
		}
	}
}
