package compute_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes/compute"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
)

func TestMain(m *testing.M) { os.Exit(runtest.IsolateCache(m)) }

// TestComputeVoteEndsLoop runs the kind's example spec through the engine
// against the scripted server: the agents disagree in round 1 and agree in
// round 2, so the vote computed after each round ends the loop after two
// rounds, with no call for the vote itself.
func TestComputeVoteEndsLoop(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		// The prompt names no agent: tell them apart by the system-free
		// prompt's round (the answers of others it quotes) and a counter.
		user := r.LastUser()
		round := 1
		if strings.Contains(user, "said:") {
			round = 2
		}
		asked[fmt.Sprint(round)]++
		if round == 1 && asked["1"] == 2 {
			return llmtest.Reply{Content: "I think so. ANSWER: 5"}
		}
		return llmtest.Reply{Content: "Clearly. ANSWER: 4"}
	})
	dir := t.TempDir()
	path := runtest.WriteSpec(t, dir, compute.Kind{}.Example())
	plan := runtest.LoadPlan(t, path)
	r, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 2+2?"}}},
		Settings: runtime.Settings{RunsDir: filepath.Join(dir, "runs"), Getenv: runtest.Env(srv.URL, "sk-test")},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background())
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if got := srv.Count(); got != 6 {
		t.Errorf("%d model calls, want 6 (3 agents x 2 rounds; the vote calls no model)", got)
	}
	if res.Outputs["answer"] != "4" || res.Outputs["unanimous"] != true {
		t.Errorf("outputs = %v, want answer 4, unanimous", res.Outputs)
	}
	if n := res.Usage.ByNode["vote"].Calls; n != 0 {
		t.Errorf("the vote made %d calls", n)
	}
}

// TestComputeErrors: an expression that fails when it runs fails the node
// with the expression named.
func TestComputeErrors(t *testing.T) {
	const src = `version: 1
name: c
vars: {n: 0}
nodes:
  ratio: {kind: compute, value: "split('a', ',')[vars.n + 3]"}
flow: [ratio]
outputs:
  r: nodes.ratio.output
agents: {a: {}}
`
	dir := t.TempDir()
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, dir, src))
	r, err := runtime.Start(plan, runtime.Options{Settings: runtime.Settings{RunsDir: dir, Getenv: runtest.Env("http://127.0.0.1:1/v1", "")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), `node "ratio": value (`) {
		t.Fatalf("err = %v, want the failing value named", err)
	}
}
