// Package difffuzz is the differential fuzzer of validate against run: it
// mutates specs from the grammars of their languages (templates,
// expressions, flow and node keywords, JSON Schemas of outputs), checks
// each mutant the way `runner validate` does, and runs every accepted one
// through the real engine against scripted replies of its own making,
// under several reply profiles. An accepted mutant must end completed,
// inconclusive, waiting for answers or stopped at its budget under every
// profile; a refused one must be refused at a file:line:col position.
//
// What it generates comes from the code, not from a list of cases: the
// template functions from the FuncMap prompts are rendered with, the
// expression functions from expr's builtins and the spec's own, the flow
// and node keywords from the kinds' JSON Schemas, the field paths from the
// types of the data templates and expressions see. See docs/testing.md.
package difffuzz

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"text/template"

	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// Grammars are the four kinds of mutation, as the report counts them.
var Grammars = []string{"templates", "expressions", "flow", "schemas"}

// tmplFunc is a function templates may call: its name and, when known,
// its parameter types (nil: a builtin of text/template, variadic).
type tmplFunc struct {
	name     string
	params   []reflect.Type
	variadic bool
	// min is the least number of arguments.
	min int
}

// textTemplateBuiltins are text/template's own functions with their least
// number of arguments; Go's text/template fixes them (its builtin table is
// unexported, so they are named here; tmplFuncs checks each of them
// parses as a function).
var textTemplateBuiltins = map[string]int{
	"and": 1, "or": 1, "not": 1, "len": 1, "index": 1, "slice": 1, "print": 0, "printf": 1,
	"println": 0, "eq": 1, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2, "call": 1,
	"html": 0, "js": 0, "urlquery": 0,
}

// tmplFuncs lists every function a prompt template may call: the spec's
// FuncMap (value.TemplateFuncs, the same names the run binds to its
// history) and text/template's builtins.
func tmplFuncs() []tmplFunc {
	var out []tmplFunc
	for name, f := range value.TemplateFuncs() {
		t := reflect.TypeOf(f)
		tf := tmplFunc{name: name, variadic: t.IsVariadic()}
		for i := 0; i < t.NumIn(); i++ {
			tf.params = append(tf.params, t.In(i))
		}
		tf.min = t.NumIn()
		if tf.variadic {
			tf.min--
		}
		out = append(out, tf)
	}
	for name, min := range textTemplateBuiltins {
		if _, err := template.New("x").Parse("{{" + name + "}}"); err != nil {
			continue // not a function in this Go's text/template
		}
		out = append(out, tmplFunc{name: name, variadic: true, min: min})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// exprFunc is a function expressions may call.
type exprFunc struct {
	name string
	// predicate functions take a list and a closure (all, map, filter...).
	predicate bool
	// arities are the argument counts its signatures take (empty: 1 to 3).
	arities []int
}

// exprFuncs lists expr's builtins and the spec's own functions (mode,
// counts), as an expression is compiled with them.
func exprFuncs() []exprFunc {
	var out []exprFunc
	seen := map[string]bool{}
	add := func(f *builtin.Function) {
		if seen[f.Name] || strings.HasPrefix(f.Name, "$") {
			return
		}
		seen[f.Name] = true
		ef := exprFunc{name: f.Name, predicate: f.Predicate}
		for _, t := range f.Types {
			if t.Kind() == reflect.Func {
				ef.arities = append(ef.arities, t.NumIn())
			}
		}
		out = append(out, ef)
	}
	for _, f := range builtin.Builtins {
		add(f)
	}
	c := conf.CreateNew()
	for _, o := range spec.ExprFunctions() {
		o(c)
	}
	for _, f := range c.Functions {
		add(f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// exprOperators are expr's binary operators (its parser's table is
// unexported); exprUnary its prefix ones.
var (
	exprOperators = []string{"+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
		"and", "or", "in", "not in", "matches", "contains", "startsWith", "endsWith", "??", ".."}
	exprUnary = []string{"-", "!", "not "}
)

// exprScopeNames are the top-level names every expression sees, from the
// environment the run builds (spec.Env.Map).
func exprScopeNames() []string {
	var out []string
	for k := range (&spec.Env{}).Map() {
		if !strings.HasPrefix(k, "$") { // hidden names (the run's seed) are no names to write
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// kindKeywords are the properties of each node kind's schema fragment,
// with their schemas: what a flow mutation may set on a node.
type keyword struct {
	name   string
	schema map[string]any
}

func kindKeywords() map[string][]keyword {
	out := map[string][]keyword{}
	for _, k := range nodes.Registry().Kinds() {
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(k.Schema(), &s)
		var kws []keyword
		for name, p := range s.Properties {
			kws = append(kws, keyword{name: name, schema: p})
		}
		for _, name := range []string{"agents"} {
			kws = append(kws, keyword{name: name, schema: map[string]any{"type": "array"}})
		}
		sort.Slice(kws, func(i, j int) bool { return kws[i].name < kws[j].name })
		out[k.Name()] = kws
	}
	return out
}

// stepKeywords are the flow step forms (loop, foreach, if) with their
// keywords, from the spec schema's step definition.
func stepKeywords() map[string][]string {
	raw, err := nodes.Registry().Schema()
	out := map[string][]string{}
	if err != nil {
		return out
	}
	var s struct {
		Defs map[string]struct {
			AnyOf []struct {
				Properties map[string]struct {
					Properties map[string]any `json:"properties"`
				} `json:"properties"`
			} `json:"anyOf"`
		} `json:"$defs"`
	}
	_ = json.Unmarshal(raw, &s)
	for _, alt := range s.Defs["step"].AnyOf {
		for form, p := range alt.Properties {
			if form == "if" || form == "then" || form == "else" {
				out["if"] = []string{"if", "then", "else"}
				continue
			}
			for kw := range p.Properties {
				out[form] = append(out[form], kw)
			}
			sort.Strings(out[form])
		}
	}
	return out
}

// schemaKeywords are JSON Schema's validation and applicator keywords, read
// from the draft 2020-12 meta-schemas the schema library carries, with the
// kind of value each takes: number, count, bool, list, names, regex,
// props, schemas, schema, type or any.
func schemaKeywords() map[string]string {
	out := map[string]string{}
	for _, u := range []string{"https://json-schema.org/draft/2020-12/meta/validation", "https://json-schema.org/draft/2020-12/meta/applicator"} {
		s, err := jsonschema.Compile(u)
		if err != nil {
			continue
		}
		for name, p := range s.Properties {
			kind := "schema"
			ref := ""
			if p.Ref != nil {
				ref = p.Ref.Location
			}
			switch {
			case name == "type":
				kind = "type"
			case name == "const":
				kind = "any"
			case strings.HasSuffix(ref, "nonNegativeInteger") || strings.HasSuffix(ref, "nonNegativeIntegerDefault0"):
				kind = "count"
			case strings.HasSuffix(ref, "stringArray"):
				kind = "names"
			case strings.HasSuffix(ref, "schemaArray"):
				kind = "schemas"
			case len(p.Types) == 1:
				kind = map[string]string{"number": "number", "boolean": "bool", "array": "list", "string": "regex", "object": "props"}[p.Types[0]]
			}
			out[name] = kind
		}
	}
	return out
}
