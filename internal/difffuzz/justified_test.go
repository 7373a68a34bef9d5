package difffuzz

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestRefusalsByDesignAreJustified: the refusals a campaign found running
// well with checks off, though right (a loop named loops, a text var read
// as a number, a free-text input read as a number, an agent var no agent
// has, a fallback not of the output's shape, a normaliser where a boolean
// is wanted, a node no spec declares read by a template, a printf verb
// given text, text in arithmetic with a value of any type), are told
// apart from false refusals whatever names and values they are written
// with: specs of each, with random names and values, are refused by the
// real checker and every error is justified.
func TestRefusalsByDesignAreJustified(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewSource(29))
	name := func() string {
		return pick(r, []string{"setting", "mode", "x", "style", "tone"}) + strconv.Itoa(r.Intn(9))
	}
	text := func() string { return pick(r, []string{"one_by_one", "fast", "n/a", "many words here", "x1"}) }
	const head = "version: 1\nname: j\nagents: {a: {}, b: {}}\n"
	makers := []func() string{
		func() string {
			return head + "templates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t}\nflow:\n  - loop: {as: loops, max: 2, do: [n]}\n"
		},
		func() string {
			v := name()
			return head + fmt.Sprintf("vars: {%s: %q}\ntemplates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t}\nflow: [n]\noutputs:\n  o: %s(vars.%s) + 1\n", v, text(), pick(r, []string{"int", "float"}), v)
		},
		func() string {
			in := name()
			return head + fmt.Sprintf("inputs: {%s: {required: true}}\ntemplates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t}\nflow: [n]\noutputs:\n  o: int(inputs.%s) * 2\n", in, in)
		},
		func() string {
			return head + fmt.Sprintf("templates: {define: {t: 'hi {{.Agent.Vars.%s}}'}}\nnodes:\n  n: {kind: ask, agents: [a, b], template: t}\nflow: [n]\n", name())
		},
		func() string {
			fallback := pick(r, []string{"1000000", "nope", "[1, 2]", "true"})
			return head + fmt.Sprintf("templates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, output: {format: tags, fields: [%s], fallback: %s}}\nflow: [n]\n", name(), fallback)
		},
		func() string {
			cond := pick(r, []string{"choice", "number", "yesno"}) + "(" + pick(r, []string{"nodes.n.text", "latest(\"r\")[0].content", "inputs.q"}) + ")"
			if r.Intn(2) == 0 {
				cond = pick(r, []string{"true && ", "!", "false || "}) + cond
			}
			return head + fmt.Sprintf("inputs: {q: {default: hi}}\ntemplates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, record: r}\n  m: {kind: ask, agents: [b], template: t}\nflow:\n  - n\n  - if: %q\n    then: [m]\n", cond)
		},
		func() string {
			return head + fmt.Sprintf("templates: {define: {t: 'hi {{.Nodes.%s.Output}}'}}\nnodes:\n  n: {kind: ask, agents: [a], template: t}\nflow: [n]\n", name())
		},
		func() string {
			verb := pick(r, []string{"%d", "%f", "%o"})
			return head + fmt.Sprintf("templates: {define: {t: 'hi {{printf \"%s\" .Agent.Name}}'}}\nnodes:\n  n: {kind: ask, agents: [a], template: t}\nflow: [n]\n", verb)
		},
		func() string {
			op := pick(r, []string{"-", "*", "/"})
			return head + fmt.Sprintf("templates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, max_tool_calls: '1 + (\"%s\" %s vars.%s)'}\nflow: [n]\n", text(), op, name())
		},
		func() string {
			return head + fmt.Sprintf("templates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, record: r}\nflow:\n  - loop: {max: 'len(messages) + %d', do: [n]}\n", 1+r.Intn(3))
		},
		func() string {
			return head + fmt.Sprintf("templates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, record: r, max_tool_calls: 'latest(\"r\")[%d]'}\nflow: [n]\n", r.Intn(3))
		},
		func() string {
			return head + fmt.Sprintf("inputs: {q: {default: hi}}\ntemplates: {define: {t: hi}}\nnodes:\n  n: {kind: ask, agents: [a], template: t, when: 'concat(%s)'}\nflow: [n]\n", pick(r, []string{"not true", "2", "inputs.q == \"x\""}))
		},
	}
	for trial := 0; trial < 150; trial++ {
		data := makers[trial%len(makers)]()
		path := filepath.Join(dir, "j.yaml")
		plan, diags := spec.Compile(path, []byte(data), nodes.Registry())
		if plan != nil || !diags.HasErrors() {
			t.Fatalf("not refused:\n%s", data)
		}
		var errs []string
		for _, d := range diags.Errors() {
			errs = append(errs, d.String())
		}
		if _, ok := justified(errs); !ok {
			t.Errorf("refused by design, but counted a false refusal: %q\nspec:\n%s", errs, data)
		}
	}
}
