package spectest_test

import (
	"bytes"
	"context"
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
