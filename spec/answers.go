package spec

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
)

// Answer normalisers for score expressions: they read the answer out of a
// model's text (or a dataset's expected field) so that "The answer is
// 1,234." scores like 1234. Each gives nil when it finds no answer.
func init() {
	exprFunctions = append(exprFunctions,
		expr.Function("number", func(params ...any) (any, error) { return AnswerNumber(params[0]), nil }, new(func(any) any)),
		expr.Function("choice", func(params ...any) (any, error) { return AnswerChoice(params[0]), nil }, new(func(any) any)),
		expr.Function("yesno", func(params ...any) (any, error) { return AnswerYesNo(params[0]), nil }, new(func(any) any)),
	)
}

var (
	numberRE = regexp.MustCompile(`[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-−]?\.\d+`)
	boxedRE  = regexp.MustCompile(`\\boxed\{([^{}]*)\}`)
)

// AnswerNumber is the number a text answers with, as a float64: the last
// number after a GSM8K-style "####" or in a \boxed{...} when there is one,
// else the last number of the text. Thousands separators, currency signs,
// units, percent signs and a trailing period are ignored ("$1,234.50",
// "42 apples", "7."). Numbers are returned as they are; nil when there is
// no number.
func AnswerNumber(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		if math.IsNaN(x) {
			return nil
		}
		return x
	}
	s := fmt.Sprint(v)
	if i := strings.LastIndex(s, "####"); i >= 0 {
		s = s[i+4:]
	} else if m := boxedRE.FindAllStringSubmatch(s, -1); m != nil {
		s = m[len(m)-1][1]
	}
	all := numberRE.FindAllString(s, -1)
	if len(all) == 0 {
		return nil
	}
	n := strings.ReplaceAll(strings.ReplaceAll(all[len(all)-1], ",", ""), "−", "-")
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return nil
	}
	return f
}

var (
	choiceAloneRE  = regexp.MustCompile(`^[\s*(\[]*([A-Ja-j])[\s*)\].:]*$`)
	choiceAnswerRE = regexp.MustCompile(`(?i)answer(?:\s+is)?\s*[:\-]?\s*[*(\[]*([A-J])\b`)
	choiceParenRE  = regexp.MustCompile(`\(([A-J])\)`)
	choiceLineRE   = regexp.MustCompile(`(?m)^\s*[*]*([A-J])[).:]`)
)

// AnswerChoice is the multiple-choice letter (A to J, upper case) a text
// answers with: the text alone ("b", "(C)", "**D**"), else the last
// "answer is X" / "Answer: X", else the last "(X)", else the last line
// starting with "X)" or "X.". nil when there is none.
func AnswerChoice(v any) any {
	if v == nil {
		return nil
	}
	s := fmt.Sprint(v)
	if m := choiceAloneRE.FindStringSubmatch(s); m != nil {
		return strings.ToUpper(m[1])
	}
	for _, re := range []*regexp.Regexp{choiceAnswerRE, choiceParenRE, choiceLineRE} {
		if m := re.FindAllStringSubmatch(s, -1); m != nil {
			return strings.ToUpper(m[len(m)-1][1])
		}
	}
	return nil
}

var yesNoRE = regexp.MustCompile(`(?i)\b(yes|no|true|false)\b`)

// AnswerYesNo is "yes" or "no": true/false as they are, else the text's
// first word when it is yes, no, true or false, else the last of those
// words in the text. nil when there is none.
func AnswerYesNo(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			return "yes"
		}
		return "no"
	}
	s := strings.TrimLeft(fmt.Sprint(v), " \t\n*\"'")
	word := func(w string) any {
		switch strings.ToLower(w) {
		case "yes", "true":
			return "yes"
		case "no", "false":
			return "no"
		}
		return nil
	}
	if m := yesNoRE.FindStringIndex(s); m != nil && m[0] == 0 {
		return word(s[m[0]:m[1]])
	}
	if m := yesNoRE.FindAllString(s, -1); m != nil {
		return word(m[len(m)-1])
	}
	return nil
}
