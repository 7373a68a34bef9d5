package lsp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
)

// benchKeystrokes measures, for each example, the time from a keystroke
// (a character typed at the end of the first line, a comment, so that
// the text stays valid and every check is whole) to the diagnostics of the edited text,
// with the median per keystroke reported.
func benchKeystrokes(b *testing.B, example string, walk bool) {
	f, _ := filepath.Abs(example)
	data, err := os.ReadFile(f)
	if err != nil {
		b.Fatal(err)
	}
	src := string(data)
	o := Options{noWalk: !walk}
	o.Registry = nodes.Registry()
	c := newClientWith(b, o)
	uri := fileURI(f)
	c.open(uri, src, 1)
	c.waitDiags(uri, 1)
	off := strings.Index(src, "\n")
	var times []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := i + 2
		// Each keystroke makes a text not seen before.
		start := time.Now()
		c.change(uri, v, Range{at(src, off), at(src, off)}, "x")
		c.waitDiags(uri, v)
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

// The largest example by size (design-debate) and the one whose paths
// take longest to walk (hiring-panel), compiled only (what the editor
// shows first) and with the walk (validate's complete list).
func BenchmarkKeystrokeCompile(b *testing.B) {
	benchKeystrokes(b, "../../examples/design-debate/spec.yaml", false)
}

func BenchmarkKeystrokeValidate(b *testing.B) {
	benchKeystrokes(b, "../../examples/design-debate/spec.yaml", true)
}

func BenchmarkKeystrokeValidateLongestWalk(b *testing.B) {
	benchKeystrokes(b, "../../examples/hiring-panel/spec.yaml", true)
}
