package spectest_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/spec"
)

// BenchmarkCase measures what a spec test costs over the run it tests: the
// reasoning debate's majority_answer case (load the test file and the
// spec, run six scripted calls, check seven assertions and the golden
// prompts) against the baseline of a plain run of the same spec (load it,
// run six calls against a local OpenAI-compatible server over HTTP). The
// ratio of the two ns/op is the overhead of testing.
func BenchmarkCase(b *testing.B) {
	const dir = "../../examples/reasoning-debate/"
	reg := nodes.Registry()
	b.Run("plain-run", func(b *testing.B) {
		srv := llmtest.New(b, func(llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: `7*3 is 21, and 12+21 is \boxed{33}`}
		})
		env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-bench"}
		runs := b.TempDir()
		b.ReportAllocs()
		for b.Loop() {
			plan, diags := spec.Load(dir+"spec.yaml", reg)
			if diags.HasErrors() {
				b.Fatal(diags.Errors().Format())
			}
			r, err := runtime.Start(plan, runtime.Options{
				Launch:   launch.Launch{Given: launch.Given{InputValues: map[string]any{"question": "What is 12+7*3?"}}},
				Settings: runtime.Settings{RunsDir: runs, Getenv: func(k string) string { return env[k] }, Version: "bench"},
			})
			if err != nil {
				b.Fatal(err)
			}
			res, err := r.Execute(context.Background())
			if err != nil || res.Status != result.StatusCompleted {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("spec-test", func(b *testing.B) {
		opts := spectest.Options{Registry: reg, Run: regexp.MustCompile(`^majority_answer$`), Parallel: 1, RunsDir: b.TempDir()}
		b.ReportAllocs()
		for b.Loop() {
			res := spectest.Run(context.Background(), []string{dir + "spec.test.yaml"}, opts)
			if len(res) != 1 || res[0].Failed() || len(res[0].Cases) != 1 {
				b.Fatalf("%+v", res)
			}
		}
	})
}
