package spec

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

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

// numberPart is one number as answers write it: a sign (ASCII or the
// Unicode minus), a currency sign ("-$5"), digits with or without
// thousands separators, a fraction part, an exponent ("1.5e-7").
const numberPart = `[-−+]?[$€£]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?`

// answerTokenRE finds numbers and fractions: a LaTeX \frac{P}{Q} (\dfrac,
// \tfrac; a sign may stand before it), P/Q, or a number. Compiled on first
// use, not at every start of the binary.
var answerTokenRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([-−+]?)\\[dt]?frac\{\s*(` + numberPart + `)\s*\}\{\s*(` + numberPart + `)\s*\}` +
		`|(` + numberPart + `)\s*/\s*(` + numberPart + `)` +
		`|(` + numberPart + `)`)
})

// boxed is the content of the last \boxed{...} of a text, braces inside
// it included (\boxed{\frac{1}{2}}); ok is false when there is none.
func boxed(s string) (string, bool) {
	i := strings.LastIndex(s, `\boxed{`)
	if i < 0 {
		return "", false
	}
	start := i + len(`\boxed{`)
	depth := 1
	for j := start; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[start:j], true
			}
		}
	}
	return "", false
}

// AnswerNumber is the number a text answers with, as a float64: the last
// number after a GSM8K-style "####", else in the last \boxed{...} when
// there is one, else the last number of the text. Thousands separators,
// a plus sign, leading zeros, currency signs, units, percent signs, LaTeX
// \text{...} and a trailing period are ignored ("$1,234.50", "+042",
// "\boxed{\text{42}}", "42 apples", "7."); the Unicode minus is a minus;
// a fraction (3/4, \frac{3}{4}, -\dfrac{1}{2}) is its value. Numbers are
// returned as they are; nil when there is no number (or the last is a
// fraction over 0).
func AnswerNumber(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	s := fmt.Sprint(v)
	if i := strings.LastIndex(s, "####"); i >= 0 {
		s = s[i+4:]
	} else if b, ok := boxed(s); ok {
		s = b
	}
	all := answerTokenRE().FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return nil
	}
	m := all[len(all)-1]
	var f float64
	var ok bool
	switch {
	case m[2] != "":
		f, ok = fraction(m[2], m[3])
		if m[1] == "-" || m[1] == "−" {
			f = -f
		}
	case m[4] != "":
		f, ok = fraction(m[4], m[5])
	default:
		f, ok = parseAnswerNumber(m[6])
	}
	if !ok {
		return nil
	}
	return f
}

// parseAnswerNumber parses one number as numberPart matches it.
func parseAnswerNumber(n string) (float64, bool) {
	n = strings.NewReplacer(",", "", "−", "-", "$", "", "€", "", "£", "").Replace(n)
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// fraction is P/Q; not ok over 0.
func fraction(p, q string) (float64, bool) {
	a, ok1 := parseAnswerNumber(p)
	b, ok2 := parseAnswerNumber(q)
	if !ok1 || !ok2 || b == 0 {
		return 0, false
	}
	f := a / b
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
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
