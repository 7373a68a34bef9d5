package runtime

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// absentSpec: three graders, of which two must answer, then a node that
// reads their grades.
const absentSpec = `version: 1
name: absent
defaults: {max_retries: 1}
agents:
  a: {}
  b: {}
  c: {}
templates:
  define:
    grade: "KEY={{.Agent.ID}}/grade"
    sum: "KEY=sum"
nodes:
  grade: {kind: ask, agents: [a, b, c], template: grade, min_answers: MIN}
  sum: {kind: ask, agents: [a], template: sum}
flow: [grade, sum]
outputs:
  grades: nodes.grade.outputs
  absent: map(nodes.grade.absent, .agent)
`

// TestAbsentAgentOnResume: a grader whose endpoint fails is left out of a
// node that completes without it; when a later node fails and the run is
// resumed, the grader is not asked again (the journal's "absent" event
// says the node went on without it), so the resumed run ends as the first
// would have, with the absence in result.json once. A replay of the run
// leaves it out the same way, without any call. A node that failed for
// want of answers asks its failed calls again on resume.
func TestAbsentAgentOnResume(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var cAsked atomic.Int32
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		key := callKey(r)
		if key == "c/grade" {
			cAsked.Add(1)
		}
		if down.Load() && (key == "c/grade" || key == "sum") {
			return llmtest.Reply{Status: 500, ErrorMessage: "internal error"}
		}
		return llmtest.Reply{Content: "grade of " + key}
	})
	plan := loadPlan(t, writeSpec(t, t.TempDir(), strings.Replace(absentSpec, "MIN", "2", 1)))
	r, _, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	var ee *calls.EndpointError
	if !errors.As(err, &ee) || !strings.Contains(ee.Key, "sum") {
		t.Fatalf("first attempt: %v, want the sum node's endpoint failure", err)
	}
	if n := cAsked.Load(); n != 2 {
		t.Fatalf("c was asked %d times, want 2 (one retry)", n)
	}
	down.Store(false)
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := resumed.Execute(t.Context())
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n := cAsked.Load(); n != 2 {
		t.Errorf("c was asked %d times over both attempts, want 2: the resume asked a call the node went without", n)
	}
	if got, _ := json.Marshal(res.Outputs["absent"]); string(got) != `["c"]` {
		t.Errorf("outputs.absent %s, want [\"c\"]", got)
	}
	if grades, _ := res.Outputs["grades"].(map[string]any); len(grades) != 2 {
		t.Errorf("grades %v, want a's and b's", res.Outputs["grades"])
	}
	var onDisk result.Result
	data, err := os.ReadFile(filepath.Join(r.Dir, "result.json"))
	if err != nil || json.Unmarshal(data, &onDisk) != nil {
		t.Fatalf("result.json: %v", err)
	}
	if len(onDisk.Absent) != 1 || onDisk.Absent[0].Agent != "c" || onDisk.Absent[0].Key != "grade/-/c" ||
		!strings.Contains(onDisk.Absent[0].Reason, "internal error") || !strings.Contains(onDisk.Absent[0].Reason, "when the run first made it") {
		t.Errorf("result.json absent %+v", onDisk.Absent)
	}
	if n := len(eventsOf(readEvents(t, r.Dir), "absent")); n != 1 {
		t.Errorf("%d absent events in the journal, want 1 (the resume does not repeat it)", n)
	}
	report, _ := os.ReadFile(filepath.Join(r.Dir, "report.md"))
	if !strings.Contains(string(report), "## Absent agents") {
		t.Errorf("report.md has no Absent agents section")
	}

	// A replay of the run: no calls, the same absence.
	replies, err := LoadReplay(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests())
	_, replayed, err := execute(t, plan, Options{Launch: launch.Launch{Recording: launch.Recording{Replay: replies, ReplayFrom: r.Dir}}, Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if len(srv.Requests()) != before {
		t.Errorf("the replay sent %d requests", len(srv.Requests())-before)
	}
	if len(replayed.Absent) != 1 || replayed.Absent[0].Agent != "c" {
		t.Errorf("replay absent %+v", replayed.Absent)
	}

	// A fixed spec that changes the grading prompt asks c again.
	down.Store(true)
	cAsked.Store(0)
	dir2 := t.TempDir()
	r2, _, err := execute(t, loadPlan(t, writeSpec(t, dir2, strings.Replace(absentSpec, "MIN", "2", 1))), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err == nil {
		t.Fatal("the sum node did not fail")
	}
	down.Store(false)
	fixed := writeSpec(t, t.TempDir(), strings.Replace(strings.Replace(absentSpec, "MIN", "2", 1), `/grade"`, `/grade please"`, 1))
	resumed2, err := Resume(r2.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}, Resuming: Resuming{Spec: fixed}})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := resumed2.Execute(t.Context())
	if err != nil {
		t.Fatalf("resume with a fixed spec: %v", err)
	}
	if n := cAsked.Load(); n != 3 || len(res2.Absent) != 0 {
		t.Errorf("with a changed prompt c was asked %d times (want 2, then 1 on resume), absent %+v", n, res2.Absent)
	}

	// min_answers 3: the node fails, nothing is recorded as absent, and a
	// resume asks c again.
	down.Store(true)
	cAsked.Store(0)
	plan3 := loadPlan(t, writeSpec(t, t.TempDir(), strings.Replace(absentSpec, "MIN", "3", 1)))
	r3, _, err := execute(t, plan3, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "2 of 3 calls answered, fewer than its min_answers (3)") {
		t.Fatalf("min_answers 3: %v", err)
	}
	if n := len(eventsOf(readEvents(t, r3.Dir), "absent")); n != 0 {
		t.Errorf("a failed node journaled %d absences", n)
	}
	down.Store(false)
	resumed3, err := Resume(r3.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res3, err := resumed3.Execute(t.Context())
	if err != nil {
		t.Fatalf("resume with min_answers 3: %v", err)
	}
	if n := cAsked.Load(); n != 3 || len(res3.Absent) != 0 {
		t.Errorf("c asked %d times (want 2 then 1 on resume), absent %+v", n, res3.Absent)
	}
}
