package spec

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
	"github.com/expr-lang/expr/ast"
)

// This file gives the template checker the declared types of the values a
// spec names (a var's default, an input's text) and the checks those types
// make possible: a comparison of a number with text, arithmetic on text,
// a printf verb given the wrong kind of value. Each of these renders either
// an error after calls were paid for or a prompt with "%!d(string=...)" in
// it, so validate refuses them at the template's position.

// keyTypeFunc gives the declared type of KEY in the map named by DOMAIN (a
// tmplkeys tag: inputs, vars); ok is false when it is not known.
type keyTypeFunc func(domain, key string) (tt tmplType, ok bool)

// templateKeyType is the compiler's keyTypeFunc: the same types the
// expression checker gives inputs and vars (exprs.go), so a template and an
// expression agree on what .Vars.x is. A var's default gives its type down
// to the items of its lists and the values of its mappings: --set gives a
// list's items the type of the default's (runtime/args).
func (c *compiler) templateKeyType(domain, key string) (tmplType, bool) {
	switch domain {
	case "vars":
		for _, v := range c.plan.Vars {
			if v.Name == key && v.Default != nil {
				return declaredType(v.Default), true
			}
		}
	case "inputs":
		for _, in := range c.plan.Inputs {
			if in.Name != key {
				continue
			}
			if t := inputType(in); t != nil {
				return tmplType{t: t}, true
			}
			return tmplType{}, false
		}
	}
	return tmplType{}, false
}

// declaredType is the template type of a value a spec declares (a var's
// default): its Go type, and for a []any or map[string]any the declared
// types of its items and values. A list's items have a type when they all
// have the same one; numbers mixing whole and decimal ones have none (a
// --set list of them is all decimal, the default is not).
func declaredType(v any) tmplType {
	if v == nil {
		return tmplType{}
	}
	tt := tmplType{t: reflect.TypeOf(v)}
	switch x := v.(type) {
	case []any:
		var item *tmplType
		for i, e := range x {
			et := declaredType(e)
			if et.unknown() {
				item = nil
				break
			}
			if i == 0 {
				item = &et
				continue
			}
			m, ok := mergeDeclared(*item, et)
			if !ok {
				item = nil
				break
			}
			item = &m
		}
		tt.elem = item
	case map[string]any:
		tt.vals = map[string]tmplType{}
		for k, e := range x {
			tt.vals[k] = declaredType(e)
		}
	}
	return tt
}

// mergeDeclared is the type two items of a list have in common: the same
// Go type, with what is known of both of their items and values (an empty
// list's items are not known, a list of numbers' are).
func mergeDeclared(a, b tmplType) (tmplType, bool) {
	if a.t != b.t {
		return tmplType{}, false
	}
	out := tmplType{t: a.t}
	if a.elem != nil && b.elem != nil {
		if m, ok := mergeDeclared(*a.elem, *b.elem); ok {
			out.elem = &m
		}
	}
	if a.vals != nil && b.vals != nil {
		out.vals = map[string]tmplType{}
		for k, v := range a.vals {
			w, ok := b.vals[k]
			if !ok {
				// Keys differ from item to item: none is checked.
				out.vals = nil
				break
			}
			if m, ok := mergeDeclared(v, w); ok {
				out.vals[k] = m
			} else {
				out.vals[k] = tmplType{}
			}
		}
		if out.vals != nil && len(out.vals) != len(b.vals) {
			out.vals = nil
		}
	}
	return out, true
}

// sameDeclared says whether two declared types are the same all the way
// down (a list of lists of numbers is one only if every list is).
func sameDeclared(a, b tmplType) bool {
	if a.t != b.t {
		return false
	}
	if (a.elem == nil) != (b.elem == nil) {
		return false
	}
	if a.elem != nil && !sameDeclared(*a.elem, *b.elem) {
		return false
	}
	if (a.vals == nil) != (b.vals == nil) || len(a.vals) != len(b.vals) {
		return false
	}
	for k, v := range a.vals {
		w, ok := b.vals[k]
		if !ok || !sameDeclared(v, w) {
			return false
		}
	}
	return true
}

// domainField is how a template names a tmplkeys domain: .Vars, .Inputs.
func domainField(domain string) string {
	if domain == "" {
		return ""
	}
	return strings.ToUpper(domain[:1]) + domain[1:]
}

// valueClass sorts a type into what text/template can compare and fmt
// can format: values of different classes make eq, ne, lt, le, gt and ge
// fail at run time.
func valueClass(t reflect.Type) string {
	if t == nil {
		return ""
	}
	switch {
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case isIntKind(t):
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a decimal number"
	}
	return ""
}

// checkCompare refuses a comparison text/template cannot make: operands of
// different classes, an order (lt, le, gt, ge) of anything but numbers and
// text, an equality of values Go cannot compare.
func (c *templateChecker) checkCompare(tree *parse.Tree, cmd *parse.CommandNode, name string, args []tmplType, nodes []parse.Node) {
	if len(args) < 2 {
		return
	}
	order := name != "eq" && name != "ne"
	for i, a := range args {
		if a.unknown() || a.t.Kind() == reflect.Interface {
			continue
		}
		class := valueClass(a.t)
		switch {
		case order && (class == "" || class == "a boolean"):
			c.errorf(tree, cmd, "%s cannot order %s: it is %s, and only numbers and text have an order, so rendering would fail", name, describeArg(nodes, i, a), kindWords(a.t))
			return
		case !order && i > 0 && class == "" && !a.t.Comparable() && !args[0].unknown() && args[0].t.Kind() == a.t.Kind():
			// eq compares values of one kind with Go's ==, which fails on
			// values it cannot compare (a list, a mapping, a struct holding
			// one) unless one is nil.
			c.errorf(tree, cmd, "%s cannot compare %s with %s: it is %s, whose values Go cannot compare (it is or holds a map or a list), so rendering would fail; compare one of its fields or its len", name, describeArg(nodes, 0, args[0]), describeArg(nodes, i, a), kindWords(a.t))
			return
		}
	}
	first := args[0]
	for i := 1; i < len(args); i++ {
		if first.unknown() || args[i].unknown() || first.t.Kind() == reflect.Interface || args[i].t.Kind() == reflect.Interface {
			continue
		}
		a, b := valueClass(first.t), valueClass(args[i].t)
		at := parse.Node(cmd)
		if i < len(nodes) && i > 1 {
			at = nodes[i] // eq A B C: the operand that clashes
		}
		if a == "" && b == "" {
			if first.t.Kind() != args[i].t.Kind() {
				c.errorf(tree, at, "%s compares %s (%s) with %s (%s): values of different kinds cannot be compared, so rendering would fail",
					name, describeArg(nodes, 0, first), kindWords(first.t), describeArg(nodes, i, args[i]), kindWords(args[i].t))
				return
			}
			continue
		}
		if a == "" {
			a = kindWords(first.t)
		}
		if b == "" {
			b = kindWords(args[i].t)
		}
		if a == b {
			continue
		}
		hint := ""
		if strings.HasSuffix(a, "number") && strings.HasSuffix(b, "number") {
			hint = " (text/template compares a whole number only with whole numbers: write the constant as the other side's kind, 2 or 2.0)"
		}
		c.errorf(tree, at, "%s compares %s (%s) with %s (%s): values of different types cannot be compared, so rendering would fail%s",
			name, describeArg(nodes, 0, first), a, describeArg(nodes, i, args[i]), b, hint)
		return
	}
}

// describeArg names an argument of a call for a message: its source text.
func describeArg(nodes []parse.Node, i int, t tmplType) string {
	if i < len(nodes) && nodes[i] != nil {
		return nodes[i].String()
	}
	if t.what != "" {
		return "." + t.what
	}
	return "the value piped in"
}

// verbFits says whether fmt formats a value of type t with verb without
// its "%!" marks; ok is false when it cannot tell (a struct, a value of
// unknown type).
func verbFits(verb rune, tt tmplType) (fits, ok bool) {
	return verbFitsAt(verb, tt, 0)
}

func verbFitsAt(verb rune, tt tmplType, depth int) (fits, ok bool) {
	if tt.isNil {
		return verb == 'v', true
	}
	t := tt.t
	if verb == 'v' {
		return true, true
	}
	if len(tt.alts) > 0 {
		// One of several values: it fits if every one fits.
		all := true
		for _, a := range tt.alts {
			fits, ok := verbFitsAt(verb, a, depth)
			if ok && !fits {
				return false, true
			}
			all = all && ok
		}
		return all, all
	}
	if tt.unknown() {
		return false, false
	}
	if t.Kind() == reflect.Pointer && depth > 0 {
		// fmt prints a pointer inside a value as its address.
		return strings.ContainsRune("bdoxXp", verb), true
	}
	if t.Kind() == reflect.Pointer {
		// fmt prints a pointer to a struct as &{...} at the top level.
		if t.Elem().Kind() != reflect.Struct {
			return false, false
		}
		t = t.Elem()
		tt = tmplType{t: t}
	}
	switch t.Kind() {
	case reflect.Struct:
		// fmt formats a struct field by field: one field the verb does
		// not fit marks the prompt.
		for i := 0; i < t.NumField(); i++ {
			ft := t.Field(i).Type
			switch ft.Kind() {
			case reflect.Pointer, reflect.Struct, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
				continue // an address, a nested value, a list that may be empty
			}
			if fits, ok := verbFitsAt(verb, tmplType{t: ft}, depth+1); ok && !fits {
				return false, true
			}
		}
		return false, false
	case reflect.Map:
		if fits, ok := verbFitsAt(verb, tmplType{t: t.Key()}, depth+1); ok && !fits {
			return false, true
		}
		return verbFitsAt(verb, tt.itemType(), depth+1)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && strings.ContainsRune("sqxX", verb) {
			return true, true
		}
		// fmt formats a list item by item.
		return verbFitsAt(verb, tt.itemType(), depth+1)
	case reflect.Interface:
		return false, false
	}
	class := valueClass(t)
	if class == "" {
		return false, false
	}
	var verbs string
	switch class {
	case "text":
		verbs = "sqxX"
	case "a boolean":
		verbs = "t"
	case "a whole number":
		verbs = "bcdoOqxXU"
	case "a decimal number":
		verbs = "beEfFgGxX"
	}
	return strings.ContainsRune(verbs, verb), true
}

// checkPrintf matches printf's verbs with its arguments where both are
// known: %d given text renders "%!d(string=...)", and a value no verb
// takes renders "%!(EXTRA ...)"; the run's guard refuses both prompts.
func (c *templateChecker) checkPrintf(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node) {
	if len(args) == 0 {
		return
	}
	if f := args[0]; !f.unknown() && f.t.Kind() != reflect.String && f.t.Kind() != reflect.Interface {
		c.errorf(tree, cmd, "printf: its format (argument 1) is %s, but text is wanted", kindWords(f.t))
		return
	}
	if len(nodes) == 0 {
		return
	}
	format, ok := nodes[0].(*parse.StringNode)
	if !ok {
		return
	}
	verbs, exact := printfVerbs(format.Text)
	if !exact {
		return
	}
	for i, v := range verbs {
		ai := i + 1 // args[0] is the format
		if ai >= len(args) {
			c.errorf(tree, cmd, "printf: %%%c has no argument (the format has %d verbs, %d values are given)", v, len(verbs), len(args)-1)
			return
		}
		fits, known := verbFits(v, args[ai])
		if !known || fits {
			continue
		}
		what := valueClass(args[ai].t)
		if what == "" {
			what = kindWords(args[ai].t)
			if it := args[ai].itemType(); !it.unknown() {
				what += " of " + plainWords(it.t)
			}
		}
		c.errorf(tree, cmd, "printf: %%%c wants %s, but %s is %s (the prompt would read %%!%c(...))", v, verbWants(v), describeArg(nodes, ai, args[ai]), what, v)
		return
	}
	if extra := len(args) - 1 - len(verbs); extra > 0 {
		c.errorf(tree, cmd, "printf: the format has %d verbs, but %d values are given (the prompt would read %%!(EXTRA ...), which the run refuses)", len(verbs), len(args)-1)
	}
}

// verbWants says what a printf verb formats.
func verbWants(v rune) string {
	switch {
	case strings.ContainsRune("dcoOU", v):
		return "a whole number"
	case strings.ContainsRune("eEfFgG", v):
		return "a decimal number"
	case v == 'b':
		return "a number"
	case v == 't':
		return "a boolean"
	case v == 's':
		return "text"
	case v == 'q':
		return "text or a whole number"
	case v == 'x' || v == 'X':
		return "text or a number"
	}
	return "no value (it is not a verb of fmt)"
}

// plainWords names the type of a list's items for a message.
func plainWords(t reflect.Type) string {
	if w := valueClass(t); w != "" {
		return strings.TrimPrefix(strings.TrimPrefix(w, "a "), "an ") + "s"
	}
	return "values"
}

// printfVerbs lists the verbs of a format, in order; it gives up (exact
// false) on explicit argument indexes and '*' widths, whose arguments it
// cannot match.
func printfVerbs(f string) (verbs []rune, exact bool) {
	var out []rune
	rs := []rune(f)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '%' {
			continue
		}
		i++
		for i < len(rs) && strings.ContainsRune("+-# 0123456789.", rs[i]) {
			i++
		}
		if i >= len(rs) {
			break
		}
		switch rs[i] {
		case '%':
			continue
		case '[', '*':
			return nil, false
		}
		out = append(out, rs[i])
	}
	return out, true
}

// loopDomain gives .Loop the names of the spec's loop and foreach
// variables, so that a typo is refused where the template is checked; the
// run-order check then refuses a read outside the loop that sets it.
func (c *compiler) loopDomain() {
	if c.checker == nil {
		return
	}
	names := append([]string{}, c.loopNames...)
	c.checker.domains["loop"] = names
	c.checker.domains["loops"] = names
}

// loopRead refuses a template's read of .Loop.NAME where the node runs
// outside every loop or foreach named NAME: .Loop has no such key there,
// and rendering fails after calls were paid for.
func (ro *runOrder) loopRead(np *NodePlan, use templateUse, r tmplNodeRead) {
	for _, s := range ro.scope {
		if s == r.id {
			return
		}
	}
	in := "outside every loop and foreach"
	if len(ro.scope) > 0 {
		in = fmt.Sprintf("where .Loop holds only %s", strings.Join(ro.scope, ", "))
	}
	msg := fmt.Sprintf("reads .Loop.%s, but node %q runs %s (read it inside the loop whose 'as' is %q, or use .Round)", r.id, np.ID, in, r.id)
	// Report at the read in the template, naming the node that renders it.
	if tname, line, col, _ := templateErrorLine("template: " + r.loc + ": x"); tname != "" {
		ro.c.reportTemplateProblem(tname, line, col+1, msg, use.pos)
		return
	}
	ro.c.r.Errorf(use.pos, "node %q: template %s %s", np.ID, use.name, msg)
}

func (c *templateChecker) locOf(tree *parse.Tree, n parse.Node) string {
	if tree == nil || n == nil {
		return ""
	}
	loc, _ := tree.ErrorContext(n)
	return loc
}

// noteScoped marks the fields whose value depends on where the template is
// rendered: .Item (only inside a foreach), .Agent.Vars and .Goal.Vars
// (whose keys are each agent's and goal's own).
func (c *templateChecker) noteScoped(tree *parse.Tree, n parse.Node, cur tmplType, t reflect.Type, name string, next *tmplType) {
	_, data := t.FieldByName("Loop")
	switch {
	case name == "Item" && data:
		c.reads = append(c.reads, tmplNodeRead{id: "Item", loc: c.locOf(tree, n), scoped: "item"})
	case name == "Vars" && (cur.what == "Agent" || cur.what == "Goal"):
		next.what = cur.what + ".Vars"
	case name == "Outputs" && t == reflect.TypeOf(value.NodeResult{}):
		next.what = name
		if cur.what != "" {
			next.what = cur.what + "." + name
		}
		next.replyKeys = true
	case (name == "Fields" || name == "ChoiceMap") && t == reflect.TypeOf(value.Message{}):
		next.what = name
		if cur.what != "" {
			next.what = cur.what + "." + name
		}
		next.replyKeys = true
	}
}

func scopeKind(s *FlowStep) string {
	switch {
	case s.Kind == StepLoop:
		return "loop"
	case s.In != nil && s.In.Source == "goals":
		return "goals"
	}
	return "foreach"
}

// scopedRead refuses a read that the scope a node runs in cannot satisfy:
// .Item outside every foreach renders "<no value>"; .Agent.Vars.X for an
// agent without X and .Goal.Vars.X for a goal without X (or outside a
// foreach over the goals) fail rendering.
func (ro *runOrder) scopedRead(np *NodePlan, use templateUse, r tmplNodeRead) {
	has := func(kind string) bool {
		for _, k := range ro.scopeKinds {
			if k == kind || kind == "foreach" && k == "goals" {
				return true
			}
		}
		return false
	}
	var msg string
	switch r.scoped {
	case "item":
		if !has("foreach") {
			msg = fmt.Sprintf("reads .Item, but node %q runs outside every foreach, where .Item has no value (the prompt would read <no value>)", np.ID)
		}
	case "agentvar":
		var lacking []string
		for _, a := range np.Agents {
			if _, ok := a.Vars[r.id]; !ok {
				lacking = append(lacking, a.ID)
			}
		}
		if len(lacking) > 0 {
			msg = fmt.Sprintf("reads .Agent.Vars.%s, but agent %s of node %q has no var %q (give every agent of the node the var, or guard it: {{with index .Agent.Vars %q}}...{{end}})", r.id, strings.Join(lacking, ", "), np.ID, r.id, r.id)
		}
	case "goalvar":
		if !has("goals") {
			msg = fmt.Sprintf("reads .Goal.Vars.%s, but node %q runs outside every foreach over the goals, where .Goal has no vars", r.id, np.ID)
			break
		}
		var lacking []string
		for _, g := range ro.c.plan.Goals {
			if _, ok := g.Vars[r.id]; !ok {
				lacking = append(lacking, g.ID)
			}
		}
		if len(lacking) > 0 {
			msg = fmt.Sprintf("reads .Goal.Vars.%s, but goal %s has no var %q (give every goal the var, or guard it: {{with index .Goal.Vars %q}}...{{end}})", r.id, strings.Join(lacking, ", "), r.id, r.id)
		}
	}
	if msg == "" {
		return
	}
	if tname, line, col, _ := templateErrorLine("template: " + r.loc + ": x"); tname != "" {
		ro.c.reportTemplateProblem(tname, line, col+1, msg, use.pos)
		return
	}
	ro.c.r.Errorf(use.pos, "node %q: template %s %s", np.ID, use.name, msg)
}

// replyKey refuses .Own.Fields.X (any message's fields read by name): the
// tags a message holds are the model's, and a reply without X (or a round
// where the agent has not spoken yet) fails rendering; index gives "".
func (c *templateChecker) replyKey(tree *parse.Tree, n parse.Node, cur tmplType, name string) {
	if strings.HasSuffix(cur.what, "Outputs") {
		c.errorf(tree, n, ".%s.%s is read by name, but a node's outputs are keyed by the agents that answered (none for an agent that did not, or that is not the node's), so rendering can fail; write {{with index .%s %q}}...{{end}}", cur.what, name, cur.what, name)
		return
	}
	if strings.HasSuffix(cur.what, "ChoiceMap") {
		c.errorf(tree, n, ".%s.%s is read by name, but a message's choice map holds only the labels its call showed (none without shuffled choices), so rendering can fail; write {{index .%s %q}}, which gives \"\" when the label is absent", cur.what, name, cur.what, name)
		return
	}
	c.errorf(tree, n, ".%s.%s is read by name, but a message holds only the tags its reply had (and none before the agent has spoken), so rendering can fail; write {{index .%s %q}}, which gives \"\" when the tag is absent", cur.what, name, cur.what, name)
}

// guardCoalesce marks the read of a node guarded by `??` only where the
// left side tolerates the node not having run: nodes.X.output ?? D, or
// nodes.X.output?.p ?? D. In nodes.X.output.p ?? D the fetch of p from a
// nil output fails before ?? is reached ("cannot fetch p from <nil>").
func (v *refChecker) guardCoalesce(n ast.Node) {
	safe := true
	for {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return
		}
		if p, ok := m.Property.(*ast.StringNode); ok && (p.Value == "output" || p.Value == "outputs") {
			if safe {
				v.guard(m)
			}
			return
		}
		if !m.Optional {
			safe = false
		}
		n = m.Node
	}
}

// endExprs refuses an output (or score) that reads a node that may not
// have run by the end of the flow (a foreach over an empty list, an if not
// taken) without a guard: the run would fail after all its calls, at the
// very end. A node that cannot have run at all is reported by exprs.
func (ro *runOrder) endExprs(ps []*pendingExpr, end ranSet) {
	for _, p := range ps {
		for _, r := range p.refs {
			if r.guarded || r.conditional || !ro.may(end, r.id) || ro.must(end, r.id) {
				continue
			}
			ro.c.r.Errorf(r.pos, "%s: node %q may not have run when the flow has finished (it runs inside a foreach, an if, or a branch not always taken), so its output can be nil; guard the read: nodes.%s?.output ?? DEFAULT", r.what, r.id, r.id)
		}
	}
}

// noteConditional marks the member accesses an expression evaluates only
// on some paths: a condition there may be what guards the read
// (vars.x == "a" ? nodes.a.output : nodes.b.output after an if on vars.x).
func (v *refChecker) noteConditional(n ast.Node) {
	mark := func(sub ast.Node) {
		if v.conditional == nil {
			v.conditional = map[ast.Node]bool{}
		}
		ast.Walk(&sub, visitorFunc(func(x *ast.Node) {
			if _, ok := (*x).(*ast.MemberNode); ok {
				v.conditional[*x] = true
			}
		}))
	}
	switch x := n.(type) {
	case *ast.ConditionalNode:
		mark(x.Exp1)
		mark(x.Exp2)
	case *ast.BinaryNode:
		switch x.Operator {
		case "&&", "||", "and", "or", "??":
			mark(x.Right)
		}
	}
}

// checkIndex refuses index .Inputs "KEY" (and .Vars, .Nodes, .Loop) with a
// constant key that is not declared: index gives a missing key no error,
// and the prompt would read "<no value>".
func (c *templateChecker) checkIndex(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node) {
	if len(args) < 2 || len(nodes) < 2 || args[0].keys == nil {
		return
	}
	key, ok := nodes[1].(*parse.StringNode)
	if !ok {
		return
	}
	for _, k := range args[0].keys {
		if k == key.Text {
			return
		}
	}
	c.errorf(tree, cmd, "index: no %s named %q%s (a missing key renders as <no value>)", singular(args[0].what), key.Text, syntax.DidYouMean(key.Text, args[0].keys))
}
