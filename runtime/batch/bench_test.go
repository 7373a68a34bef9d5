package batch_test

import (
	"context"
	"testing"

	"github.com/debate-runner/runner/internal/batchtest"
	"github.com/debate-runner/runner/runtime/sweep"
)

// BenchmarkBatchSweepCost runs a 200-item dataset sweep of
// examples/reasoning-debate (3 agents, 2 rounds: 1,200 calls) at the
// model's list price, once without batches and once in batch mode killed
// twice while its batches were pending and resumed, against the local
// batch APIs of each kind. It reports the cost of each, their ratio
// (batch/list, the target is at most 0.5), and the requests paid twice
// (0).
func BenchmarkBatchSweepCost(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.kind, func(b *testing.B) {
			const items, rounds = 200, 2
			for b.Loop() {
				list := batchtest.New(b)
				plain, err := sweep.Sweep(context.Background(), debatePlan(b, k.kind, list.URL+k.path, k.model, k.key, rounds),
					sweep.Options{Run: runOptions(b, k.key), Dataset: dataset(b, items), Parallel: 16})
				if err != nil {
					b.Fatal(err)
				}
				srv := batchtest.New(b)
				batched := killedTwice(b, srv, debatePlan(b, k.kind, srv.URL+k.path, k.model, k.key, rounds), k.key, items)
				checkOnce(b, srv, batched, items*rounds*3)
				if srv.Direct != 0 {
					b.Fatalf("%d requests of the batch sweep were sent on their own", srv.Direct)
				}
				if batched.Usage.PromptTokens != plain.Usage.PromptTokens || batched.Usage.CompletionTokens != plain.Usage.CompletionTokens {
					b.Fatalf("tokens differ: batch %+v, list %+v", batched.Usage, plain.Usage)
				}
				b.ReportMetric(plain.Usage.Cost, "list-$")
				b.ReportMetric(batched.Usage.Cost, "batch-$")
				b.ReportMetric(batched.Usage.Cost/plain.Usage.Cost, "batch/list")
				b.ReportMetric(float64(len(srv.TwiceBilled())), "paid-twice")
				b.ReportMetric(float64(srv.Submissions), "batches")
			}
		})
	}
}
