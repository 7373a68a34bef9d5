package runtime

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestPruneVerdictsKeepsTheNewest: for folders made at random (verdicts
// of random ages, some sharing a time, temporary files of unfinished
// writes, a file of another kind, a subfolder) and a random limit and age,
// what pruning leaves is what the rule says, computed apart: the verdict
// just written, the newest others up to the limit among those younger than
// the age (at the same time, the first by name), the young temporary files,
// and whatever is not a verdict.
func TestPruneVerdictsKeepsTheNewest(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 39))
	now := time.Date(2026, 12, 8, 3, 0, 0, 0, time.UTC)
	for round := range 40 {
		dir := t.TempDir()
		most := 1 + rng.IntN(12)
		age := time.Duration(1+rng.IntN(100)) * time.Hour
		type file struct {
			name string
			mod  time.Time
		}
		var verdicts, temps []file
		var others []string
		write := func(name string, mod time.Time) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(dir, name), mod, mod); err != nil {
				t.Fatal(err)
			}
		}
		// Few distinct times, so that ties happen.
		when := func() time.Time { return now.Add(-time.Duration(rng.IntN(150)) * time.Hour) }
		for i := range rng.IntN(3 * most) {
			f := file{fmt.Sprintf("%016x.json", rng.Uint64()+uint64(i)), when()}
			write(f.name, f.mod)
			verdicts = append(verdicts, f)
		}
		for i := range rng.IntN(3) {
			f := file{fmt.Sprintf(".tmp-%d", i), when()}
			write(f.name, f.mod)
			temps = append(temps, f)
		}
		if rng.IntN(2) == 0 {
			write("notes.txt", now.Add(-1000*time.Hour))
			others = append(others, "notes.txt")
		}
		if rng.IntN(2) == 0 {
			if err := os.Mkdir(filepath.Join(dir, "old.json"), 0o755); err != nil {
				t.Fatal(err)
			}
			old := now.Add(-1000 * time.Hour)
			_ = os.Chtimes(filepath.Join(dir, "old.json"), old, old)
			others = append(others, "old.json")
		}
		keep := "ffffffffffffffffff.json"
		write(keep, now.Add(-1000*time.Hour)) // kept whatever its time says

		pruneVerdicts(dir, keep, now, most, age)

		want := append([]string{keep}, others...)
		var young []file
		for _, f := range verdicts {
			if now.Sub(f.mod) <= age {
				young = append(young, f)
			}
		}
		sort.Slice(young, func(i, j int) bool {
			if !young[i].mod.Equal(young[j].mod) {
				return young[i].mod.After(young[j].mod)
			}
			return young[i].name < young[j].name
		})
		for i, f := range young {
			if i < most-1 {
				want = append(want, f.name)
			}
		}
		for _, f := range temps {
			if now.Sub(f.mod) <= age {
				want = append(want, f.name)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d, round %d (most %d, age %v): left %v, want %v", seed, round, most, age, got, want)
		}
	}
}

// TestRememberedCheckPrunesOnWrite: a verdict written into a folder full
// of verdicts (more than maxPathVerdicts, some past maxPathVerdictAge)
// leaves it at maxPathVerdicts, the new verdict among them and read back,
// the oldest gone; a verdict read back is renewed, so it outlives those
// written after it was last written but before it was last read.
func TestRememberedCheckPrunesOnWrite(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(cache, pathVerdictsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plan, diags := spec.Load("testdata/debate.yaml", nodes.Registry())
	if plan == nil || diags.HasErrors() {
		t.Fatalf("testdata/debate.yaml: %s", diags.Format())
	}
	// The verdict of the plan, written first and then made the oldest but
	// one; read back, it becomes the newest.
	walked := rememberedCheck(plan, cache, "binary A")
	mine, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(mine) != 1 {
		t.Fatalf("want one verdict, found %v", mine)
	}
	now := time.Now()
	stamp := func(name string, mod time.Time) {
		if err := os.Chtimes(name, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	stamp(mine[0], now.Add(-2*time.Hour))
	extra := maxPathVerdicts + 20
	for i := range extra {
		name := filepath.Join(dir, fmt.Sprintf("%064x.json", i))
		if err := os.WriteFile(name, []byte(`{"version":1}`), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := now.Add(-time.Hour + time.Duration(i)*time.Second) // all younger than mine
		if i < 5 {
			mod = now.Add(-maxPathVerdictAge - time.Hour) // too old
		}
		stamp(name, mod)
	}
	if got := rememberedCheck(plan, cache, "binary A"); !reflect.DeepEqual(got, walked) {
		t.Fatalf("read back %v, walked %v", got, walked)
	}
	// Another binary's verdict is written: the folder is pruned.
	other := rememberedCheck(plan, cache, "binary B")
	if !reflect.DeepEqual(other, walked) {
		t.Fatalf("binary B walked %v, binary A %v", other, walked)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(left) != maxPathVerdicts {
		t.Fatalf("%d verdicts left, want %d", len(left), maxPathVerdicts)
	}
	if _, err := os.Stat(mine[0]); err != nil {
		t.Errorf("the verdict read back was pruned: %v", err)
	}
	for i := range extra {
		name := filepath.Join(dir, fmt.Sprintf("%064x.json", i))
		_, err := os.Stat(name)
		// Dropped: the 5 too old, and of the young the oldest
		// (extra-5) - (maxPathVerdicts-3) (kept: the two plan verdicts and
		// maxPathVerdicts-2 others).
		dropped := i < 5 || i < 5+(extra-5)-(maxPathVerdicts-2)
		if gone := err != nil; gone != dropped {
			t.Errorf("verdict %d: gone %v, want %v", i, gone, dropped)
		}
	}
	for _, f := range left {
		if strings.HasPrefix(filepath.Base(f), ".tmp-") {
			t.Errorf("temporary file left: %s", f)
		}
	}
}
