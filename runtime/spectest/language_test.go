package spectest_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/spectest"
)

// TestLanguageSpec runs the spec of the language's newer features
// (runtime/testdata/language.yaml) end to end: each case answers its calls
// at the HTTP level and checks the outputs the features compute.
func TestLanguageSpec(t *testing.T) {
	res := spectest.Run(context.Background(), []string{"../testdata/language.test.yaml"}, spectest.Options{Registry: nodes.Registry(), Parallel: 2})
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	if res[0].Failed() {
		t.Fatalf("failed:\n%s", out.String())
	}
	t.Log(out.String())
}

// TestLanguageSpecRefusesOutOfDomain: a case whose var or input is out of
// its declared domain does not start, and says which and why.
func TestLanguageSpecRefusesOutOfDomain(t *testing.T) {
	src, err := os.ReadFile("../testdata/language.yaml")
	if err != nil {
		t.Fatal(err)
	}
	test := `cases:
  - name: var
    vars: {rounds: 9}
    expect: [status == "completed"]
  - name: input
    inputs: {mode: medium}
    expect: [status == "completed"]
`
	dir := writeFiles(t, map[string]string{"spec.yaml": string(src), "spec.test.yaml": test})
	res := runFiles(t, dir)
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	for _, want := range []string{"var rounds: 9 is above the maximum, 3", `input mode: "medium" is not one of "short", "long"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("want %q in:\n%s", want, out.String())
		}
	}
}

// TestSeatSpec: runner test takes the messages of a seat a person plays
// (runtime/testdata/seat.yaml) from a case's answers, by the turn's id; a
// case without them ends waiting.
func TestSeatSpec(t *testing.T) {
	res := spectest.Run(context.Background(), []string{"../testdata/seat.test.yaml"}, spectest.Options{Registry: nodes.Registry(), Parallel: 2})
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	if res[0].Failed() || !strings.Contains(out.String(), "2 cases") {
		t.Fatalf("failed:\n%s", out.String())
	}
}
