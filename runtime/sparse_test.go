package runtime

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestSampledRenders: the first six prompts of a template for an agent are
// rendered, then ever fewer: the gaps between rendered ones never shrink,
// and n prompts render at most 9 + 4.5 ln(n/6) of them.
func TestSampledRenders(t *testing.T) {
	last, gap, rendered := 0, 1, 0
	for n := 1; n <= 100000; n++ {
		if !sampledRender(n) {
			if n <= 6 {
				t.Fatalf("prompt %d of a template is not rendered", n)
			}
			continue
		}
		rendered++
		if n > 6 && n-last < gap {
			t.Fatalf("the gap before render %d (%d) is shorter than the one before it (%d)", n, n-last, gap)
		}
		if n > 6 {
			gap = n - last
		}
		last = n
		if bound := 9 + 4.5*math.Log(float64(n)/6); n > 6 && float64(rendered) > bound {
			t.Fatalf("%d renders of %d prompts, more than %.1f", rendered, n, bound)
		}
	}
}

// TestSparseRendersFindWhatDenseRendersFind: over every example and
// testdata spec, the path check with sparse rendering reports exactly
// what it reports when it renders every prompt.
func TestSparseRendersFindWhatDenseRendersFind(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every example twice")
	}
	files, _ := filepath.Glob("../examples/*/spec.yaml")
	more, _ := filepath.Glob("../examples/protocols/*/spec.yaml")
	data, _ := filepath.Glob("testdata/*.yaml")
	files = append(append(files, more...), data...)
	defer func() { denseRenders = false }()
	for _, f := range files {
		plan, diags := spec.Load(f, nodes.Registry())
		if diags.HasErrors() {
			continue
		}
		denseRenders = true
		dense := CheckPaths(plan)
		denseRenders = false
		if sparse := CheckPaths(plan); !reflect.DeepEqual(sparse, dense) {
			t.Errorf("%s: sparse renders report\n%s\nevery prompt rendered reports\n%s", f, sparse.Format(), dense.Format())
		}
	}
}
