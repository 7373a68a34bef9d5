package examples_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
)

// BenchmarkDryRunCost compares, for design-debate and hiring-panel, the
// CPU of a dry run with the CPU of what a real run costs the machine:
// validating the spec plus running it against an in-process endpoint that
// answers at once (with the stand-ins the dry run would give, so both make
// the same calls). Reported: CPU per op of each (getrusage, user+system),
// and ratio = dry / (validate + run). The dry run by default also counts
// history summaries a real reply size would start (it may make more calls
// than the run); dry-same is the dry run measured as the run, calls alike.
func BenchmarkDryRunCost(b *testing.B) {
	for _, name := range []string{"design-debate", "hiring-panel"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(name, "spec.yaml")
			plan, diags := spec.Load(path, nodes.Registry())
			if diags.HasErrors() {
				b.Fatal(diags.Format())
			}
			r, _ := readReadme(b, name)
			var inputs []string
			for k, v := range r.inputs {
				inputs = append(inputs, k+"="+v)
			}
			replies := map[string]string{}
			if _, err := dryrun.Run(plan, dryrun.Options{
				Given:       launch.Given{Inputs: inputs},
				ActualSizes: true,
				Answered: func(as []calls.Answered) {
					for _, a := range as {
						replies[a.Key] = a.Reply
					}
				},
			}); err != nil {
				b.Fatal(err)
			}
			cpu := func(f func()) time.Duration {
				u0, s0 := runtest.CPUTime()
				f()
				u1, s1 := runtest.CPUTime()
				return u1 - u0 + s1 - s0
			}
			var validate, run, dry, drySame time.Duration
			n := 0
			for b.Loop() {
				validate += cpu(func() {
					if _, diags := spec.Load(path, nodes.Registry()); diags.HasErrors() {
						b.Fatal(diags.Format())
					}
				})
				run += cpu(func() {
					rn, err := runtime.Start(plan, runtime.Options{
						Launch:   launch.Launch{Given: launch.Given{Inputs: inputs}},
						Settings: runtime.Settings{RunsDir: b.TempDir(), Getenv: runtest.Env("http://127.0.0.1:1/v1", "sk-bench"), Ask: func(_ context.Context, q value.Question) (string, error) { return "<answer to " + q.ID + ">", nil }},
						Seams:    runtime.Seams{HTTPClient: &http.Client{Transport: runtest.KeyedTransport{Reply: func(k string) string { return replies[k] }}}},
					})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := rn.Execute(context.Background()); err != nil {
						b.Fatal(err)
					}
				})
				dry += cpu(func() {
					if _, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: inputs}}); err != nil {
						b.Fatal(err)
					}
				})
				drySame += cpu(func() {
					if _, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: inputs}, ActualSizes: true}); err != nil {
						b.Fatal(err)
					}
				})
				n++
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
			b.ReportMetric(per(validate), "validate-µs")
			b.ReportMetric(per(run), "run-µs")
			b.ReportMetric(per(dry), "dry-µs")
			b.ReportMetric(per(dry)/(per(validate)+per(run)), "ratio")
			b.ReportMetric(per(drySame)/(per(validate)+per(run)), "ratio-same-calls")
		})
	}
}
