package spectest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/spectest"
)

// TestSummariesSpec runs runtime/testdata/summaries.yaml, a conversation
// that summarises itself, end to end: its case answers the calls at the
// HTTP level and checks which calls were made and what each speaker saw.
func TestSummariesSpec(t *testing.T) {
	res := spectest.Run(context.Background(), []string{"../testdata/summaries.test.yaml"}, spectest.Options{Registry: nodes.Registry(), Parallel: 2})
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	if res[0].Failed() {
		t.Fatalf("failed:\n%s", out.String())
	}
}

// TestSummariesSpecDryRun: the dry run of runtime/testdata/summaries.yaml
// plans its summaries as calls of their own. Its stand-ins stand for
// replies of 500 tokens, each past the threshold alone, so from turn 2 on
// every turn is preceded by a summary of all but nothing (keep: 1 does
// not fit): 9 turns and 8 summaries.
func TestSummariesSpecDryRun(t *testing.T) {
	plan := runtest.LoadPlan(t, "../testdata/summaries.yaml")
	rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{}, AllPrompts: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range rep.Prompts {
		if strings.Contains(p.Key, "summary/") {
			keys = append(keys, p.Key)
		}
	}
	if rep.Calls != 17 || len(keys) != 8 {
		t.Errorf("the dry run plans %d calls, summaries %v; want 17 and the 8 summaries before turns 2 to 9", rep.Calls, keys)
	}
}
