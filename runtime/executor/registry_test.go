package executor

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestRegistryNamesEachExecutorOnce: every executor is found by its name,
// an unknown name is a usage error that lists the names.
func TestRegistryNamesEachExecutorOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Registry() {
		if seen[d.Name] {
			t.Errorf("executor %q is registered twice", d.Name)
		}
		seen[d.Name] = true
		if _, err := Lookup(d.Name); err != nil {
			t.Errorf("Lookup(%q): %v", d.Name, err)
		}
	}
	_, err := Lookup("nowhere")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) {
		t.Errorf("Lookup of an unknown name: %v (exit %d); want a usage error listing %v", err, exitcode.Of(err), Names())
	}
}

// TestValidateHoldsCapabilities: whatever launch is asked of whichever
// executor, one that it cannot make by its capabilities (a sweep of an
// executor that does not sweep, a replay of one that does not replay) is
// refused before anything starts, as a usage error.
func TestValidateHoldsCapabilities(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), flagSpec))
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	for range 200 {
		d := Registry()[rng.Intn(len(Registry()))]
		x := d.New()
		l := &Launch{Plan: plan}
		if rng.Intn(2) == 0 {
			l.Sweep = sweep.Flags{Repeat: 2 + rng.Intn(3)}
		}
		if rng.Intn(2) == 0 {
			l.Run.ReplayFrom = "runs/recorded"
		}
		if rng.Intn(2) == 0 {
			l.Study.File = "study.yaml"
		}
		err := Validate(d.Name, x, l)
		caps := x.Capabilities()
		cannot := l.Sweep.Sweeping() && !caps.Sweeps || l.Run.ReplayFrom != "" && !caps.Replays
		if cannot && err == nil {
			t.Errorf("%s: launch %+v validated, but the executor has %+v", d.Name, l, caps)
		}
		if err != nil && exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: refused with %v (exit %d), want a usage error", d.Name, err, exitcode.Of(err))
		}
	}
}

// TestForDirChoosesTheOwner: for a directory holding any mix of what
// marks a study (study.json), a sweep (sweep.json, summary.json), a run
// (run.json) and a run made on Temporal (its record), resume's executor is
// the study's for a study, the local one for a sweep (whose runs say how
// each is made), the temporal one for a run with a record, else the local
// one.
func TestForDirChoosesTheOwner(t *testing.T) {
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	markers := []string{"study.json", "sweep.json", "summary.json", "run.json", durable.RecordFile}
	for range 64 {
		dir := t.TempDir()
		has := map[string]bool{}
		for _, m := range markers {
			if rng.Intn(2) == 0 {
				continue
			}
			has[m] = true
			if m == durable.RecordFile {
				if err := durable.WriteRecord(dir, durable.Record{Address: "127.0.0.1:7233", WorkflowID: "runner-run-x"}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, m), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want := "local"
		switch {
		case has["study.json"]:
			want = "study"
		case has["sweep.json"] || has["summary.json"]:
		case has[durable.RecordFile]:
			want = "temporal"
		}
		name, x, err := ForDir(dir)
		if err != nil {
			t.Fatalf("%v: %v", has, err)
		}
		if name != want {
			t.Errorf("a directory with %v is resumed by %s, want %s", has, name, want)
		}
		if !x.Capabilities().Resumes {
			t.Errorf("%s resumes %v but says it does not resume", name, has)
		}
	}
	// The dry run leaves nothing to resume.
	x, _ := Lookup("dry")
	if _, err := x.Resume(t.Context(), t.TempDir(), &Launch{}); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("resuming a dry run: %v, want a usage error", err)
	}
}
