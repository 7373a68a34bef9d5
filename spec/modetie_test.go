package spec_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// A constant tie rule that is none of the rules is a spec error at its
// position.
func TestModeBadTieRuleIsASpecError(t *testing.T) {
	src := "version: 1\nname: tie\nagents: {a: {name: A}}\ntemplates: {define: {t: hi}}\n" +
		"nodes:\n  ask: {kind: ask, agents: [a], template: t}\nflow: [ask]\n" +
		"outputs:\n  answer: mode(map(latest(\"ask\"), {.output}), \"frist\")\n"
	_, diags := spec.Compile("tie.yaml", []byte(src), nodes.Registry())
	want := `tie.yaml:9:47:`
	var found bool
	for _, d := range diags.Errors() {
		if strings.HasPrefix(d.String(), want) && strings.Contains(d.String(), `tie rule "frist" is not one of none, first, random (did you mean "first"?)`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no positioned error for a bad tie rule:\n%v", diags.Error())
	}
}
