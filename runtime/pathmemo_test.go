package runtime

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
)

// TestLoadRemembersPathChecksByWhatPlansAreMadeOf: a spec loaded again
// gets the path check a fresh walk gives, and the key a remembered check
// is found by changes with any byte the plan is compiled from (the spec,
// any file of any library), with its path and with the node kinds: random
// single-byte changes, each of which must give another key.
func TestLoadRemembersPathChecksByWhatPlansAreMadeOf(t *testing.T) {
	reg := nodes.Registry()
	files := []string{"testdata/debate.yaml", "../examples/reasoning-debate/spec.yaml", "../examples/design-debate/spec.yaml"}
	for _, f := range files {
		plan, diags := Load(f, reg)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", f, diags.Format())
		}
		_, again := Load(f, reg)
		fresh := append(slices.Clone(diags[:len(diags)-len(CheckPaths(plan))]), CheckPaths(plan)...)
		if !reflect.DeepEqual(again, diags) || !reflect.DeepEqual(fresh, diags) {
			t.Errorf("%s: loaded again %v, walked afresh %v, first %v", f, again, fresh, diags)
		}
		// The caller owns what it is given.
		if len(again) > 0 {
			again[0].Message = "changed by the caller"
			if _, third := Load(f, reg); reflect.DeepEqual(third, again) {
				t.Errorf("%s: a caller's change reached the remembered check", f)
			}
		}

		base := planKey(plan, reg)
		if planKey(plan, reg) != base {
			t.Fatalf("%s: the key is not a function of the plan", f)
		}
		other := nodes.NewRegistry(nodes.Kinds()...)
		if planKey(plan, other) == base {
			t.Errorf("%s: another registry of node kinds gives the same key", f)
		}
		moved := *plan
		moved.Path = filepath.Join(t.TempDir(), "spec.yaml")
		if planKey(&moved, reg) == base {
			t.Errorf("%s: the same spec in another folder gives the same key", f)
		}
		rng := rand.New(rand.NewPCG(uint64(len(f)), 7))
		for range 200 {
			changed := *plan
			changed.Libraries = nil
			for _, l := range plan.Libraries {
				c := *l
				c.Files = map[string][]byte{}
				for k, v := range l.Files {
					c.Files[k] = slices.Clone(v)
				}
				changed.Libraries = append(changed.Libraries, &c)
			}
			changed.Source = slices.Clone(plan.Source)
			// One byte of one input: the spec or a file of a library.
			var target []byte
			if i := rng.IntN(len(changed.Libraries) + 1); i == len(changed.Libraries) {
				target = changed.Source
			} else {
				l := changed.Libraries[i]
				names := slices.Sorted(mapKeys(l.Files))
				if len(names) == 0 {
					continue
				}
				target = l.Files[names[rng.IntN(len(names))]]
			}
			if len(target) == 0 {
				continue
			}
			target[rng.IntN(len(target))] ^= byte(1 + rng.IntN(255))
			if planKey(&changed, reg) == base {
				t.Fatalf("%s: a changed byte gives the same key", f)
			}
		}
	}
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A library file changed on disk between two loads is walked again.
func TestLoadWalksAgainWhenALibraryFileChanges(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "mine")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	specText := `version: 1
name: memo
inputs:
  question: {required: true}
agents:
  a: {name: Alice}
templates:
  use: [mine]
nodes:
  ask: {kind: ask, agents: [a], template: mine/ask}
flow: [ask]
`
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "spec.yaml"), specText)
	write(filepath.Join(lib, "ask.tmpl"), "Say something.")
	reg := nodes.Registry()
	if _, diags := Load(filepath.Join(dir, "spec.yaml"), reg); diags.HasErrors() {
		t.Fatalf("%s", diags.Format())
	}
	// Indexing the input past its end passes the static checks (a
	// text's length is not a type) and fails on every path.
	write(filepath.Join(lib, "ask.tmpl"), `{{index .Inputs.question 100}}`)
	_, diags := Load(filepath.Join(dir, "spec.yaml"), reg)
	if !diags.HasErrors() || !strings.Contains(diags.Format(), "on every path") {
		t.Fatalf("a template that fails on every path, loaded after a good one, was not walked again: %s", diags.Format())
	}
}
