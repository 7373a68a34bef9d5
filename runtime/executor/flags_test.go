package executor

import (
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/quick"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/runtime/sweep"
)

// flagSpec is a run that calls no model, so that a run, its resume and a
// sweep of it need no endpoint.
const flagSpec = `version: 1
name: flags
agents:
  a: {name: A}
nodes:
  hello:
    kind: compute
    value: '"hello"'
flow: [hello]
outputs:
  out: nodes.hello.output
`

// randomFlags are run flags with every field random; with full, none is
// left at its zero value, so that every field is seen to travel.
func randomFlags(t *testing.T, rng *rand.Rand, full bool) runflags.Flags {
	t.Helper()
	typ := reflect.TypeOf(runflags.Flags{})
	v, ok := quick.Value(typ, rng)
	if !ok {
		t.Fatalf("cannot generate a value of %s: a field of runflags.Flags must be a plain value", typ)
	}
	if full {
		for i := range typ.NumField() {
			f := v.Field(i)
			for tries := 0; f.IsZero(); tries++ {
				if f.Kind() == reflect.Bool {
					f.SetBool(true)
					break
				}
				g, _ := quick.Value(f.Type(), rng)
				f.Set(g)
				if tries > 100 {
					t.Fatalf("runflags.Flags.%s: no value but its zero one generated", typ.Field(i).Name)
				}
			}
		}
	}
	return v.Interface().(runflags.Flags)
}

// sameFlags fails unless got are want, as JSON carries them.
func sameFlags(t *testing.T, where string, got, want runflags.Flags) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s: flags %s, want %s", where, g, w)
	}
}

func quietOut() Out {
	return Out{Tell: progress.Teller{W: io.Discard}, Stdout: io.Discard, Quiet: true}
}

// TestEveryRunFlagTravels is the property docs/runs.md promises of
// runflags.Flags: whatever a run's flags are (every field, random values),
// they are in its run.json, a resume goes on with them, a run on Temporal
// is submitted with them and its workflow runs the engine with them, and
// every run of a sweep has them, those its resume starts too. It names no
// field, so a new flag is covered the moment it is declared.
func TestEveryRunFlagTravels(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), flagSpec))
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	for i := range 6 {
		want := randomFlags(t, rng, i == 0)
		root := t.TempDir()
		opts := runtime.Options{Launch: launch.Launch{Flags: want}, Settings: runtime.Settings{RunsDir: root, Getenv: func(string) string { return "" }}}
		l := &Launch{Plan: plan, Registry: nodes.Registry(), Run: opts, Out: quietOut()}

		// A run made by the local executor: its run.json.
		dir := runThrough(t, "local", l)
		m, err := result.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		sameFlags(t, "run.json", m.Flags, want)

		// Its resume (its records gone) goes on with them.
		if err := os.Remove(filepath.Join(dir, "result.json")); err != nil {
			t.Fatal(err)
		}
		r, err := runtime.Resume(dir, nodes.Registry(), runtime.Options{Settings: runtime.Settings{Getenv: func(string) string { return "" }}})
		if err != nil {
			t.Fatal(err)
		}
		sameFlags(t, "resumed run", r.Flags(), want)
		if _, err := r.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}

		// On Temporal: the workflow's input, as Temporal carries it (JSON),
		// and the options the workflow runs the engine with.
		in, err := durable.NewRunInput(plan, nil, opts, "run", "test")
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var got durable.RunInput
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		values, err := durable.DecodeValues(got.Values)
		if err != nil {
			t.Fatal(err)
		}
		sameFlags(t, "the workflow's run", got.Options(values, nil).Flags, want)

		// A sweep's runs, the one its resume starts again among them.
		sl := *l
		sl.Sweep = sweep.Flags{Repeat: 2, Parallel: 1}
		so, err := sl.Sweep.Options(opts)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := sweep.RunOptions(plan, so)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range runs {
			sameFlags(t, "a sweep's run options", o.Flags, want)
		}
		sweepDir := runThrough(t, "local", &sl)
		children, _ := filepath.Glob(filepath.Join(sweepDir, "*", "run.json"))
		if len(children) != 2 {
			t.Fatalf("the sweep in %s made %d runs, want 2", sweepDir, len(children))
		}
		if err := os.RemoveAll(filepath.Dir(children[1])); err != nil {
			t.Fatal(err)
		}
		name, x, err := ForDir(sweepDir)
		if err != nil || name != "local" {
			t.Fatalf("the sweep's executor: %q, %v; want local", name, err)
		}
		h, err := x.Resume(context.Background(), sweepDir, &Launch{Registry: nodes.Registry(), Run: runtime.Options{Settings: runtime.Settings{Getenv: func(string) string { return "" }}}, Out: quietOut()})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		children, _ = filepath.Glob(filepath.Join(sweepDir, "*", "run.json"))
		if len(children) != 2 {
			t.Fatalf("the resumed sweep in %s has %d runs, want 2", sweepDir, len(children))
		}
		for _, c := range children {
			m, err := result.ReadManifest(filepath.Dir(c))
			if err != nil {
				t.Fatal(err)
			}
			sameFlags(t, "run.json of "+filepath.Base(filepath.Dir(c)), m.Flags, want)
		}
	}
}

// runThrough starts and waits for l through the executor registered as
// name, and returns the directory it left.
func runThrough(t *testing.T, name string, l *Launch) string {
	t.Helper()
	x, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(name, x, l); err != nil {
		t.Fatal(err)
	}
	h, err := x.Start(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.Dir() == "" {
		t.Fatal("the run left no directory")
	}
	return h.Dir()
}
