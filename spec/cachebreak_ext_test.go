package spec_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestCacheBreakMisuseIsPlaced: validate reports a misused {{cacheBreak}}
// at its line and column in the spec, whether the template is inline or a
// block.
func TestCacheBreakMisuseIsPlaced(t *testing.T) {
	tests := []struct{ name, define, want string }{
		{"inline, twice", `    t/ask: "{{.Agent.Name}}{{cacheBreak}} {{cacheBreak}}"`, `pos.yaml:7:45: template t/ask: a second {{cacheBreak}} in one message`},
		{"block, in a range", "    t/ask: |\n      {{.Agent.Name}}\n      {{range .History}}{{cacheBreak}}{{end}}", `pos.yaml:9:27: template t/ask: {{cacheBreak}} inside a range`},
		{"inline, piped", `    t/ask: "{{cacheBreak | upper}}"`, `pos.yaml:7:15: template t/ask: {{cacheBreak}} must stand alone`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "version: 1\nname: pos\nagents:\n  a: {name: Alice}\ntemplates:\n  define:\n" + tc.define +
				"\nnodes:\n  answer: {kind: ask, agents: [a], template: t/ask}\nflow: [answer]\n"
			_, diags := spec.Compile("pos.yaml", []byte(src), nodes.Registry())
			errs := diags.Errors()
			if len(errs) != 1 || !strings.Contains(strings.Replace(errs[0].String(), " error: ", " ", 1), tc.want) {
				t.Errorf("errors:\n%s\nwant one with %q", diags.Error(), tc.want)
			}
		})
	}
	ok := "version: 1\nname: pos\nagents:\n  a: {name: Alice}\ntemplates:\n  define:\n    t/ask: \"{{.Agent.Name}}{{cacheBreak}} go\"\nnodes:\n  answer: {kind: ask, agents: [a], template: t/ask}\nflow: [answer]\n"
	if _, diags := spec.Compile("pos.yaml", []byte(ok), nodes.Registry()); len(diags.Errors()) > 0 {
		t.Errorf("one {{cacheBreak}} is refused: %s", diags.Error())
	}
}
