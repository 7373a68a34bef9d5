package compute_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
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

// The property, for entries reading the entries before them: a compute
// node of random entries, each a number, a text or set.eJ + K for a random
// J (itself, an earlier or a later entry, or none), is accepted iff every
// entry reads only earlier entries holding numbers; refused, the error is
// at the read; accepted, the run gives every entry the value computed here.
func TestEntriesReadEarlierEntries(t *testing.T) {
	dir := t.TempDir()
	accepted, refused := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 77))
		n := 1 + r.IntN(5)
		var lines []string
		want := map[string]any{}
		ok := true
		var badCol, badLine int
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("e%d", i)
			var src string
			switch k := r.IntN(4); {
			case k == 0:
				v := r.IntN(10)
				src, want[name] = fmt.Sprint(v), v
			case k == 1:
				src, want[name] = `'"t"'`, "t"
			default:
				j := r.IntN(n+1) - 1 + r.IntN(2) // -1 .. n
				ref := fmt.Sprintf("e%d", j)
				src = "set." + ref + " + 2"
				prev, earlier := want[ref].(int)
				if j >= i || j < 0 || !earlier {
					if ok && (j >= i || j < 0) {
						badLine, badCol = 7+i, len("      "+name+": ")+len("set.")+1
					}
					ok = false
				} else {
					want[name] = prev + 2
				}
			}
			lines = append(lines, "      "+name+": "+src)
		}
		spec := "version: 1\nname: c\nagents: {a: {}}\nnodes:\n  c:\n    kind: compute\n    set:\n" + strings.Join(lines, "\n") +
			"\nflow: [c]\noutputs:\n  o: nodes.c.output\n"
		// (the entries start at line 8: the header's 7 lines, 1-based)
		path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", seed))
		if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		plan, diags := runtime.Load(path, nodes.Registry())
		if !diags.HasErrors() != ok {
			t.Fatalf("seed %d:\n%s\nwant accepted %v, got %v", seed, spec, ok, diags.Error())
		}
		if diags.HasErrors() {
			refused++
			if badLine > 0 && !strings.Contains(diags.Error(), fmt.Sprintf(":%d:%d:", badLine+1, badCol)) {
				t.Fatalf("seed %d:\n%s\nwant the error at line %d col %d, got %v", seed, spec, badLine+1, badCol, diags.Error())
			}
			continue
		}
		accepted++
		run, err := runtime.Start(plan, runtime.Options{Settings: runtime.Settings{RunsDir: dir, Getenv: runtest.Env("http://127.0.0.1:1/v1", "")}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := run.Execute(context.Background())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got := fmt.Sprint(res.Outputs["o"])
		if got != fmt.Sprint(want) {
			t.Fatalf("seed %d:\n%s\ngot %s, want %v", seed, spec, got, want)
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d: the generator misses a side", accepted, refused)
	}
}
