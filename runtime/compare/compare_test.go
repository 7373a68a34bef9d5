package compare

import (
	"bytes"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/progress"
)

// TestUsageErrors: the flags that need something compare was not given
// are usage errors (exit 2) naming the flag, before any directory is read.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		o    Options
		want string
	}{
		{[]string{"a", "b"}, Options{Baseline: "a", Margin: -1}, "--margin -1: give a margin of at least 0"},
		{[]string{"a"}, Options{Baseline: "a"}, "--baseline a: give at least one other run or sweep to compare with it"},
		{[]string{"./a", "a/"}, Options{Baseline: "a"}, "--baseline a: give at least one other run or sweep to compare with it"},
		{[]string{"a", "b", "c"}, Options{JSON: true}, "--json prints a paired comparison of two sweeps over the same dataset: give exactly two sweep directories"},
		{[]string{"b"}, Options{Baseline: "a", MarginOn: "lower"}, "--margin-on lower gates on the paired interval of two sweeps over the same dataset: a is not a sweep directory"},
	} {
		var out, errs bytes.Buffer
		err := Run(&out, progress.Teller{W: &errs}, tc.dirs, tc.o)
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%v %+v: err %v (exit %d), want a usage error", tc.dirs, tc.o, err, exitcode.Of(err))
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%v %+v: err %q, want %q", tc.dirs, tc.o, err, tc.want)
		}
		if out.Len()+errs.Len() != 0 {
			t.Errorf("%v %+v: printed %q %q before failing", tc.dirs, tc.o, out.String(), errs.String())
		}
	}
}
