package spectest_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
	"gopkg.in/yaml.v3"
)

// outputChecks wraps kinds so that every node they run has its result
// checked against the output type its kind declared when compiling it
// (kit.CheckOutput), and counts the nodes checked per kind.
type outputChecks struct {
	mu      sync.Mutex
	checked map[string]int
	typed   int // nodes whose declared type says more than any
	errs    []string
}

func (o *outputChecks) after(node *spec.NodePlan, res value.NodeResult, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		return
	}
	o.checked[node.Kind]++
	if node.Output != nil && node.Output.Kind != spec.AnyType {
		o.typed++
	}
	if cerr := kit.CheckOutput(node, res); cerr != nil {
		o.errs = append(o.errs, cerr.Error())
	}
}

type checkedKind struct {
	kit.Kind
	o *outputChecks
}

func (k checkedKind) Execute(ctx context.Context, h kit.Host, node *spec.NodePlan) (value.NodeResult, error) {
	res, err := k.Kind.Execute(ctx, h, node)
	k.o.after(node, res, err)
	return res, err
}

func (k checkedKind) ReportSections(plan *spec.Plan, msgs []value.Message) []kit.ReportSection {
	if r, ok := k.Kind.(kit.Reporter); ok {
		return r.ReportSections(plan, msgs)
	}
	return nil
}

type checkedDescribed struct {
	checkedKind
	kit.Describer
}

func (o *outputChecks) wrap(k kit.Kind) kit.Kind {
	c := checkedKind{Kind: k, o: o}
	if d, ok := k.(kit.Describer); ok {
		return checkedDescribed{c, d}
	}
	return c
}

// TestOutputsHaveTheirDeclaredTypes runs every example's spec tests and
// every kind's Example (its calls answered with stand-ins) and checks that
// each node's result has the type its kind declared at compile time, which
// expressions over nodes.ID.output were checked against: the declaration
// and the executor cannot drift apart unseen. Every registered kind must
// run at least once. The same files run again sixteen cases at once must
// end the same (checkParallelCasesAreDeterministic): running every
// example's tests is the longest part of this package under -race, so
// the two checks share the run one at a time.
func TestOutputsHaveTheirDeclaredTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example's spec tests")
	}
	o := &outputChecks{checked: map[string]int{}}
	var kinds []kit.Kind
	for _, k := range nodes.Kinds() {
		kinds = append(kinds, o.wrap(k))
	}
	reg := nodes.NewRegistry(kinds...)

	files, err := spectest.Find([]string{"../../examples"})
	if err != nil {
		t.Fatal(err)
	}
	// Each kind's Example, as a spec with one case that scripts nothing.
	dir := t.TempDir()
	for _, k := range nodes.Kinds() {
		d := filepath.Join(dir, k.Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "spec.yaml"), []byte(k.Example()), 0o644); err != nil {
			t.Fatal(err)
		}
		// Every input it declares gets a placeholder value.
		var doc struct {
			Inputs map[string]any `yaml:"inputs"`
		}
		if err := yaml.Unmarshal([]byte(k.Example()), &doc); err != nil {
			t.Fatalf("%s's Example: %v", k.Name(), err)
		}
		test := "inputs:\n"
		if len(doc.Inputs) == 0 {
			test = "inputs: {}\n"
		}
		for name := range doc.Inputs {
			test += "  " + name + ": a placeholder\n"
		}
		test += "cases:\n  - name: stand-ins\n    expect:\n      - status != \"\"\n"
		if err := os.WriteFile(filepath.Join(d, "spec.test.yaml"), []byte(test), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(d, "spec.test.yaml"))
	}
	// One at a time: the same files with sixteen cases at once (below)
	// must end the same, case for case.
	results := spectest.Run(context.Background(), files, spectest.Options{Registry: reg, Parallel: 1})
	t.Run("parallel cases are deterministic", func(t *testing.T) {
		checkParallelCasesAreDeterministic(t, results, spectest.Run(context.Background(), files, spectest.Options{Registry: nodes.Registry(), Parallel: 16}))
	})
	for _, f := range results {
		if f.Err != nil {
			t.Errorf("%s: %v", f.Path, f.Err)
		}
		for _, c := range f.Cases {
			if !c.Passed {
				t.Errorf("%s: case %q failed: %+v", f.Path, c.Name, c.Failures)
			}
		}
	}
	sort.Strings(o.errs)
	if len(o.errs) > 0 {
		t.Errorf("outputs not of their declared types:\n%s", strings.Join(o.errs, "\n"))
	}
	for _, k := range nodes.Kinds() {
		if o.checked[k.Name()] == 0 {
			t.Errorf("no %s node ran: give its Example or an example's spec test one", k.Name())
		}
	}
	if o.typed == 0 {
		t.Error("no node that ran declared an output type other than any: the check checked nothing")
	}
	t.Logf("nodes checked per kind: %v, %d of them with a declared type", o.checked, o.typed)
}
