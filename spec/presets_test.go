package spec_test

import (
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

func TestVerdictPresetsFromLibrary(t *testing.T) {
	src := `version: 1
name: preset
inputs: {proposal: {required: true}}
templates: {use: [chain-of-debate]}
verdicts: {hiring: [YES, NO]}
agents: {a: {name: A}, b: {name: B}}
nodes:
  panel:
    kind: converse
    agents: [a, b]
    message: {template: chain-of-debate/message}
    verdict: {options: verdicts.proposal}
flow: [panel]
outputs: {n: len(verdicts.moderation)}
`
	plan, diags := spec.Compile("preset.yaml", []byte(src), nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("presets not found:\n%s", diags.Format())
	}
	if got := plan.Verdicts["proposal"]; len(got) != 4 || got[0] != "APPROVE" {
		t.Errorf("proposal preset = %v", got)
	}
	if got := plan.Verdicts["hiring"]; len(got) != 2 {
		t.Errorf("a set the spec declares must win over the preset, got %v", got)
	}
}
