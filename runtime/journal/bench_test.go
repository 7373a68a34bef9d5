package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchReply is shaped like a model_response payload.
type benchReply struct {
	Text       string `json:"text"`
	Tokens     int    `json:"tokens"`
	LatencyMS  int    `json:"latency_ms"`
	StopReason string `json:"stop_reason"`
}

// countingFile discards what is written and counts it, so BenchmarkAppend
// measures the journal's own CPU rather than the page cache (a NoSync journal
// growing by gigabytes gets throttled by dirty-page writeback).
type countingFile struct{ n int64 }

func (c *countingFile) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
func (c *countingFile) Sync() error                 { return nil }
func (c *countingFile) Close() error                { return nil }

// BenchmarkAppend measures the CPU cost of Append without fsync, and the
// journal bytes each event adds beyond its payload ("overhead-B/event").
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 16 << 10, 128 << 10} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			sink := &countingFile{}
			w := newWriter("bench", sink, Options{NoSync: true})
			reply := benchReply{Text: strings.Repeat("a", size), Tokens: size / 4, LatencyMS: 1234, StopReason: "stop"}
			payload, err := json.Marshal(reply)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Append("model_response", "propose/r1/architect", reply); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(sink.n)/float64(w.Seq())-float64(len(payload)), "overhead-B/event")
		})
	}
}

// BenchmarkAppendParallelSync appends from many goroutines with real fsync
// and reports fsyncs per append: well under 1 means group commit batches.
func BenchmarkAppendParallelSync(b *testing.B) {
	benchmarkSync(b, true)
}

// BenchmarkAppendSerialSync is the baseline: one appender, one fsync each.
func BenchmarkAppendSerialSync(b *testing.B) {
	benchmarkSync(b, false)
}

func benchmarkSync(b *testing.B, parallel bool) {
	w, err := Create(tempJournal(b))
	if err != nil {
		b.Fatal(err)
	}
	reply := benchReply{Text: strings.Repeat("a", 1<<10), Tokens: 256, LatencyMS: 1234, StopReason: "stop"}
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.SetParallelism(32) // 32 appenders per CPU: a wide debate round
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := w.Append("model_response", "propose/r1/architect", reply); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if _, err := w.Append("model_response", "propose/r1/architect", reply); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(w.syncCount())/float64(w.Seq()), "fsyncs/append")
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
