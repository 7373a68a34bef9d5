package runtime

import (
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestRememberedPathChecksAreTheWalks: for the path check's regression
// specs (whose walks find problems) and a clean one, a verdict read back
// from the cache directory is the walk's, diagnostics and all; a verdict
// file damaged at random (cut short, a byte changed, emptied) is walked
// again and written anew; another binary finds none of this one's
// verdicts; and the directory holds nothing but verdicts.
func TestRememberedPathChecksAreTheWalks(t *testing.T) {
	files, err := filepath.Glob("testdata/pathcheck/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no path check regression specs: %v", err)
	}
	files = append(files, "testdata/debate.yaml")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	dir := t.TempDir()
	reg := nodes.Registry()
	found := 0
	for _, f := range files {
		plan, diags := spec.Load(f, reg)
		if plan == nil || diags.HasErrors() {
			t.Fatalf("%s does not compile: %s", f, diags.Format())
		}
		walked := rememberedCheck(plan, dir, "binary A")
		found += len(walked)
		if !reflect.DeepEqual(walked, CheckPaths(plan)) {
			t.Fatalf("%s: first check %v, a walk %v", f, walked, CheckPaths(plan))
		}
		verdicts, _ := filepath.Glob(filepath.Join(dir, pathVerdictsDir, "*.json"))
		var file string
		for _, v := range verdicts {
			if key := planDigest("runner path check\x00binary A", abs(t, plan.Path)+"\x00"+plan.Path, plan); filepath.Base(v) == hex.EncodeToString(key[:])+".json" {
				file = v
			}
		}
		if file == "" {
			t.Fatalf("%s: no verdict written among %v", f, verdicts)
		}
		if got := rememberedCheck(plan, dir, "binary A"); !reflect.DeepEqual(got, walked) {
			t.Errorf("%s: read back %v, walked %v", f, got, walked)
		}
		for range 3 {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			switch rng.IntN(3) {
			case 0:
				data = data[:rng.IntN(len(data))]
			case 1:
				data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
			default:
				data = nil
			}
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var v pathVerdict
			if json.Unmarshal(data, &v) == nil && v.Version == pathVerdictVersion {
				continue // still a verdict (a changed byte in a message): read as it stands
			}
			if got := rememberedCheck(plan, dir, "binary A"); !reflect.DeepEqual(got, walked) {
				t.Errorf("seed %d: %s: damaged verdict %q gave %v, want the walk's %v", seed, f, data, got, walked)
			}
			data, _ = os.ReadFile(file)
			if json.Unmarshal(data, &v) != nil || !reflect.DeepEqual(v.Diagnostics, walked) {
				t.Errorf("seed %d: %s: the damaged verdict was not written anew: %q", seed, f, data)
			}
		}
		before, _ := filepath.Glob(filepath.Join(dir, pathVerdictsDir, "*"))
		rememberedCheck(plan, dir, "binary B")
		after, _ := filepath.Glob(filepath.Join(dir, pathVerdictsDir, "*"))
		if len(after) != len(before)+1 {
			t.Errorf("%s: another binary's check left %d files, want %d (one more)", f, len(after), len(before)+1)
		}
	}
	if found == 0 {
		t.Error("no walk found a problem: the diagnostics' round trip is untested")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != pathVerdictsDir {
		t.Errorf("the cache directory holds %v, want only %s", entries, pathVerdictsDir)
	}
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
