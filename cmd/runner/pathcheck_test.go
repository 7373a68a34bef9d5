package main

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
)

// historyPastRoundOne indexes the history past what a first round has:
// every run fails in round 1, after the calls before it.
const historyPastRoundOne = `version: 1
name: past
agents:
  a: {name: Alice}
templates:
  define:
    ask: "Round {{.Round}}: {{index .History 5}}"
nodes:
  say: {kind: ask, agents: [a], template: ask, record: say}
flow:
  - loop:
      max: 3
      do: [say]
outputs:
  n: len(latest("say"))
`

// firstScore reads the first of a list a reply may leave empty: only what
// a model replies decides whether it fails.
const firstScore = `version: 1
name: scores
agents:
  a: {name: Alice}
templates:
  define:
    rate: "Rate it."
nodes:
  rate:
    kind: ask
    agents: [a]
    template: rate
    record: rate
    output:
      format: json
      schema:
        type: object
        properties:
          scores: {type: array, items: {type: integer}}
        required: [scores]
  first:
    kind: compute
    value: nodes.rate.output.scores[0]
flow: [rate, first]
outputs:
  first: nodes.first.output
`

// TestValidateRefusesWhatFailsOnAPath: validate and run refuse a template
// that fails in the first round, at the template's position with the path
// named, before any call; a failure that depends only on replies is a
// warning, an error with --strict.
func TestValidateRefusesWhatFailsOnAPath(t *testing.T) {
	path := writeSpecFile(t, "spec.yaml", historyPastRoundOne)
	code, _, stderr := invoke(t, nil, "validate", path)
	if code != exitcode.InvalidSpec {
		t.Fatalf("validate: exit %d\n%s", code, stderr)
	}
	m := diagLine(path).FindStringSubmatch(stderr)
	if m == nil || m[1] != "7" || !strings.Contains(m[3], "in round 1 of loop `round`") || !strings.Contains(m[3], "index out of range") {
		t.Errorf("validate: want an error at 7:COL naming round 1 of the loop:\n%s", stderr)
	}
	code, _, stderr = invoke(t, nil, "run", path)
	if code != exitcode.InvalidSpec || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("run: exit %d\n%s", code, stderr)
	}

	path = writeSpecFile(t, "spec.yaml", firstScore)
	code, stdout, stderr := invoke(t, nil, "validate", path)
	if code != 0 || !strings.Contains(stdout, "ok") || !strings.Contains(stderr, "warning:") || !strings.Contains(stderr, "guard it") {
		t.Errorf("validate: exit %d, want 0 with a warning naming the guard\nstdout %s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = invoke(t, nil, "validate", "--strict", path)
	if code != exitcode.InvalidSpec || !strings.Contains(stderr, "(--strict)") {
		t.Errorf("validate --strict: exit %d\n%s", code, stderr)
	}
}
