package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
)

// The CAMEL-style role-play (testdata/camel.yaml): its dry run plans the
// turns its var allows (8 by default, 20 with --set turns=20), a run ends
// when the user writes TASK_DONE, and --set beyond the var's maximum is
// refused before anything runs.
func TestCamelRolePlayPlansItsTurns(t *testing.T) {
	plan := loadPlan(t, "testdata/camel.yaml")
	for _, tc := range []struct {
		sets []string
		want int
	}{{nil, 8}, {[]string{"turns=20"}, 20}} {
		dry, err := NewDry(plan, Options{Launch: launch.Launch{Given: launch.Given{Sets: tc.sets}}}, Dry{Stage: &calls.Placeholders{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dry.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := int(dry.dry.calls.Load() + dry.dry.extrapolated.Load()); got != tc.want {
			t.Errorf("dry run with %v: %d calls planned, want %d", tc.sets, got, tc.want)
		}
	}
	// The user's third message (turn 5, the fifth call) declares the
	// task done.
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if r.N == 5 {
			return llmtest.Reply{Content: "All steps are in. TASK_DONE"}
		}
		return llmtest.Reply{Content: "next step"}
	})
	_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: []string{"turns=20"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.Total.Calls != 5 || res.Outputs["ended_by"] != "break" {
		t.Errorf("run: %d calls, ended by %v; want 5, break", res.Usage.Total.Calls, res.Outputs["ended_by"])
	}
	if _, _, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: []string{"turns=41"}}}}); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("turns=41 is above the var's maximum: err %v", err)
	}
}
