package spec

import (
	"fmt"
	"regexp"
	resyntax "regexp/syntax"
	"strconv"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Regular expressions in expressions: four functions read text out of a
// reply (or any text) with Go's RE2 syntax, which runs in time linear in
// the text whatever the pattern.
//
//	regexFind(text, pattern)            the first match, "" when none
//	regexFindAll(text, pattern)         every match, [] when none
//	regexGroups(text, pattern)          the first match and its groups:
//	                                    [whole, group1, ...], [] when none
//	regexReplace(text, pattern, with)   every match replaced ($1, ${name})
//
// A pattern written as a literal is compiled by validate, so a bad one is
// an error at its file:line:col; a computed one is compiled when the
// expression runs, and a bad one fails the run there (validate warns).

// regexFunc is one regex function: its name, its signature (the checker
// holds arguments of known types to it) and where its pattern is.
type regexFunc struct {
	name string
	// sig is the signature expr type checks calls against.
	sig any
	// args is the number of arguments; pattern the index of the pattern.
	args, pattern int
	call          func(text string, re *regexp.Regexp, rest []string) any
}

// regexFuncs is the table of regex functions: what they take, for expr's
// checker and ours (checkRegexCall), and what they do.
var regexFuncs = []regexFunc{
	{name: "regexFind", sig: new(func(string, string) string), args: 2, pattern: 1,
		call: func(text string, re *regexp.Regexp, _ []string) any { return re.FindString(text) }},
	{name: "regexFindAll", sig: new(func(string, string) []string), args: 2, pattern: 1,
		call: func(text string, re *regexp.Regexp, _ []string) any {
			all := re.FindAllString(text, -1)
			if all == nil {
				return []string{}
			}
			return all
		}},
	{name: "regexGroups", sig: new(func(string, string) []string), args: 2, pattern: 1,
		call: func(text string, re *regexp.Regexp, _ []string) any {
			m := re.FindStringSubmatch(text)
			if m == nil {
				return []string{}
			}
			return m
		}},
	{name: "regexReplace", sig: new(func(string, string, string) string), args: 3, pattern: 1,
		call: func(text string, re *regexp.Regexp, rest []string) any { return re.ReplaceAllString(text, rest[0]) }},
}

func init() {
	for _, f := range regexFuncs {
		f := f
		exprFunctions = append(exprFunctions, expr.Function(f.name, func(params ...any) (any, error) {
			return f.run(params)
		}, f.sig))
	}
}

// run calls f with the arguments an expression gave it.
func (f regexFunc) run(params []any) (any, error) {
	if len(params) != f.args {
		return nil, fmt.Errorf("%s takes %d arguments, got %d", f.name, f.args, len(params))
	}
	pat, ok := params[f.pattern].(string)
	if !ok {
		return nil, fmt.Errorf("%s: the pattern must be text, got %s", f.name, valueWords(params[f.pattern]))
	}
	re, err := compileRegex(pat)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	var text string
	var rest []string
	for i, p := range params {
		if i == f.pattern {
			continue
		}
		s, ok := regexText(p)
		if !ok {
			return nil, fmt.Errorf("%s: argument %d must be text, got %s", f.name, i+1, valueWords(p))
		}
		if i == 0 {
			text = s
		} else {
			rest = append(rest, s)
		}
	}
	return f.call(text, re, rest), nil
}

// regexText is the text a regex function reads from a value: text as it
// is, a number or boolean as written, nil (a node that has not run) as "".
// Lists and mappings have no one text: ok is false.
func regexText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil:
		return "", true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func valueWords(v any) string {
	if v == nil {
		return "nil"
	}
	return exprTypeWords(fmt.Sprintf("%T", v))
}

// regexCache keeps compiled patterns: a computed pattern is compiled once
// per distinct text, up to regexCacheSize of them.
var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const regexCacheSize = 256

// compileRegex compiles a pattern, with a message in the spec's words.
func compileRegex(pat string) (*regexp.Regexp, error) {
	regexCache.Lock()
	re := regexCache.m[pat]
	regexCache.Unlock()
	if re != nil {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("the pattern %q is not a valid regular expression: %s", pat, regexReason(err))
	}
	regexCache.Lock()
	if regexCache.m == nil || len(regexCache.m) >= regexCacheSize {
		regexCache.m = map[string]*regexp.Regexp{}
	}
	regexCache.m[pat] = re
	regexCache.Unlock()
	return re, nil
}

// regexReason is what regexp says is wrong, without the pattern it repeats.
func regexReason(err error) string {
	if se, ok := err.(*resyntax.Error); ok {
		if se.Expr == "" {
			return se.Code.String()
		}
		return fmt.Sprintf("%s in `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// checkRegexCall checks a call of a regex function at validate: the
// number of arguments, and a pattern written as a literal compiles; a
// computed pattern is a warning (a bad one fails the run).
func (c *compiler) checkRegexCall(x *ast.CallNode, fail, warn func(int, string, ...any)) {
	id, ok := x.Callee.(*ast.IdentifierNode)
	if !ok {
		return
	}
	for _, f := range regexFuncs {
		if f.name != id.Value || len(x.Arguments) != f.args {
			continue
		}
		arg := x.Arguments[f.pattern]
		s, lit := arg.(*ast.StringNode)
		if !lit {
			warn(arg.Location().From, "%s: the pattern %s is computed, so it is compiled when the expression runs, and a run fails there when it is not a valid regular expression; write it as a literal to have validate check it", f.name, arg.String())
			return
		}
		if _, err := compileRegex(s.Value); err != nil {
			fail(arg.Location().From, "%s: %s", f.name, err)
		}
		return
	}
}
